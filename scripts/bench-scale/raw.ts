// make bench-scale, the raw limit: undici conditional GETs of every feed of the same origin, answered 304, at the
// poller's concurrency — what a 304 cycle of feedsub is compared against.
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';

/** Fetches each feed once for its ETag (untimed), then times one conditional GET of each; returns GETs per second. */
export async function rawConditionalGets(
  base: string,
  feeds: number,
  concurrency: number,
): Promise<number> {
  const agent = new Agent({ connections: concurrency });
  const etags = new Array<string>(feeds);
  const each = async (get: (i: number) => Promise<void>) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < feeds) await get(next++);
      }),
    );
  };
  try {
    await each(async (i) => {
      const r = await request(`${base}/feeds/${i}.xml`, { dispatcher: agent });
      etags[i] = String(r.headers.etag);
      await r.body.dump();
    });
    const t = performance.now();
    await each(async (i) => {
      const r = await request(`${base}/feeds/${i}.xml`, {
        dispatcher: agent,
        headers: { 'if-none-match': etags[i]! },
      });
      await r.body.dump();
      if (r.statusCode !== 304) throw new Error(`bench-scale: raw GET answered ${r.statusCode}`);
    });
    return feeds / ((performance.now() - t) / 1000);
  } finally {
    await agent.close();
  }
}
