// The WebSub callback, outside /v1 (a hub has no API key): GET answers a verification of intent or a denial (WebSub
// §5.2, §5.3), POST takes a content distribution (§7) whose X-Hub-Signature (§7.1) is right into the entry path a poll
// takes too (actions/ingest/push.ts). Pushes are read in a bounded number of slots (a few per hub), each body capped
// and within a deadline of its own, and the signature is checked as the body streams in.
import { Hono, type Context } from 'hono';
import type { Ctx } from '../context.ts';
import { answerHub, pollPushedFeed, pushTarget } from '../actions/websub.ts';
import { receivePush, type PushDeps } from '../actions/ingest/push.ts';
import { hubHost, signatureVerifier, type SignatureVerifier } from '../feed/websub.ts';
import type { Logger } from '../log.ts';
import { TokenBuckets } from './ratelimit.ts';

/** Content deliveries one feed may make: a burst of 10, then one a second (a hub sends one per publication). */
const PUSH_BUCKET = { capacity: 10, refillMs: 1000, maxKeys: 10_000 };
/** Pushes read at the same time for the feeds of one hub (by the host of the hub we subscribed at). */
export const PUSHES_PER_HUB = 4;
/** Retry-After of a push refused because every slot is taken. */
const BUSY_RETRY_SECONDS = 5;
/** The challenge echo is text for the hub and nothing a browser may render or sniff (§5.3.1: the body is exactly the
 *  challenge). */
const ECHO_HEADERS = {
  'content-type': 'text/plain; charset=utf-8',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'",
};

/** What became of a push's body. */
type Read =
  | { kind: 'body'; body: Uint8Array }
  | { kind: 'too_large' }
  | { kind: 'timeout' }
  | { kind: 'invalid' };

/** The callback sub-app, mounted at /websub: `/:feed/:token`. A GET for anything we did not ask for is a 404, the same
 *  for all; a POST to any callback that is not a verified, live subscription is a 410 Gone, the same for all. */
export function webSubApp(ctx: Ctx, logger: Logger, push: PushDeps): Hono {
  const buckets = new TokenBuckets(PUSH_BUCKET);
  const slots = new PushSlots(ctx.config.poll.pushes_in_flight, PUSHES_PER_HUB);
  return new Hono()
    .get('/:feed/:token', async (c) => {
      const q = (name: string) => c.req.query(name);
      const answer = await answerHub(ctx, c.req.param('feed'), c.req.param('token'), {
        mode: q('hub.mode'),
        topic: q('hub.topic'),
        challenge: q('hub.challenge'),
        leaseSeconds: q('hub.lease_seconds'),
        reason: q('hub.reason'),
      });
      if (answer === undefined) return c.text('Not Found', 404, ECHO_HEADERS);
      logger.info('websub: hub request answered', {
        feed_id: c.req.param('feed'),
        mode: q('hub.mode'),
      });
      return c.body(answer, 200, ECHO_HEADERS);
    })
    .post('/:feed/:token', (c) => receive(ctx, logger, { buckets, slots, push }, c));
}

/** A content distribution (§7): 410 unless the callback is a verified, live subscription (the hub may end it); 429
 *  past the feed's rate; 503 while every slot (or the hub's share) is taken. A subscription without a secret (a
 *  plain-http hub) cannot sign, so its push is taken only as a sign of change and the feed is polled; so is a signed
 *  push past poll.push_max_body_bytes (413, unread past the cap) or poll.push_timeout_seconds (408). A missing or
 *  wrong signature is answered 2xx like a right one (§7.1.2: the subscriber MUST ignore the content, and may
 *  acknowledge it so a forger learns nothing), and nothing of it is kept. A signed body is stored before the answer. */
async function receive(
  ctx: Ctx,
  logger: Logger,
  limits: { buckets: TokenBuckets; slots: PushSlots; push: PushDeps },
  c: Context,
): Promise<Response> {
  const feedId = c.req.param('feed') ?? '';
  const row = await pushTarget(ctx, feedId, c.req.param('token') ?? '');
  if (row === undefined) return c.text('Gone', 410);
  const wait = limits.buckets.take(feedId, ctx.clock.now());
  if (wait > 0) return c.text('Too Many Requests', 429, { 'retry-after': String(wait) });
  const hub = hubHost(row.hub_url);
  if (!limits.slots.take(hub))
    return c.text('Service Unavailable', 503, { 'retry-after': String(BUSY_RETRY_SECONDS) });
  try {
    const fields = { feed_id: feedId, hub: row.hub_url };
    if (row.secret === null) {
      logger.info('websub: unsigned push from a hub without a secret, polling the feed', fields);
      await pollPushedFeed(ctx, feedId);
      return c.body(null, 202);
    }
    const verifier = signatureVerifier(c.req.header('x-hub-signature'), row.secret);
    if (verifier === 'missing' || verifier === 'invalid') {
      logger.warn('websub: content ignored, signature not valid', {
        ...fields,
        signature: verifier,
      });
      return c.body(null, 202);
    }
    const { poll } = ctx.config;
    const read = await readSigned(c.req.raw, verifier, {
      maxBytes: poll.push_max_body_bytes,
      deadline: performance.now() + poll.push_timeout_seconds * 1000,
    });
    if (read.kind === 'invalid') {
      logger.warn('websub: content ignored, signature not valid', {
        ...fields,
        signature: 'invalid',
      });
      return c.body(null, 202);
    }
    if (read.kind !== 'body') {
      logger.info('websub: push not read whole, polling the feed', {
        ...fields,
        reason: read.kind,
      });
      await pollPushedFeed(ctx, feedId);
      return read.kind === 'timeout'
        ? c.text('Request Timeout', 408)
        : c.text('Payload Too Large', 413);
    }
    await receivePush(ctx, limits.push, {
      feedId,
      body: read.body,
      contentType: c.req.header('content-type') ?? null,
    });
    return c.body(null, 202);
  } finally {
    limits.slots.give(hub);
  }
}

/** The body of a signed push, its signature checked chunk by chunk: 'invalid' as soon as the whole body proves the
 *  signature wrong (the chunks are dropped), 'too_large' past `maxBytes` (Content-Length first, then counted), 'timeout'
 *  when it is still arriving at `deadline` (performance.now() time). */
async function readSigned(
  req: Request,
  verifier: SignatureVerifier,
  limit: { maxBytes: number; deadline: number },
): Promise<Read> {
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit.maxBytes) return { kind: 'too_large' };
  if (req.body === null)
    return verifier.valid() ? { kind: 'body', body: new Uint8Array(0) } : { kind: 'invalid' };
  const reader = req.body.getReader();
  let late = false;
  const timer = setTimeout(
    () => {
      late = true;
      void reader.cancel().catch(() => undefined);
    },
    Math.max(0, limit.deadline - performance.now()),
  );
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const r = await reader.read().catch(() => ({ done: true, value: undefined }) as const);
      if (late) return { kind: 'timeout' };
      if (r.done) break;
      size += r.value.byteLength;
      if (size > limit.maxBytes) {
        await reader.cancel().catch(() => undefined);
        return { kind: 'too_large' };
      }
      verifier.update(r.value);
      chunks.push(r.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return verifier.valid() ? { kind: 'body', body: Buffer.concat(chunks) } : { kind: 'invalid' };
}

/** Slots for pushes being read: `total` in all, `perHub` for the feeds of one hub, so one hub's pushes (or a hostile
 *  one's) never take every slot. */
class PushSlots {
  readonly #total: number;
  readonly #perHub: number;
  #busy = 0;
  readonly #byHub = new Map<string, number>();

  constructor(total: number, perHub: number) {
    this.#total = total;
    this.#perHub = perHub;
  }

  /** Takes a slot for `hub`; false when every slot, or the hub's share, is taken. */
  take(hub: string): boolean {
    const held = this.#byHub.get(hub) ?? 0;
    if (this.#busy >= this.#total || held >= this.#perHub) return false;
    this.#busy++;
    this.#byHub.set(hub, held + 1);
    return true;
  }

  /** Gives back a slot `take(hub)` took. */
  give(hub: string): void {
    this.#busy--;
    const held = (this.#byHub.get(hub) ?? 1) - 1;
    if (held === 0) this.#byHub.delete(hub);
    else this.#byHub.set(hub, held);
  }
}
