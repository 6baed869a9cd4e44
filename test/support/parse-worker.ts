// The parse pool's worker thread as the single executable starts it (src/assets.ts startWorkerThread): the bundle of
// src/feed/parse/read-document.ts that scripts/sea/bundle.ts makes, evaluated in a new thread. It starts in a fraction
// of the time a thread takes to load the sources under tsx, for tests that start many pools; the code is the same.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import { bundleWorker } from '../../scripts/sea/bundle.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A ParsePoolOptions.spawn that starts each worker from the parse thread's bundle, built once per process. */
export async function bundledParseWorker(): Promise<(limits: ResourceLimits) => Worker> {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-parse-worker-'));
  let source: string;
  try {
    const outfile = join(dir, 'parse-worker.cjs');
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    await bundleWorker('parse', { root: ROOT, outfile, version, target: 'node20' });
    source = readFileSync(outfile, 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return (resourceLimits) => new Worker(source, { eval: true, resourceLimits });
}
