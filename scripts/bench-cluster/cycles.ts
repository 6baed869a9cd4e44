// make bench-cluster, the cycles: every feed made due at once from the bench's own connection (the nodes woken by a
// nudge on their channel), timed until every feed is polled and recorded and every event it made is delivered, with
// what each node did (/metrics), the CPU of the nodes and of the server, the server's WAL and write transactions, and
// the origin's count of feeds fetched twice; and the failover: a node SIGKILLed while it holds events, timed until the
// others have done its work.
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import type { Sql } from '../../src/db/engine.ts';
import { NUDGE_CHANNEL } from '../../src/db/nudges.ts';
import { walBytes } from '../bench/postgres.ts';
import type { Store } from '../bench-scale/store.ts';
import {
  countsOf,
  cpuSeconds,
  killNode,
  postgresCpuSeconds,
  type Counts,
  type Node,
} from './nodes.ts';

/** A cycle that has not ended after this long fails the bench. */
const CYCLE_MAX_MS = 10 * 60_000;
/** How often the bench reads the database while it waits (each read is a little of the server's CPU). */
const READ_EVERY_MS = 100;

/** One node count's world as the cycles reach it. */
export type Cluster = {
  nodes: Node[];
  store: Store;
  databaseUrl: string;
  /** The origin's base URL (its receivers too). */
  origin: string;
  feeds: number;
  subsPerFeed: number;
};

/** What one cycle measured. */
export type Measured = {
  /** Made due → every feed polled and recorded. */
  pollMs: number;
  /** Made due → every event the cycle made delivered (equals pollMs when it made none). */
  doneMs: number;
  /** Events the cycle made (created since it began), and of them delivered. */
  events: number;
  delivered: number;
  /** Per node, what its counters rose by. */
  counts: Counts[];
  /** Per node, its CPU seconds over the cycle; the server's. */
  nodeCpu: number[];
  dbCpu: number;
  /** The server's WAL bytes over the cycle, from a CHECKPOINT just before, and its write transactions. */
  wal: number;
  writes: number;
  /** Feeds the origin served during the cycle, and how many of them it served more than once. */
  fetched: number;
  twice: number;
};

/** A POST to the origin's control routes; its answer's text. */
export async function control(origin: string, path: string): Promise<string> {
  const r = await request(`${origin}${path}`, { method: 'POST' });
  return r.body.text();
}

async function originCount(origin: string, path: string): Promise<number> {
  const r = await request(`${origin}${path}`);
  return Number(await r.body.text());
}

/** Webhook-ids the receivers saw, and how many of them more than once. */
export async function webhookIds(origin: string): Promise<{ ids: number; twice: number }> {
  const r = await request(`${origin}/_ids`);
  return (await r.body.json()) as { ids: number; twice: number };
}

/** Waits for `done` (read every READ_EVERY_MS) and returns when it came true; throws `what` after `ms`. */
async function until(done: () => Promise<boolean>, ms: number, what: string): Promise<number> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await done()) return performance.now();
    if (performance.now() > deadline)
      throw new Error(`bench-cluster: ${what} within ${(ms / 1000).toFixed(0)} s`);
    await new Promise((resolve) => setTimeout(resolve, READ_EVERY_MS));
  }
}

/** Every feed due now, and the nodes woken as a node that makes work wakes the others (the payload names no node, so
 *  every one acts on it). */
async function makeDue(sql: Sql, since: string): Promise<void> {
  await sql.run('UPDATE feeds SET next_poll_at = ?', [since]);
  await sql.value('SELECT pg_notify(?, ?)', [NUDGE_CHANNEL, 'poll bench']);
}

const unpolled = (sql: Sql, since: string) =>
  sql.value<number>(
    'SELECT count(*) FROM feeds WHERE last_polled_at IS NULL OR last_polled_at < ?',
    [since],
  );

/** Events created since `since`, and of them delivered. */
async function eventsSince(sql: Sql, since: string): Promise<{ all: number; delivered: number }> {
  const r = await sql.all<{ all: number; delivered: number }>(
    `SELECT count(*) AS all, count(*) FILTER (WHERE status = 'delivered') AS delivered
       FROM events WHERE created_at >= ?`,
    [since],
  );
  return { all: Number(r[0]!.all), delivered: Number(r[0]!.delivered) };
}

/** Transactions the server has assigned an id so far: those that wrote (a savepoint that wrote counts too). */
const xids = async (sql: Sql) =>
  Number(await sql.value<string>('SELECT pg_snapshot_xmax(pg_current_snapshot())::text'));

/** Makes every feed due at once and waits until every one is polled and recorded, and (with `events` > 0) until the
 *  cycle's `events` events are delivered. `during` runs once the feeds are due (the failover's kill). */
export async function measureCycle(
  c: Cluster,
  events: number,
  during?: (since: string) => Promise<void>,
): Promise<Measured> {
  await control(c.origin, '/_mark');
  let m: Omit<Measured, 'wal'> | undefined;
  const wal = await c.store.look((sql) =>
    walBytes(sql, async () => {
      const before = {
        counts: await Promise.all(c.nodes.map(countsOf)),
        cpu: c.nodes.map((n) => cpuSeconds(n.process.pid)),
        db: postgresCpuSeconds(c.databaseUrl),
        writes: await xids(sql),
      };
      const since = new Date().toISOString();
      await makeDue(sql, since);
      const t = performance.now();
      await during?.(since);
      const polled = await until(
        async () => (await unpolled(sql, since)) === 0,
        CYCLE_MAX_MS,
        'not every feed was polled',
      );
      const done =
        events === 0
          ? polled
          : await until(
              async () => (await eventsSince(sql, since)).delivered >= events,
              CYCLE_MAX_MS,
              `not every one of ${events} events was delivered`,
            );
      const after = await Promise.all(c.nodes.map((n) => countsOf(n).catch(() => undefined)));
      const made = await eventsSince(sql, since);
      m = {
        pollMs: polled - t,
        doneMs: done - t,
        events: made.all,
        delivered: made.delivered,
        // A killed node's counters are gone with it: it counts as having done nothing in this cycle.
        counts: before.counts.map((b, i) => ({
          polls: (after[i]?.polls ?? b.polls) - b.polls,
          attempts: (after[i]?.attempts ?? b.attempts) - b.attempts,
        })),
        nodeCpu: c.nodes.map((n, i) => Math.max(0, cpuSeconds(n.process.pid) - before.cpu[i]!)),
        dbCpu: postgresCpuSeconds(c.databaseUrl) - before.db,
        writes: (await xids(sql)) - before.writes,
        fetched: await originCount(c.origin, '/_fetched'),
        twice: await originCount(c.origin, '/_twice'),
      };
    }),
  );
  return { ...m!, wal };
}

/** What the failover measured: the work the killed node held, how long the others took to finish it, and the cycle. */
export type Failover = {
  heldEvents: number;
  heldFeeds: number;
  /** Kill → every event it held delivered and every feed it held polled by another node. */
  takeoverMs: number;
  /** Events the receivers saw twice since the kill (the attempts in flight at the kill, sent again). */
  resent: number;
  cycle: Measured;
};

/** A changed cycle of `share` of the feeds with receivers answering `slowMs` late, so each node holds events in
 *  flight; `victim` is SIGKILLed once it holds at least one, and the cycle runs on until every event is delivered. */
export async function failover(
  c: Cluster,
  victim: Node,
  share: number,
  slowMs: number,
): Promise<Failover> {
  await control(c.origin, `/_slow?ms=${slowMs}`);
  try {
    const round = await control(c.origin, `/_round?change=${share}&add=1`);
    const { changed } = JSON.parse(round) as { changed: number };
    let held = { events: [] as string[], feeds: [] as string[] };
    let kill = { at: 0, iso: '', seenTwice: 0 };
    let takeover: Promise<number> | undefined;
    const cycle = await measureCycle(c, changed * c.subsPerFeed, async () => {
      await c.store.look((sql) =>
        until(
          async () =>
            ((await sql.value<number>(
              `SELECT count(*) FROM events WHERE lease_node = ? AND lease_until IS NOT NULL
                 AND status IN ('pending', 'failed')`,
              [victim.id],
            ))! as number) > 0,
          120_000,
          `${victim.name} held no event`,
        ),
      );
      kill = { at: 0, iso: new Date().toISOString(), seenTwice: 0 };
      await killNode(victim);
      kill.at = performance.now();
      kill.seenTwice = (await webhookIds(c.origin)).twice;
      held = await c.store.look(async (sql) => ({
        events: await sql.column<string>(
          `SELECT id FROM events WHERE lease_node = ? AND lease_until IS NOT NULL
             AND status IN ('pending', 'failed')`,
          [victim.id],
        ),
        feeds: await sql.column<string>('SELECT feed_id FROM feed_leases WHERE node_id = ?', [
          victim.id,
        ]),
      }));
      takeover = c.store.look((sql) =>
        until(
          async () => {
            const left = await sql.value<number>(
              `SELECT (SELECT count(*) FROM events WHERE id = ANY(?) AND status <> 'delivered')
                    + (SELECT count(*) FROM feeds WHERE id = ANY(?) AND (last_polled_at IS NULL OR last_polled_at < ?))`,
              [held.events, held.feeds, kill.iso],
            );
            return Number(left) === 0;
          },
          CYCLE_MAX_MS,
          `the work ${victim.name} held was not taken over`,
        ),
      );
    });
    const takenAt = await takeover!;
    return {
      heldEvents: held.events.length,
      heldFeeds: held.feeds.length,
      takeoverMs: takenAt - kill.at,
      resent: (await webhookIds(c.origin)).twice - kill.seenTwice,
      cycle,
    };
  } finally {
    await control(c.origin, '/_slow?ms=0');
  }
}
