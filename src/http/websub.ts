// The WebSub callback, outside /v1 (a hub has no API key): GET answers a verification of intent or a denial (WebSub
// §5.2, §5.3), POST takes a content distribution (§7) whose X-Hub-Signature (§8) is right into the poll flow.
import { Hono, type Context } from 'hono';
import type { Ctx } from '../context.ts';
import { answerHub, callbackSubscription } from '../actions/websub.ts';
import { checkSignature } from '../feed/websub.ts';
import type { Logger } from '../log.ts';
import { TokenBuckets } from './ratelimit.ts';

/** Content deliveries one feed may make: a burst of 10, then one a second (a hub sends one per publication). */
const PUSH_BUCKET = { capacity: 10, refillMs: 1000, maxKeys: 10_000 };
/** A hub's body must arrive within this; a hub dripping bytes is cut off. */
const BODY_TIMEOUT_MS = 30_000;

/** The callback sub-app, mounted at /websub: `/:feed/:token`. Unknown feed, wrong token, a request we did not ask for:
 *  404, the same for all. */
export function webSubApp(ctx: Ctx, logger: Logger): Hono {
  const buckets = new TokenBuckets(PUSH_BUCKET);
  return new Hono()
    .get('/:feed/:token', (c) => {
      const q = (name: string) => c.req.query(name);
      const answer = answerHub(ctx, c.req.param('feed'), c.req.param('token'), {
        mode: q('hub.mode'),
        topic: q('hub.topic'),
        challenge: q('hub.challenge'),
        leaseSeconds: q('hub.lease_seconds'),
        reason: q('hub.reason'),
      });
      if (answer === undefined) return c.text('Not Found', 404);
      logger.info('websub: hub request answered', {
        feed_id: c.req.param('feed'),
        mode: q('hub.mode'),
      });
      // §5.3.1: the body is exactly the challenge.
      return c.body(answer, 200, { 'content-type': 'text/plain' });
    })
    .post('/:feed/:token', (c) => receive(ctx, logger, buckets, c));
}

/** A content distribution (§7): 404 unless the callback is ours; 429 past the feed's rate; 413 past
 *  poll.max_body_bytes. A missing or wrong signature is answered 2xx like a right one (§8: the subscriber MUST ignore
 *  the content, and may acknowledge it so a forger learns nothing); a signed body is stored before the answer. */
async function receive(
  ctx: Ctx,
  logger: Logger,
  buckets: TokenBuckets,
  c: Context,
): Promise<Response> {
  const feedId = c.req.param('feed') ?? '';
  const row = callbackSubscription(ctx, feedId, c.req.param('token') ?? '');
  if (row === undefined) return c.text('Not Found', 404);
  const wait = buckets.take(feedId, ctx.clock.now());
  if (wait > 0) return c.text('Too Many Requests', 429, { 'retry-after': String(wait) });
  const body = await readCapped(c.req.raw, ctx.config.poll.max_body_bytes);
  if (body === undefined) return c.text('Payload Too Large', 413);
  const signature = checkSignature(c.req.header('x-hub-signature'), body, row.secret);
  if (signature !== 'valid') {
    logger.warn('websub: content ignored, signature not valid', { feed_id: feedId, signature });
    return c.body(null, 202);
  }
  const push = ctx.receivePush;
  if (push === undefined) return c.body(null, 202);
  await push({ feedId, body, contentType: c.req.header('content-type') ?? null });
  return c.body(null, 202);
}

/** The request body, or undefined past `max` bytes (Content-Length checked first, then counted as it arrives); a body
 *  still arriving after BODY_TIMEOUT_MS is cut off. */
async function readCapped(req: Request, max: number): Promise<Uint8Array | undefined> {
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > max) return undefined;
  if (req.body === null) return new Uint8Array(0);
  const reader = req.body.getReader();
  const timer = setTimeout(() => void reader.cancel(), BODY_TIMEOUT_MS);
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      size += r.value.byteLength;
      if (size > max) {
        await reader.cancel();
        return undefined;
      }
      chunks.push(r.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks);
}
