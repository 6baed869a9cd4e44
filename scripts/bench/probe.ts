// A /healthz prober in a process of its own, as an outside monitor would ask: the bench process runs the load (clients,
// origin, receiver), and its garbage collection and timers must not be counted as the daemon's latency.
//
// `node --import tsx probe.ts <url> <every-ms>`: sends GET <url> every <every-ms>, whether or not the probes before were
// answered (a probe sent while the daemon's event loop is held waits for the rest of the hold, as any client arriving
// then would). It prints "ready" once the first probe is answered; on a line on stdin it stops sending, waits for the
// probes in flight and prints one JSON line {"probes": [ms…], "failed": n}, then exits.
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';

const [url, every] = process.argv.slice(2);
if (!url || !every) throw new Error('usage: probe.ts <url> <every-ms>');

// A connection each, and a minute to connect: while the daemon's event loop is held, probes wait in the listen backlog.
const agent = new Agent({ connect: { timeout: 60_000 }, headersTimeout: 60_000 });
const probes: number[] = [];
const inFlight: Promise<void>[] = [];
let failed = 0;

async function probe(record: boolean): Promise<void> {
  const t0 = performance.now();
  try {
    const r = await request(url!, { dispatcher: agent });
    await r.body.dump();
  } catch {
    failed += Number(record); // unanswered within the minute: counted at the time it gave up
  }
  if (record) probes.push(performance.now() - t0);
}

await probe(false);
const timer = setInterval(() => inFlight.push(probe(true)), Number(every));
console.log('ready');
createInterface({ input: process.stdin }).once('line', async () => {
  clearInterval(timer);
  await Promise.all(inFlight);
  await agent.close();
  console.log(JSON.stringify({ probes, failed }));
  process.exit(0);
});
