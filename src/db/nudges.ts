// Nudges between the nodes on one PostgreSQL database: a node that makes work for the loops (a subscription whose feed
// is due, events to send, a backfill to queue) tells the others with NOTIFY on one channel, and every node LISTENs on a
// connection of its own and wakes the loop named. The payload is the kind and the sender's node id, so a node skips its
// own. A nudge only wakes a loop early: one lost (the listener reconnecting, the server restarting) costs the wait
// until the loop's own next look, and a listener that reconnects wakes every loop once for what it may have missed.
import pg from 'pg';
import type { Logger } from '../log.ts';

/** The channel every node listens on. */
export const NUDGE_CHANNEL = 'feedsub_nudge';

export const NUDGE_KINDS = ['poll', 'deliver', 'backfill'] as const;
export type NudgeKind = (typeof NUDGE_KINDS)[number];

/** A node sends at most one nudge of a kind this often: the poller nudges the deliverer after every feed it stores,
 *  and the others need one wake per burst, not one per feed. */
export const NUDGE_SPACING_MS = 50;
/** The listener checks its connection this often (a connection cut without a word shows only when used). */
const LISTENER_PING_MS = 15_000;
/** Reconnecting waits this long at first, doubling up to RECONNECT_MAX_MS. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 10_000;
/** The listener's connection attempt and its LISTEN end within this long. */
const CONNECT_TIMEOUT_MS = 10_000;

export type Nudges = {
  /** Tells the other nodes (at most once per NUDGE_SPACING_MS per kind; never throws). */
  send(kind: NudgeKind): void;
  /** Stops listening and sending. */
  close(): Promise<void>;
};

/** Starts listening on `url` for the other nodes' nudges, each handed to `receive`; `notify` runs one NOTIFY statement
 *  (through the node's pool). Resolves once listening, or after the first failed attempt (which is retried). */
export async function startNudges(opts: {
  url: string;
  node: string;
  notify: (channel: string, payload: string) => Promise<unknown>;
  receive: (kind: NudgeKind) => void;
  logger: Logger;
}): Promise<Nudges> {
  const { logger } = opts;
  let closed = false;
  let client: pg.Client | undefined;
  let reconnect: NodeJS.Timeout | undefined;
  let ping: NodeJS.Timeout | undefined;
  let delay = RECONNECT_FIRST_MS;
  let failing: string | undefined;

  const drop = (c: pg.Client) => {
    if (client !== c) return;
    client = undefined;
    clearInterval(ping);
    c.removeAllListeners('notification');
    c.on('error', () => {}); // what a dropped connection says after this is of no interest
    void c.end().catch(() => {});
    if (!closed) reconnect = setTimeout(() => void listen(true), delay);
    delay = Math.min(RECONNECT_MAX_MS, delay * 2);
  };

  const listen = async (again: boolean): Promise<void> => {
    reconnect = undefined;
    const c = new pg.Client({
      connectionString: opts.url,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      application_name: 'feedsub (nudges)',
    });
    client = c;
    c.on('error', (err) => {
      note(err);
      drop(c);
    });
    c.on('end', () => drop(c));
    c.on('notification', (msg) => {
      const [kind, from] = (msg.payload ?? '').split(' ');
      if (from === opts.node || !isKind(kind)) return;
      opts.receive(kind);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${NUDGE_CHANNEL}`);
    } catch (err) {
      note(err);
      drop(c);
      return;
    }
    if (client !== c) return;
    if (failing !== undefined) logger.info('nudges: listening again', {});
    failing = undefined;
    delay = RECONNECT_FIRST_MS;
    ping = setInterval(() => void c.query('SELECT 1').catch(() => drop(c)), LISTENER_PING_MS);
    ping.unref();
    // Whatever the other nodes said while this one was not listening is lost: every loop looks once now.
    if (again) for (const kind of NUDGE_KINDS) opts.receive(kind);
  };

  const note = (err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    if (message !== failing && !closed)
      logger.warn('nudges: not listening; the loops wake on their own timers meanwhile', {
        error: message,
      });
    failing = message;
  };

  const lastSent = new Map<NudgeKind, number>();
  const queued = new Map<NudgeKind, NodeJS.Timeout>();
  const fire = (kind: NudgeKind) => {
    queued.delete(kind);
    lastSent.set(kind, performance.now());
    opts.notify(NUDGE_CHANNEL, `${kind} ${opts.node}`).catch((err: unknown) => {
      logger.debug('nudges: unable to send', {
        kind,
        error: err instanceof Error ? err.message : String(err),
      });
    });
  };

  await listen(false);
  return {
    send(kind) {
      if (closed || queued.has(kind)) return;
      const wait = (lastSent.get(kind) ?? -Infinity) + NUDGE_SPACING_MS - performance.now();
      if (wait <= 0) fire(kind);
      else
        queued.set(
          kind,
          setTimeout(() => fire(kind), wait),
        );
    },
    async close() {
      closed = true;
      clearTimeout(reconnect);
      clearInterval(ping);
      for (const timer of queued.values()) clearTimeout(timer);
      queued.clear();
      const c = client;
      client = undefined;
      if (c) {
        c.on('error', () => {});
        await c.end().catch(() => {});
      }
    },
  };
}

function isKind(kind: string | undefined): kind is NudgeKind {
  return (NUDGE_KINDS as readonly (string | undefined)[]).includes(kind);
}
