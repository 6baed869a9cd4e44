// The WebSub loop: sends each due (un)subscription request to its hub (WebSub §5.1) — a new subscription, a lease
// renewal, a retry, an unsubscription once the feed's last subscription goes — and records what the hub answered.
// The verification of intent (§5.3) and the content (§7) arrive at the callback (http/websub.ts).
import { request, type Dispatcher } from 'undici';
import type { Ctx } from '../context.ts';
import { callbackToken, callbackUrl, requestForm, retryDelaySeconds } from '../feed/websub.ts';
import type { Logger } from '../log.ts';
import { getFeed } from '../store/feeds.ts';
import { pollFeedBy } from '../store/feeds-push.ts';
import { feedHasActiveSubscription } from '../store/subscriptions.ts';
import {
  deleteWebSub,
  dueWebSubs,
  getWebSub,
  updateWebSub,
  type WebSubRow,
} from '../store/websub-subscriptions.ts';

export type WebSubDeps = { agent: Dispatcher; userAgent: string; logger: Logger };
type Action = { row: WebSubRow; mode: 'subscribe' | 'unsubscribe' };
type HubAnswer = { ok: true } | { ok: false; error: string };

/** Requests sent per tick at most (each within poll.timeout_seconds); the rest wait for the next tick. */
const BATCH = 16;
/** A hub that accepted a request has this long to verify it (§5.3) before the request is sent again. */
const VERIFY_WAIT_MS = 10 * 60_000;
/** An unsubscription the hub did not confirm after this many tries is dropped: its lease ends on its own. */
const MAX_UNSUBSCRIBE_ATTEMPTS = 3;
/** How often the loop looks for due requests; a poll that finds a hub makes one due at once. */
export const WEBSUB_TICK_MS = 1000;
/** Hub answers read at most: a hub's reply only says accepted or why not. */
const MAX_ANSWER_BYTES = 4096;

/** One tick: every due subscription (up to BATCH) gets its request, concurrently; returns when to look again. Does
 *  nothing unless server.public_url is set (a hub could not reach us). */
export async function webSubTick(ctx: Ctx, deps: WebSubDeps): Promise<number> {
  if (ctx.config.server.public_url === '') return 60_000;
  const actions = ctx.db.transaction(() => claimDue(ctx)).immediate();
  await Promise.all(actions.map((a) => send(ctx, deps, a)));
  return actions.length === BATCH ? 0 : WEBSUB_TICK_MS;
}

/** Decides each due row's request and marks it sent (pending, awaiting verification until VERIFY_WAIT_MS), so the
 *  hub's verification, which may come before its answer, finds the request pending. */
function claimDue(ctx: Ctx): Action[] {
  const now = ctx.clock.now();
  const out: Action[] = [];
  for (const row of dueWebSubs(ctx.db, now, BATCH)) {
    const feed = getFeed(ctx.db, row.feed_id);
    const wanted =
      feed !== undefined &&
      feed.hub_url === row.hub_url &&
      feedHasActiveSubscription(ctx.db, row.feed_id);
    if (!wanted && row.status === 'unsubscribing' && row.attempts >= MAX_UNSUBSCRIBE_ATTEMPTS) {
      deleteWebSub(ctx.db, row.feed_id);
      continue;
    }
    const mode = wanted ? 'subscribe' : 'unsubscribe';
    updateWebSub(
      ctx.db,
      row.feed_id,
      {
        pending: mode,
        // A renewal keeps its lease (and push) until the hub says otherwise; an unsubscription stops push now.
        status: wanted ? (row.status === 'active' ? 'active' : 'subscribing') : 'unsubscribing',
        attempts: row.attempts + 1,
        next_action_at: new Date(now.getTime() + VERIFY_WAIT_MS).toISOString(),
      },
      now,
    );
    if (!wanted && feed !== undefined) pollFeedBy(ctx.db, feed.id, now);
    out.push({ row, mode });
  }
  return out;
}

/** Sends one request and records a refusal or failure (an accepted one waits for the verification of intent). */
async function send(ctx: Ctx, deps: WebSubDeps, { row, mode }: Action): Promise<void> {
  const { server, poll } = ctx.config;
  const callback = callbackUrl(
    server.public_url,
    row.feed_id,
    callbackToken(row.secret, row.feed_id),
  );
  const body = requestForm({
    mode,
    topic: row.topic_url,
    callback,
    secret: row.secret,
    leaseSeconds: poll.push_lease_seconds,
  });
  const answer = await postToHub(deps, row.hub_url, body, poll.timeout_seconds * 1000);
  const fields = { feed_id: row.feed_id, hub: row.hub_url, mode };
  if (answer.ok) {
    deps.logger.info('websub: request accepted, awaiting verification', fields);
    return;
  }
  deps.logger.warn('websub: hub refused the request', { ...fields, error: answer.error });
  ctx.db.transaction(() => recordFailure(ctx, row.feed_id, mode, answer.error)).immediate();
}

/** A refused or failed request: retried on a backoff; a failed subscribe stops push, so the feed is polled at its
 *  normal schedule again from now on. */
function recordFailure(ctx: Ctx, feedId: string, mode: Action['mode'], error: string): void {
  const now = ctx.clock.now();
  const row = getWebSub(ctx.db, feedId);
  if (row === undefined || row.pending !== mode) return; // verified, replaced or deleted meanwhile
  const retry = new Date(now.getTime() + retryDelaySeconds(row.attempts) * 1000);
  updateWebSub(
    ctx.db,
    feedId,
    {
      status: mode === 'subscribe' ? 'failed' : 'unsubscribing',
      pending: null,
      last_error: error.slice(0, 500),
      next_action_at: retry.toISOString(),
    },
    now,
  );
  if (mode === 'subscribe') pollFeedBy(ctx.db, feedId, now);
}

/** §5.1: a form-encoded POST to the hub; §5.1.2: 202 Accepted (any 2xx) means it will verify intent; anything else is
 *  a refusal. Within `timeoutMs` in all, through the guarded agent (private addresses refused unless allowed). */
async function postToHub(
  deps: WebSubDeps,
  hub: string,
  body: string,
  timeoutMs: number,
): Promise<HubAnswer> {
  try {
    const res = await request(hub, {
      method: 'POST',
      dispatcher: deps.agent,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'user-agent': deps.userAgent,
      },
      body,
      signal: AbortSignal.timeout(timeoutMs),
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
    return { ok: false, error: `websub: unable to reach the hub: ${(err as Error).message}` };
  }
}

/** Up to MAX_ANSWER_BYTES of a hub's answer as one line of text; the rest is discarded. */
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
