// The WebSub loop: sends each due (un)subscription request to its hub (WebSub §5.1) — a new subscription, a lease
// renewal, a retry, an unsubscription once the feed's last subscription goes — and records what the hub answered; it
// also notices a lease that lapsed. Requests run in a few slots, at most two per hub, each within a short deadline, so
// a slow hub holds only its own. The verification of intent (§5.3) and the content (§7) arrive at the callback
// (http/websub.ts).
import { randomBytes } from 'node:crypto';
import { request, type Dispatcher } from 'undici';
import { transaction, type Ctx } from '../../context.ts';
import {
  CALLBACK_TOKEN_BYTES,
  callbackUrl,
  hubHost,
  requestForm,
  retryDelaySeconds,
  verifyWaitSeconds,
} from '../../feed/websub.ts';
import type { Logger } from '../../log.ts';
import { getFeed } from '../../store/feeds.ts';
import { pollFeedBy } from '../../store/feeds-push.ts';
import { feedHasActiveSubscription } from '../../store/subscriptions.ts';
import {
  deleteWebSub,
  dueWebSubs,
  getWebSub,
  updateWebSub,
  type WebSubRow,
} from '../../store/websub-subscriptions.ts';

export type WebSubDeps = {
  agent: Dispatcher;
  userAgent: string;
  logger: Logger;
  /** Wakes the loop: a request ended, so a slot (and its hub's share) is free for the next due one. */
  wake?: () => void;
};
/** The requests to hubs in flight: a tick claims what the free slots can start and returns without awaiting them. */
export type WebSubRequests = {
  /** Starts the due requests that fit the slots; returns when to look again. */
  tick(): Promise<number>;
  /** Resolves once every request in flight has ended (each within HUB_TIMEOUT_MS). */
  settled(): Promise<void>;
  readonly inFlight: number;
};
type Action = { row: WebSubRow; mode: 'subscribe' | 'unsubscribe'; token: string };
type HubAnswer = { ok: true } | { ok: false; error: string };

/** Requests to hubs in flight at once, in all. */
export const HUB_SLOTS = 8;
/** Requests in flight at once to one hub (by host): a slow or hostile hub holds at most this many slots. */
export const PER_HUB = 2;
/** A hub answers a request within this, connection included: it only says accepted or why not (§5.1.2). */
export const HUB_TIMEOUT_MS = 10_000;
/** An unsubscription the hub did not confirm after this many tries is dropped: its lease ends on its own. */
const MAX_UNSUBSCRIBE_ATTEMPTS = 3;
/** How often the loop looks for due requests and lapsed leases; a poll that finds a hub makes one due at once. */
export const WEBSUB_TICK_MS = 1000;
/** Hub answers read at most: a hub's reply only says accepted or why not. */
const MAX_ANSWER_BYTES = 4096;

/** The WebSub requests of the daemon. Does nothing unless server.public_url is set (a hub could not reach us). */
export function createWebSubRequests(ctx: Ctx, deps: WebSubDeps): WebSubRequests {
  const running = new Map<string, Promise<void>>();
  const perHub = new Map<string, number>();
  const start = (a: Action) => {
    const hub = hubHost(a.row.hub_url);
    perHub.set(hub, (perHub.get(hub) ?? 0) + 1);
    const done = send(ctx, deps, a).finally(() => {
      running.delete(a.row.feed_id);
      const left = (perHub.get(hub) ?? 1) - 1;
      if (left === 0) perHub.delete(hub);
      else perHub.set(hub, left);
      deps.wake?.();
    });
    running.set(a.row.feed_id, done);
  };
  return {
    async tick() {
      if (ctx.config.server.public_url === '') return 60_000;
      const free = HUB_SLOTS - running.size;
      const claimed = await transaction(ctx, async (tx) => claimDue(tx, { free, running, perHub }));
      if (claimed.pushStopped) ctx.nudgePoller();
      for (const a of claimed.actions) start(a);
      return WEBSUB_TICK_MS;
    },
    async settled() {
      await Promise.all(running.values());
    },
    get inFlight() {
      return running.size;
    },
  };
}

/** Up to `free` due rows whose hub is under its cap, each decided and marked sent (pending, awaiting verification), so
 *  the hub's verification, which may come before its answer, finds the request pending; a lease found lapsed on the
 *  way stops push and makes its feed due now. */
async function claimDue(
  ctx: Ctx,
  room: {
    free: number;
    running: ReadonlyMap<string, unknown>;
    perHub: ReadonlyMap<string, number>;
  },
): Promise<{ actions: Action[]; pushStopped: boolean }> {
  const now = ctx.clock.now();
  const out: Action[] = [];
  const taken = new Map(room.perHub);
  let pushStopped = false;
  // A window wider than the free slots, so rows of a hub at its cap do not hide the others' due rows.
  for (const row of await dueWebSubs(ctx.db, now, HUB_SLOTS * 4)) {
    if (room.running.has(row.feed_id)) continue;
    if (
      row.status === 'active' &&
      row.lease_expires_at !== null &&
      row.lease_expires_at <= now.toISOString()
    ) {
      await lapse(ctx, row, now);
      pushStopped = true;
      continue;
    }
    if (out.length >= room.free) continue;
    const hub = hubHost(row.hub_url);
    if ((taken.get(hub) ?? 0) >= PER_HUB) continue;
    const decided = await decide(ctx, row, now);
    if (decided === undefined) continue;
    pushStopped ||= decided.pushStopped;
    taken.set(hub, (taken.get(hub) ?? 0) + 1);
    out.push(decided.action);
  }
  return { actions: out, pushStopped };
}

/** The lease ran out without a verified renewal: push has stopped, so the feed is polled now and on its normal
 *  schedule; subscribing again waits a retry delay (the hub accepted our renewals and did not verify them). */
async function lapse(ctx: Ctx, row: WebSubRow, now: Date): Promise<void> {
  const retry = new Date(now.getTime() + retryDelaySeconds(row.attempts) * 1000);
  await updateWebSub(
    ctx.db,
    row.feed_id,
    {
      status: 'expired',
      pending: null,
      previous_token: null,
      last_error: `websub: the lease ended at ${row.lease_expires_at} without a verified renewal`,
      next_action_at: retry.toISOString(),
    },
    now,
  );
  if ((await getFeed(ctx.db, row.feed_id)) !== undefined)
    await pollFeedBy(ctx.db, row.feed_id, now);
}

/** The request a due row needs now, recorded as sent; undefined when there is none (an unsubscription given up). A
 *  subscribe names a new callback (§5.1.1: changed when subscriptions are renewed); a renewal keeps taking pushes on
 *  the verified callback until the new one is verified. */
async function decide(
  ctx: Ctx,
  row: WebSubRow,
  now: Date,
): Promise<{ action: Action; pushStopped: boolean } | undefined> {
  const feed = await getFeed(ctx.db, row.feed_id);
  const wanted =
    feed !== undefined &&
    feed.hub_url === row.hub_url &&
    (await feedHasActiveSubscription(ctx.db, row.feed_id));
  if (!wanted && row.status === 'unsubscribing' && row.attempts >= MAX_UNSUBSCRIBE_ATTEMPTS) {
    await deleteWebSub(ctx.db, row.feed_id);
    return undefined;
  }
  const attempts = row.attempts + 1;
  const wait = new Date(now.getTime() + verifyWaitSeconds(attempts) * 1000).toISOString();
  if (!wanted) {
    // The hub knows the verified callback; a renewal's new one, not verified, is dropped (its verification gets 404).
    const token = row.previous_token ?? row.callback_token;
    await updateWebSub(
      ctx.db,
      row.feed_id,
      {
        pending: 'unsubscribe',
        status: 'unsubscribing',
        callback_token: token,
        previous_token: null,
        attempts,
        next_action_at: wait,
      },
      now,
    );
    if (feed !== undefined) await pollFeedBy(ctx.db, feed.id, now);
    return { action: { row, mode: 'unsubscribe', token }, pushStopped: feed !== undefined };
  }
  const renewal = row.status === 'active';
  const token = randomBytes(CALLBACK_TOKEN_BYTES).toString('base64url');
  await updateWebSub(
    ctx.db,
    row.feed_id,
    {
      pending: 'subscribe',
      // A renewal keeps its lease (and push) until the hub says otherwise.
      status: renewal ? 'active' : 'subscribing',
      callback_token: token,
      previous_token: renewal ? (row.previous_token ?? row.callback_token) : null,
      attempts,
      // A lease that ends before the hub verifies is noticed when it ends.
      next_action_at:
        renewal && row.lease_expires_at !== null && row.lease_expires_at < wait
          ? row.lease_expires_at
          : wait,
    },
    now,
  );
  return { action: { row, mode: 'subscribe', token }, pushStopped: false };
}

/** Sends one request and records a refusal or failure (an accepted one waits for the verification of intent). */
async function send(ctx: Ctx, deps: WebSubDeps, { row, mode, token }: Action): Promise<void> {
  const { server, poll } = ctx.config;
  const body = requestForm({
    mode,
    topic: row.topic_url,
    callback: callbackUrl(server.public_url, row.feed_id, token),
    secret: row.secret,
    leaseSeconds: poll.push_lease_seconds,
  });
  const answer = await postToHub(
    deps,
    row.hub_url,
    body,
    Math.min(HUB_TIMEOUT_MS, poll.timeout_seconds * 1000),
  );
  const fields = { feed_id: row.feed_id, hub: row.hub_url, mode };
  if (answer.ok) {
    deps.logger.info('websub: request accepted, awaiting verification', fields);
    return;
  }
  deps.logger.warn('websub: hub refused the request', { ...fields, error: answer.error });
  const stopped = await transaction(ctx, async (tx) =>
    recordFailure(tx, row.feed_id, mode, token, answer.error),
  );
  if (stopped) ctx.nudgePoller();
}

/** A refused or failed request: retried on a backoff; a failed subscribe (a renewal too) stops push, so the feed is
 *  polled now and at its normal schedule again. Returns whether push stopped. */
async function recordFailure(
  ctx: Ctx,
  feedId: string,
  mode: Action['mode'],
  token: string,
  error: string,
): Promise<boolean> {
  const now = ctx.clock.now();
  const row = await getWebSub(ctx.db, feedId);
  // Verified, replaced or deleted meanwhile.
  if (row === undefined || row.pending !== mode || row.callback_token !== token) return false;
  const retry = new Date(now.getTime() + retryDelaySeconds(row.attempts) * 1000);
  await updateWebSub(
    ctx.db,
    feedId,
    {
      status: mode === 'subscribe' ? 'failed' : 'unsubscribing',
      pending: null,
      previous_token: null,
      last_error: error.slice(0, 500),
      next_action_at: retry.toISOString(),
    },
    now,
  );
  if (mode !== 'subscribe' || (await getFeed(ctx.db, feedId)) === undefined) return false;
  await pollFeedBy(ctx.db, feedId, now);
  return true;
}

/** §5.1: a form-encoded POST to the hub; §5.1.2: 202 Accepted (any 2xx) means it will verify intent; anything else is
 *  a refusal. Within `timeoutMs` in all, through the guarded agent (private addresses refused unless allowed). */
async function postToHub(
  deps: WebSubDeps,
  hub: string,
  body: string,
  timeoutMs: number,
): Promise<HubAnswer> {
  const abort = new AbortController();
  const timer = setTimeout(
    () => abort.abort(new Error(`no answer within ${timeoutMs} ms`)),
    timeoutMs,
  );
  try {
    const res = await request(hub, {
      method: 'POST',
      dispatcher: deps.agent,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'user-agent': deps.userAgent,
      },
      body,
      signal: abort.signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const text = await readCapped(res.body);
    if (res.statusCode >= 200 && res.statusCode < 300) return { ok: true };
    return {
      ok: false,
      error: `websub: hub answered HTTP ${res.statusCode}${text ? `: ${text}` : ''}`,
    };
  } catch (err) {
    const reason = abort.signal.aborted ? (abort.signal.reason as Error) : (err as Error);
    return { ok: false, error: `websub: unable to reach the hub: ${reason.message}` };
  } finally {
    clearTimeout(timer);
  }
}

/** Reads up to MAX_ANSWER_BYTES of a hub's answer (the rest is discarded) and returns its first 200 characters as one
 *  line of text, for the error it is quoted in. */
async function readCapped(body: Dispatcher.ResponseData['body']): Promise<string> {
  let text = '';
  for await (const chunk of body) {
    text += Buffer.from(chunk as Uint8Array).toString('utf8');
    if (text.length >= MAX_ANSWER_BYTES) {
      body.destroy();
      break;
    }
  }
  return text.slice(0, 200).replace(/\s+/g, ' ').trim();
}
