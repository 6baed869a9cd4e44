// make bench: feedsub against a local origin of N feeds and a local receiver (separate process), beside the raw limits.
// The phases live under bench/; this file starts the origin, runs them in order and prints the table.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { measureBounds } from './bench/churn.ts';
import { measureDelivery, measureLatency, warmUpDeliveries } from './bench/delivery.ts';
import { measurePolls, queueRounds } from './bench/polls.ts';
import { measurePushLatency } from './bench/push.ts';
import { measureRawLimits } from './bench/raw.ts';
import { measureWrites } from './bench/writes.ts';
import { CONCURRENCY, FEEDS } from './bench/settings.ts';
import { setUp, tearDown } from './bench/setup.ts';
import { createTable } from './bench/table.ts';
import type { Row } from './bench/table.ts';

async function main(): Promise<void> {
  const origin = spawn(
    process.execPath,
    ['--import', 'tsx', new URL('./bench-origin.ts', import.meta.url).pathname, String(FEEDS)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<string>((resolve) =>
    createInterface({ input: origin.stdout! }).once('line', resolve),
  );
  const base = `http://127.0.0.1:${port.trim()}`;
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-bench-'));
  const table = createTable();
  try {
    await run(base, dir, table.row);
  } finally {
    origin.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
  table.print(
    `\nfeedsub bench: ${FEEDS} feeds (~50 KB each, half RSS, half Atom), poll concurrency ${CONCURRENCY}, node ${process.version}\n`,
  );
}

/** Every phase in order, each adding its rows; feedsub is closed before the raw limits are measured. */
async function run(base: string, dir: string, row: Row): Promise<void> {
  const b = await setUp(base, dir, row);
  const { changed, all } = await measurePolls(b);
  // Warm-up, untimed: the deliverer loop delivers the events of the two rounds so far, so that the timed trials below
  // start with the delivery path compiled; the raw POST loop gets as many requests before its trials.
  const warmUp = changed.events + all.events;
  await warmUpDeliveries(b, warmUp);
  const queued = await queueRounds(b);
  const trials = await measureDelivery(b, queued, warmUp);
  await measureLatency(b);
  await tearDown(b);
  await measurePushLatency(row); // WebSub: a hub's publication → the webhook, on its own app
  await measureBounds(dir, row); // bounds: an hour of churning feeds, a 200,000-entry release
  await measureWrites(row); // bytes written per created subscription and per 304 poll
  await measureRawLimits(base, row, trials);
  row(
    'peak RSS',
    `${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
    'whole bench process',
  );
}

await main();
