// Measures the executable: file size, `--version` time, and start-up time to a healthy /healthz (first start with an
// empty addon cache and a new database, then warm starts). Usage: tsx scripts/measure-binary.ts [--bin dist/feedsub] [--runs 5]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort, stopChild, waitForHealthy } from './sea/probe.ts';
import { runOrThrow } from './sea/run.ts';

/** One start of `serve`: milliseconds from spawn to the first 200 from /healthz, and the exit code after SIGTERM. */
async function timeStart(
  bin: string,
  env: NodeJS.ProcessEnv,
  dataDir: string,
): Promise<{ ms: number; exitCode: number | null }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(bin, ['serve', '--port', String(port), '--data-dir', dataDir], {
    env,
    stdio: 'ignore',
  });
  try {
    await waitForHealthy(`http://127.0.0.1:${port}/healthz`, child, 30_000, 2);
    const ms = performance.now() - started;
    return { ms, exitCode: await stopChild(child) };
  } finally {
    child.kill('SIGKILL');
  }
}

function summary(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? NaN;
  return `median ${median.toFixed(0)} ms (min ${(sorted[0] ?? NaN).toFixed(0)}, max ${(sorted.at(-1) ?? NaN).toFixed(0)}, n=${values.length})`;
}

async function main(): Promise<void> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const { values } = parseArgs({
    options: {
      bin: { type: 'string', default: join(root, 'dist', 'feedsub') },
      runs: { type: 'string', default: '5' },
    },
  });
  const bin = resolve(values.bin);
  const runs = Math.max(1, Number(values.runs));
  const home = mkdtempSync(join(tmpdir(), 'feedsub-measure-'));
  // A fresh HOME/XDG cache: the first start writes the addon, later ones reuse it. CACHE_DIRECTORY would win over both.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    XDG_CACHE_HOME: join(home, 'cache'),
    CACHE_DIRECTORY: '',
  };
  try {
    console.log(`binary: ${bin} ${(statSync(bin).size / 1024 / 1024).toFixed(1)} MiB`);
    const versionTimes: number[] = [];
    let said = '';
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      said = (await runOrThrow(bin, ['--version'], { env, timeoutMs: 30_000 })).trim();
      versionTimes.push(performance.now() - started);
    }
    console.log(`--version ("${said}"): ${summary(versionTimes)}`);
    const dataDir = join(home, 'data');
    const first = await timeStart(bin, env, dataDir);
    console.log(
      `start → /healthz 200, first start (empty addon cache, new database): ${first.ms.toFixed(0)} ms, exit ${first.exitCode}`,
    );
    const warm: number[] = [];
    for (let i = 0; i < runs; i++) {
      const result = await timeStart(bin, env, dataDir);
      if (result.exitCode !== 0)
        console.log(`warning: serve exited with ${result.exitCode} after SIGTERM`);
      warm.push(result.ms);
    }
    console.log(`start → /healthz 200, warm (cached addon, existing database): ${summary(warm)}`);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
});
