// The raw limits feedsub is compared against: undici conditional GETs, feedsmith parsing, and signed POSTs.
import { performance } from 'node:perf_hooks';
import { parseAtomFeed, parseRssFeed } from 'feedsmith';
import { Agent, request } from 'undici';
import { webhookHeaders } from '../../src/webhook/sign.ts';
import type { DeliveryTrials } from './delivery.ts';
import { CONCURRENCY, FEEDS, TRIALS } from './settings.ts';
import { listRates, median } from './table.ts';
import type { Row } from './table.ts';

/** Sets the raw POST trials beside the deliverer's (they ran in turns); the GET and parse limits are timed beside
 *  their poll paths (polls.ts), since the machine's speed drifts over the minutes between. */
export function reportRawPosts(row: Row, trials: DeliveryTrials): void {
  const post = median(trials.rawRates);
  row(
    'raw: signed POST rate',
    `${post.toFixed(0)}/s`,
    `median of ${TRIALS} trials, each just before a delivery trial, of its ${trials.per} event bodies (${listRates(trials.rawRates)}): same receiver, signed, concurrency 32, undici`,
  );
  row('delivery vs raw POST', ratio(median(trials.deliveryRates), post), 'target ≥ 50 %');
}

/** `value` as a percentage of `limit`. */
export const ratio = (value: number, limit: number) => `${((value / limit) * 100).toFixed(0)} %`;

/** Every feed's current body and ETag, fetched once (untimed). */
export async function fetchBodies(base: string): Promise<{ bodies: string[]; etags: string[] }> {
  const agent = new Agent({ connections: CONCURRENCY });
  const bodies: string[] = [];
  const etags: string[] = [];
  for (let i = 0; i < FEEDS; i++) {
    const r = await request(`${base}/feeds/${i}.xml`, { dispatcher: agent });
    etags.push(String(r.headers.etag));
    bodies.push(await r.body.text());
  }
  await agent.close();
  return { bodies, etags };
}

/** Times conditional GETs of every feed with its ETag (answered 304), CONCURRENCY at a time; returns the rate. */
export async function rawConditionalGets(base: string, etags: string[]): Promise<number> {
  const agent = new Agent({ connections: CONCURRENCY });
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < etags.length) {
        const i = next++;
        const r = await request(`${base}/feeds/${i}.xml`, {
          dispatcher: agent,
          headers: { 'if-none-match': etags[i]! },
        });
        await r.body.dump();
      }
    }),
  );
  const perSecond = etags.length / ((performance.now() - t) / 1000);
  await agent.close();
  return perSecond;
}

/** Times feedsmith parsing every body in this thread (even ones RSS, odd ones Atom); returns the rate. */
export function rawParse(bodies: string[]): number {
  const t = performance.now();
  for (const [i, b] of bodies.entries()) (i % 2 === 0 ? parseRssFeed : parseAtomFeed)(b);
  return bodies.length / ((performance.now() - t) / 1000);
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
