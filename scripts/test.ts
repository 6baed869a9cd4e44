// `npm test` (and `make test` after its lint step): every test file, or those named on the command line, bundled by
// esbuild and each run by a `node --test` of its own, several files at once, each test within its timeout; each
// file's output is printed whole when it ends, and the run ends with a summary naming the slowest and failed files.
//
// A test file run under tsx loads each of its modules through tsx's loader, about a second of CPU per process before
// its first test; the suite's 130-odd processes spent about a third of their CPU on it. Bundled, a file is one module
// (its own code and feedsub's; the packages still load from node_modules), and the same tests start in a fraction of
// that. Each source file keeps its own import.meta.url, so schema.sql, fixtures and worker threads' modules are found
// as under tsx, and stack traces point at the .ts lines (source maps). A single file still runs as it always has:
// `tsx --test test/x.test.ts`.
//
// TEST_CONCURRENCY: files at once (default twice the available cores, at least 4: most tests wait on sockets and
// timers). TEST_TIMEOUT_MS: each test's limit, and each file's (default 120,000 ms), after which it fails rather than
// hangs the suite. TEST_REPORTER: node:test's reporter for each file (default spec).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { asUnderTsx, workerBundles, workerDirDefine } from '../test/support/bundle.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const concurrency = Number(process.env.TEST_CONCURRENCY) || Math.max(4, availableParallelism() * 2);
const timeoutMs = Number(process.env.TEST_TIMEOUT_MS) || 120_000;

/** Every test file under test/, sorted. */
function allTestFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }))
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.name.endsWith('.test.ts')) files.push(join(dir, entry.name));
  };
  walk(join(ROOT, 'test'));
  return files.sort();
}

const named = process.argv.slice(2);
const files = named.length > 0 ? named.map((f) => join(process.cwd(), f)) : allTestFiles();
// One directory per run, so two runs in one clone do not overwrite each other's bundles.
const outdir = join(ROOT, 'build', 'test-run', String(process.pid));
rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });

let code = 1;
try {
  const started = performance.now();
  const workers = join(outdir, 'workers');
  const bundling = build({
    absWorkingDir: ROOT,
    entryPoints: files,
    outdir,
    outbase: ROOT,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    // An app a test starts in its own process runs its worker threads from bundles made once for the run.
    define: workerDirDefine(workers),
    ...asUnderTsx(/[\\/](src|test)[\\/].*\.ts$/),
    logLevel: 'warning',
  });
  await Promise.all([bundling, ...workerBundles(workers)]);
  const bundled = files.map((f) => join(outdir, relative(ROOT, f)).replace(/\.ts$/, '.mjs'));
  process.stderr.write(
    `test: ${files.length} files bundled in ${ms(performance.now() - started)}; running ${concurrency} at once, each test within ${timeoutMs / 1000} s\n`,
  );
  const runs = await runAll(bundled, (i) => relative(ROOT, files[i]!));
  code = report(runs, performance.now() - started) ? 0 : 1;
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
process.exit(code);

type FileRun = { file: string; ms: number; ok: boolean; tests: number; failed: number };

/** Runs every bundle in a `node --test` of its own, `concurrency` at once, each file's output printed whole when it
 *  ends (so files never interleave), and resolves with each file's run. Ctrl-C or SIGTERM stops the children. */
async function runAll(bundles: string[], nameOf: (i: number) => string): Promise<FileRun[]> {
  const runs: FileRun[] = [];
  const children = new Set<ChildProcess>();
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.on(signal, () => {
      for (const child of children) child.kill(signal);
      process.exit(1);
    });
  let next = 0;
  const worker = async () => {
    while (next < bundles.length) {
      const i = next++;
      runs.push(await runFile(bundles[i]!, nameOf(i), children));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return runs;
}

function runFile(bundle: string, file: string, children: Set<ChildProcess>): Promise<FileRun> {
  const began = performance.now();
  const child = spawn(
    process.execPath,
    [
      '--enable-source-maps',
      '--test',
      `--test-timeout=${timeoutMs}`,
      `--test-reporter=${process.env.TEST_REPORTER ?? 'spec'}`,
      bundle,
    ],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      // The test WebSub hub is https with the test certificate, which feedsub must trust.
      env: {
        ...process.env,
        NODE_EXTRA_CA_CERTS: join(ROOT, 'test', 'fixtures', 'tls', 'cert.pem'),
      },
    },
  );
  children.add(child);
  const out: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.stderr.on('data', (c: Buffer) => out.push(c));
  return new Promise((resolve) => {
    child.on('close', (status) => {
      children.delete(child);
      const took = performance.now() - began;
      const text = Buffer.concat(out).toString('utf8');
      const count = (what: string) =>
        Number(new RegExp(`^(?:ℹ|#) ${what} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
      const run = {
        file,
        ms: took,
        ok: status === 0,
        tests: count('tests'),
        failed: count('fail'),
      };
      process.stdout.write(`\n▶ ${file} (${ms(took)}${run.ok ? '' : ', FAILED'})\n${text}`);
      resolve(run);
    });
  });
}

/** Prints the run's summary: counts, the slowest files, every failed one; true when every file passed. */
function report(runs: FileRun[], totalMs: number): boolean {
  const failed = runs.filter((r) => !r.ok);
  const tests = runs.reduce((n, r) => n + r.tests, 0);
  const slowest = [...runs].sort((a, b) => b.ms - a.ms).slice(0, 8);
  process.stdout.write(
    [
      '',
      `test: ${runs.length} files, ${tests} tests, ${failed.length} files failed, in ${ms(totalMs)} (${concurrency} files at once)`,
      `test: slowest files: ${slowest.map((r) => `${r.file} ${ms(r.ms)}`).join(', ')}`,
      ...failed.map((r) => `test: FAILED ${r.file} (${r.failed} tests failed)`),
      '',
    ].join('\n'),
  );
  return failed.length === 0;
}

function ms(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`;
}
