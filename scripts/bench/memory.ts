// make bench, the memory rows: the peak RSS of the real `feedsub serve` with 1,000 feeds and 1,000 subscriptions made
// through its API, every feed polled and an event per feed delivered; then how far its RSS rises while it reads one
// feed whose body is 10 MiB of random bytes.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { startServe, type Serve, type Tenant } from './daemon.ts';
import { FEEDS } from './settings.ts';
import type { Row } from './table.ts';

const INTERVAL_S = 20; // long enough that every feed's baseline is read before its second poll
const WAIT_MS = 180_000; // the most each step may take before the bench gives up

/** Both rows, against the bench origin at `base` (its feeds, its /hook receiver and its /garbage.xml); `executable`:
 *  a built feedsub instead of the sources under tsx. */
export async function measureServeMemory(
  base: string,
  dir: string,
  row: Row,
  executable?: string,
): Promise<void> {
  const how = executable ? 'built executable' : 'node --import tsx src/main.ts';
  const serve = await startServe(
    join(dir, 'memory'),
    {
      network: { allow_private: true },
      poll: {
        interval_seconds: INTERVAL_S,
        min_interval_seconds: INTERVAL_S,
        max_interval_seconds: INTERVAL_S,
        per_host_concurrency: 16, // the bench origin is one host standing in for many, as in the rows above
      },
      quotas: { api_requests_per_second: 0, new_feed_urls_per_hour: 0 },
    },
    ['memory'],
    executable,
  );
  try {
    const steps = await buildAndDeliver(serve, base);
    row(
      `serve peak RSS, ${FEEDS.toLocaleString('en')} feeds and subscriptions (${executable ? 'built' : 'tsx'})`,
      mib(serve.memory().peakMiB),
      `target ≤ 150 MiB; ${how} serve, VmHWM; RSS ${steps}`,
    );
    await readGarbage(serve, base, row, executable ? 'built' : 'tsx');
  } finally {
    await serve.stop();
  }
}

// The world through the API, every feed's baseline, then one new entry in every feed, delivered; RSS after each step.
async function buildAndDeliver(serve: Serve, base: string): Promise<string> {
  const t = serve.tenants.memory!;
  await sleep(3000); // the worker threads started and loaded
  const steps = [`${mib(serve.memory().rssMiB)} idle at start`];
  await control(base, 'POST', '/_mark');
  const endpoint = await created(t, '/v1/endpoints', { title: 'bench', url: `${base}/hook` });
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < FEEDS) {
        const i = next++;
        await created(t, '/v1/subscriptions', { endpoint, url: `${base}/feeds/${i}.xml` });
      }
    }),
  );
  steps.push(`${mib(serve.memory().rssMiB)} after ${FEEDS} subscriptions`);
  await waitFor(async () => Number(await control(base, 'GET', '/_fetched')) >= FEEDS, 'baselines');
  steps.push(`${mib(serve.memory().rssMiB)} after every baseline`);
  const hooks = Number(await control(base, 'GET', '/_hooks'));
  await control(base, 'POST', '/_round?change=1&add=1&etags=1');
  await waitFor(
    async () => Number(await control(base, 'GET', '/_hooks')) - hooks >= FEEDS,
    'deliveries',
  );
  steps.push(`${mib(serve.memory().rssMiB)} after ${FEEDS} events delivered`);
  return steps.join(', ');
}

// Subscribes to the 10 MiB garbage body and waits for its poll to be recorded; the peak is reset first when the kernel
// lets us, so the rise is this read's alone.
async function readGarbage(serve: Serve, base: string, row: Row, how: string): Promise<void> {
  const t = serve.tenants.memory!;
  const reset = serve.resetPeak();
  const before = serve.memory();
  const endpoints = (await t.get('/v1/endpoints')).body as { data: { id: string }[] };
  const feed = await created(
    t,
    '/v1/subscriptions',
    {
      endpoint: endpoints.data[0]!.id,
      url: `${base}/garbage.xml`,
    },
    'feed',
  );
  let lastError = '';
  await waitFor(async () => {
    const f = (await t.get(`/v1/feeds/${feed}`)).body as {
      last_polled_at: string | null;
      last_error: string | null;
    };
    lastError = f.last_error ?? '(none)';
    return f.last_polled_at !== null;
  }, 'the garbage poll');
  const after = serve.memory();
  const from = reset ? before.rssMiB : before.peakMiB;
  row(
    `serve RSS rise, one 10 MiB garbage body (${how})`,
    `+${mib(after.peakMiB - from)}`,
    `target: a small multiple of 10 MiB; peak ${mib(after.peakMiB)} from ${reset ? 'an RSS of' : 'a peak of'} ${mib(from)} before it; recorded as: ${lastError.slice(0, 80)}`,
  );
}

async function created(t: Tenant, path: string, body: unknown, field = 'id'): Promise<string> {
  const r = await t.post(path, body);
  if (r.status !== 201) throw new Error(`bench: unable to POST ${path}: ${JSON.stringify(r.body)}`);
  return (r.body as Record<string, string>)[field]!;
}

async function control(base: string, method: 'GET' | 'POST', path: string): Promise<string> {
  const r = await request(base + path, { method });
  return r.body.text();
}

async function waitFor(test: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(250);
  }
}

const mib = (n: number) => `${n.toFixed(0)} MiB`;
