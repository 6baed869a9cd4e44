// The raw limits feedsub is compared against: undici conditional GETs, feedsmith parsing, and signed POSTs.
import { performance } from 'node:perf_hooks';
import { parseAtomFeed, parseRssFeed } from 'feedsmith';
import { Agent, request } from 'undici';
import { webhookHeaders } from '../../src/webhook/sign.ts';
import type { DeliveryTrials } from './delivery.ts';
import { CONCURRENCY, FEEDS, TRIALS } from './settings.ts';
import { listRates, median } from './table.ts';
import type { Row } from './table.ts';

/** The raw rates per second, for the ratio rows. */
export type RawRates = { conditionalGet: number; parse: number; post: number };

/** Times raw GETs and parsing of the origin's feeds, and sets the raw POST trials beside the deliverer's. */
export async function measureRawLimits(
  base: string,
  row: Row,
  trials: DeliveryTrials,
): Promise<RawRates> {
  const bodies = await rawGets(base);
  row(
    'raw: undici conditional GET rate',
    `${bodies.perSecond.toFixed(0)}/s`,
    `same origin, concurrency ${CONCURRENCY}, answered 304`,
  );
  const tp = performance.now();
  for (const [i, b] of bodies.bodies.entries()) (i % 2 === 0 ? parseRssFeed : parseAtomFeed)(b);
  const parse = bodies.bodies.length / ((performance.now() - tp) / 1000);
  row(
    'raw: feedsmith parse rate',
    `${parse.toFixed(0)}/s`,
    'same bodies, one thread, no normalization',
  );
  const post = median(trials.rawRates);
  row(
    'raw: signed POST rate',
    `${post.toFixed(0)}/s`,
    `median of ${TRIALS} trials, each just before a delivery trial, of its ${trials.per} event bodies (${listRates(trials.rawRates)}): same receiver, signed, concurrency 32, undici`,
  );
  return { conditionalGet: bodies.perSecond, parse, post };
}

/** POSTs each body signed through `agent`, 32 at a time; returns the rate. */
export async function rawPosts(base: string, agent: Agent, bodies: string[]): Promise<number> {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < bodies.length) {
        const i = next++;
        const body = bodies[i]!;
        const r = await request(`${base}/hook`, {
          method: 'POST',
          dispatcher: agent,
          body,
          headers: webhookHeaders([secret], `msg_${i}`, Math.floor(Date.now() / 1000), body),
        });
        await r.body.dump();
      }
    }),
  );
  return bodies.length / ((performance.now() - t) / 1000);
}

// Fetches every feed once for its body and ETag (untimed), then times conditional GETs of them all, answered 304.
async function rawGets(base: string): Promise<{ perSecond: number; bodies: string[] }> {
  const agent = new Agent({ connections: CONCURRENCY });
  const bodies: string[] = [];
  const etags: string[] = [];
  for (let i = 0; i < FEEDS; i++) {
    const r = await request(`${base}/feeds/${i}.xml`, { dispatcher: agent });
    etags.push(String(r.headers.etag));
    bodies.push(await r.body.text());
  }
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < FEEDS) {
        const i = next++;
        const r = await request(`${base}/feeds/${i}.xml`, {
          dispatcher: agent,
          headers: { 'if-none-match': etags[i]! },
        });
        await r.body.dump();
      }
    }),
  );
  const ms = performance.now() - t;
  await agent.close();
  return { perSecond: FEEDS / (ms / 1000), bodies };
}
