// `npm test` (and `make test` after its lint step): every test file, or those named on the command line, bundled by
// esbuild and run by `node --test` processes, several at once, each test within its timeout; each process's output is
// printed whole when it ends, and the run ends with a summary naming the slowest and failed ones.
//
// A test file run under tsx loads each of its modules through tsx's loader, about a second of CPU per process before
// its first test. Bundled, a file is one module (its own code and feedsub's; the packages still load from
// node_modules), and the same tests start in a fraction of that. Each source file keeps its own import.meta.url, so
// schema.sql and fixtures are found as under tsx, and stack traces point at the .ts lines (source maps). The files of
// one directory below test/ share a process, up to GROUP_MAX of them (see unitsOf); the processes start longest first,
// by the times of the last run. A single file still runs as it always has: `tsx --test test/x.test.ts`.
//
// The store, action, loop and API suites (test/store, test/actions, test/worker, test/http) run twice: on SQLite, and
// on PostgreSQL (FEEDSUB_TEST_ENGINE=postgres in their processes; each process starts a server of its own, see
// test/support/postgres.ts, and fails saying why when it cannot). TEST_ENGINES: the engines to run them on (default
// sqlite,postgres); the other files run on SQLite whatever it says.
//
// TEST_CONCURRENCY: processes at once (default twice the available cores, at least 4: most tests wait on sockets and
// timers). TEST_TIMEOUT_MS: each test's limit, and each process's (default 120,000 ms), after which it fails rather
// than hangs the suite. TEST_REPORTER: node:test's reporter for each process (default spec).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
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

/** A unit of the run: one `node --test` process running one test file, or a group of files, on one engine. */
type Unit = { name: string; files: string[]; engine: 'sqlite' | 'postgres' };

/** The directories whose suites run on both engines. */
const BOTH_ENGINES = ['store', 'actions', 'worker', 'http'].map((dir) => join(ROOT, 'test', dir));

/** Whether `file` belongs to a suite that runs on both engines. */
function onBothEngines(file: string): boolean {
  return BOTH_ENGINES.some((dir) => file.startsWith(dir + '/'));
}

/** At most this many files share a process. */
const GROUP_MAX = 8;

/** The files of each directory below test/ (not test/ itself, nor test/browser) run in groups of up to GROUP_MAX in one
 *  process: most load the same modules (feedsub's sources and packages, about half a second of CPU per process) and
 *  then test one module for a second or two. The end-to-end files in test/ itself start daemons and apps, and run
 *  alone, as does a file that measures its process's CPU time. */
function unitsOf(files: string[], groupMax = GROUP_MAX): Unit[] {
  const byDir = new Map<string, string[]>();
  const units: Unit[] = [];
  for (const file of files) {
    const dir = dirname(relative(ROOT, file));
    // A file that measures its process's CPU time runs alone: another file's threads and heap would count in it.
    const alone = readFileSync(file, 'utf8').includes('process.cpuUsage(');
    if (alone || dir === 'test' || dir === join('test', 'browser'))
      units.push({ name: relative(ROOT, file), files: [file], engine: 'sqlite' });
    else byDir.set(dir, [...(byDir.get(dir) ?? []), file]);
  }
  for (const [dir, list] of byDir) {
    const count = Math.ceil(list.length / groupMax);
    const size = Math.ceil(list.length / count);
    for (let i = 0; i < count; i++) {
      const part = list.slice(i * size, (i + 1) * size);
      const name =
        part.length === 1
          ? relative(ROOT, part[0]!)
          : `${dir}/ (${part.map((f) => basename(f, '.test.ts')).join(', ')})`;
      units.push({ name, files: part, engine: 'sqlite' });
    }
  }
  return units;
}

/** How long each unit took last time in this clone (build/test-times.json): the run starts the longest first, so a
 *  slow file does not start last and run alone at the end. A unit not timed yet starts before the timed ones. */
const TIMES = join(ROOT, 'build', 'test-times.json');

function readTimes(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(TIMES, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

function writeTimes(runs: Run[]): void {
  const times = readTimes();
  for (const r of runs) times[r.name] = Math.round(r.ms);
  try {
    writeFileSync(TIMES, `${JSON.stringify(times, null, 1)}\n`);
  } catch {
    // only an ordering hint
  }
}

const named = process.argv.slice(2);
const files = named.length > 0 ? named.map((f) => join(process.cwd(), f)) : allTestFiles();
const engines = (process.env.TEST_ENGINES ?? 'sqlite,postgres').split(',');
for (const engine of engines)
  if (engine !== 'sqlite' && engine !== 'postgres')
    throw new Error(`TEST_ENGINES: expected sqlite and/or postgres, got ${engine}`);
const times = readTimes();
// On PostgreSQL a statement is a round trip, so a group of files takes longer: groups are half the size.
const units = [
  ...unitsOf(engines.includes('sqlite') ? files : files.filter((f) => !onBothEngines(f))),
  ...(engines.includes('postgres')
    ? unitsOf(files.filter(onBothEngines), GROUP_MAX / 2).map((u): Unit => ({
        ...u,
        name: `${u.name} on PostgreSQL`,
        engine: 'postgres',
      }))
    : []),
].sort((a, b) => (times[b.name] ?? Infinity) - (times[a.name] ?? Infinity));
// One directory per run, so two runs in one clone do not overwrite each other's bundles.
const outdir = join(ROOT, 'build', 'test-run', String(process.pid));
rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });

let code = 1;
try {
  const started = performance.now();
  const workers = join(outdir, 'workers');
  // A group's entry imports its files in order: node:test runs their tests one file after another.
  const entries = units.map((unit, i) => {
    if (unit.files.length === 1) return { in: unit.files[0]!, out: `unit-${i}` };
    const entry = join(outdir, 'entries', `unit-${i}.ts`);
    mkdirSync(dirname(entry), { recursive: true });
    writeFileSync(entry, unit.files.map((f) => `import ${JSON.stringify(f)};\n`).join(''));
    return { in: entry, out: `unit-${i}` };
  });
  const bundling = build({
    absWorkingDir: ROOT,
    entryPoints: entries,
    outdir,
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
  const bundled = entries.map((e) => join(outdir, `${e.out}.mjs`));
  process.stderr.write(
    `test: ${files.length} files in ${units.length} processes, bundled in ${ms(performance.now() - started)}; running ${concurrency} at once, each test within ${timeoutMs / 1000} s\n`,
  );
  const runs = await runAll(bundled, (i) => units[i]!);
  writeTimes(runs);
  code = report(runs, performance.now() - started) ? 0 : 1;
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
process.exit(code);

/** One process's run: its unit's name, how long it took, and its tests. */
type Run = { name: string; ms: number; ok: boolean; tests: number; failed: number };

/** Runs every bundle in a `node --test` of its own, `concurrency` at once, each one's output printed whole when it ends
 *  (so processes never interleave), and resolves with each one's run. Ctrl-C or SIGTERM stops the children. */
async function runAll(bundles: string[], unitOf: (i: number) => Unit): Promise<Run[]> {
  const runs: Run[] = [];
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
      runs.push(await runBundle(bundles[i]!, unitOf(i), children));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return runs;
}

function runBundle(bundle: string, unit: Unit, children: Set<ChildProcess>): Promise<Run> {
  const name = unit.name;
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
        // A transaction that runs a statement outside itself fails at once instead of waiting on itself forever.
        FEEDSUB_CHECK_TRANSACTIONS: '1',
        FEEDSUB_TEST_ENGINE: unit.engine,
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
        name,
        ms: took,
        ok: status === 0,
        tests: count('tests'),
        failed: count('fail'),
      };
      process.stdout.write(`\n▶ ${name} (${ms(took)}${run.ok ? '' : ', FAILED'})\n${text}`);
      resolve(run);
    });
  });
}

/** Prints the run's summary: counts, the slowest processes, every failed one; true when every one passed. */
function report(runs: Run[], totalMs: number): boolean {
  const failed = runs.filter((r) => !r.ok);
  const fileCount = units.reduce((n, u) => n + u.files.length, 0);
  const tests = runs.reduce((n, r) => n + r.tests, 0);
  const slowest = [...runs].sort((a, b) => b.ms - a.ms).slice(0, 8);
  process.stdout.write(
    [
      '',
      `test: ${fileCount} files in ${runs.length} processes, ${tests} tests, ${failed.length} processes failed, in ${ms(totalMs)} (${concurrency} at once)`,
      `test: slowest: ${slowest.map((r) => `${r.name} ${ms(r.ms)}`).join(', ')}`,
      ...failed.map((r) => `test: FAILED ${r.name} (${r.failed} tests failed)`),
      '',
    ].join('\n'),
  );
  return failed.length === 0;
}

function ms(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`;
}
