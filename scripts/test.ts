// `npm test` (and `make test` after its lint step): every test file, or those named on the command line, bundled by
// esbuild and run by `node --test`, several files at once, each test within its timeout.
//
// A test file run under tsx loads each of its modules through tsx's loader, about a second of CPU per process before
// its first test; the suite's 130-odd processes spent about a third of their CPU on it. Bundled, a file is one module
// (its own code and feedsub's; the packages still load from node_modules), and the same tests start in a fraction of
// that. Each source file keeps its own import.meta.url, so schema.sql, fixtures and worker threads' modules are found
// as under tsx, and stack traces point at the .ts lines (source maps). A single file still runs as it always has:
// `tsx --test test/x.test.ts`.
//
// TEST_CONCURRENCY: files at once (default twice the available cores, at least 4: most tests wait on sockets and
// timers). TEST_TIMEOUT_MS: each test's limit, and each file's (default 120,000 ms), after which it fails rather than hangs the suite.
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { asUnderTsx } from '../test/support/bundle.ts';

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
  await build({
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
    ...asUnderTsx(/[\\/](src|test)[\\/].*\.ts$/),
    logLevel: 'warning',
  });
  const bundled = files.map((f) => join(outdir, relative(ROOT, f)).replace(/\.ts$/, '.mjs'));
  process.stderr.write(
    `test: ${files.length} files bundled in ${Math.round(performance.now() - started)} ms; running ${concurrency} at once, each test within ${timeoutMs} ms\n`,
  );
  code = await new Promise<number>((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--enable-source-maps',
        '--test',
        `--test-concurrency=${concurrency}`,
        `--test-timeout=${timeoutMs}`,
        ...bundled,
      ],
      {
        cwd: ROOT,
        stdio: 'inherit',
        // The test WebSub hub is https with the test certificate, which feedsub must trust.
        env: {
          ...process.env,
          NODE_EXTRA_CA_CERTS: join(ROOT, 'test', 'fixtures', 'tls', 'cert.pem'),
        },
      },
    );
    const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
    process.on('SIGINT', forward('SIGINT'));
    process.on('SIGTERM', forward('SIGTERM'));
    child.on('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0)));
  });
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
process.exit(code);
