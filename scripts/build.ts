// Builds dist/feedsub, the single executable: toolchain (Node 24 + better-sqlite3 addon) → esbuild bundle → SEA blob
// → postject. Usage: tsx scripts/build.ts [--out dist/feedsub] [--node 24] [--no-strip] [--entry src/main.ts]
// [--if-changed: skip when the output was built from the same inputs] [--toolchain-only: make the toolchain only]
// [--unless-blocked: exit 0 with a message when this machine cannot build it (toolchain.ts buildBlocker)]
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ADDON_ASSET, POSTGRES_SCHEMA_ASSET, SCHEMA_ASSET, WORKER_THREADS } from '../src/assets.ts';
import { bundleMain, bundleWorker } from './sea/bundle.ts';
import { makeExecutable } from './sea/inject.ts';
import { runOrThrow } from './sea/run.ts';
import { buildBlocker, DEFAULT_NODE_SPEC, ensureToolchain } from './sea/toolchain.ts';
import type { Toolchain } from './sea/toolchain.ts';

interface BuildOptions {
  root: string;
  entry: string;
  output: string;
  nodeSpec: string;
  strip: boolean;
  log: (line: string) => void;
}

/** Returns the package.json version of the repository at `root`. */
function packageVersion(root: string): string {
  const parsed = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    version?: unknown;
  };
  if (typeof parsed.version !== 'string') throw new Error('build: package.json has no version');
  return parsed.version;
}

function seconds(since: number): string {
  return `${((performance.now() - since) / 1000).toFixed(1)} s`;
}

function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * Bundles src/main.ts and each worker thread, and checks the main bundle starts under the toolchain's Node
 * (`--version`); returns the main bundle's path and each worker bundle's path by its asset name.
 */
async function bundle(
  options: BuildOptions,
  toolchain: Toolchain,
  workDir: string,
  version: string,
): Promise<{ main: string; workers: Record<string, string> }> {
  const started = performance.now();
  const target = `node${toolchain.nodeVersion.replace(/^v/, '').split('.')[0] ?? '24'}`;
  const main = join(workDir, 'feedsub.cjs');
  const result = await bundleMain({
    root: options.root,
    entry: options.entry,
    outfile: main,
    version,
    target,
  });
  const workers: Record<string, string> = {};
  const sizes: string[] = [];
  const warnings = [...result.warnings];
  for (const [kind, thread] of Object.entries(WORKER_THREADS)) {
    const outfile = join(workDir, thread.asset);
    const made = await bundleWorker(kind as keyof typeof WORKER_THREADS, {
      root: options.root,
      outfile,
      version,
      target,
    });
    workers[thread.asset] = outfile;
    sizes.push(`${kind} worker ${megabytes(made.bytes)}`);
    warnings.push(...made.warnings);
  }
  for (const warning of warnings) options.log(`bundle: warning: ${warning}`);
  const said = (
    await runOrThrow(toolchain.nodeBinary, [main, '--version'], { cwd: workDir, timeoutMs: 60_000 })
  ).trim();
  options.log(
    `bundle: ${megabytes(result.bytes)} + ${sizes.join(' + ')} in ${seconds(started)}; runs under ${toolchain.nodeVersion}: "${said}"`,
  );
  return { main, workers };
}

// What an executable is made from, besides the toolchain: a change to any of these makes --if-changed build again.
const INPUTS = [
  'src',
  'scripts/build.ts',
  'scripts/sea',
  'schema.sql',
  'schema-postgres.sql',
  'package.json',
  'package-lock.json',
  'patches',
];

/** A hash of the build's inputs (INPUTS' files, the toolchain's manifest and the options that shape the output). */
function inputsHash(options: BuildOptions, toolchain: Toolchain): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify([options.entry, options.nodeSpec, options.strip]));
  hash.update(readFileSync(join(toolchain.dir, 'toolchain.json')));
  const add = (path: string): void => {
    const full = join(options.root, path);
    if (!existsSync(full)) return;
    if (!statSync(full).isDirectory()) {
      hash.update(path).update('\0').update(readFileSync(full)).update('\0');
      return;
    }
    for (const name of readdirSync(full).sort()) add(join(path, name));
  };
  for (const path of INPUTS) add(path);
  return hash.digest('hex');
}

/** Where --if-changed finds the inputs' hash of the last executable written to `output`. */
function stampFile(options: BuildOptions): string {
  const key = createHash('sha256').update(options.output).digest('hex').slice(0, 16);
  return join(options.root, 'build', 'sea', `inputs-${key}.txt`);
}

/** Runs the whole build; throws on the first failing step. */
async function buildExecutable(
  options: BuildOptions & { ifChanged: boolean; toolchainOnly: boolean },
): Promise<void> {
  const started = performance.now();
  const version = packageVersion(options.root);
  const toolchain = await ensureToolchain(options.root, options.nodeSpec, options.log);
  options.log(
    `toolchain: ${toolchain.reused ? 'reused' : 'built'} ${relative(options.root, toolchain.dir)} ` +
      `(node ${toolchain.nodeVersion}, better-sqlite3 ${toolchain.betterSqlite3Version} built with node ${toolchain.headersVersion} headers) in ${seconds(started)}`,
  );
  if (options.toolchainOnly) return;
  mkdirSync(join(options.root, 'build', 'sea'), { recursive: true });
  const inputs = inputsHash(options, toolchain);
  const stamp = stampFile(options);
  if (
    options.ifChanged &&
    existsSync(options.output) &&
    existsSync(stamp) &&
    readFileSync(stamp, 'utf8').trim() === inputs
  ) {
    options.log(`build: ${relative(options.root, options.output)} is up to date with its inputs`);
    return;
  }
  rmSync(stamp, { force: true });
  const workDir = mkdtempSync(join(options.root, 'build', 'sea', 'run-'));
  try {
    const bundles = await bundle(options, toolchain, workDir, version);
    const schema = join(options.root, 'schema.sql');
    const postgresSchema = join(options.root, 'schema-postgres.sql');
    for (const file of [schema, postgresSchema])
      if (!existsSync(file)) throw new Error(`build: ${file} is missing`);
    const injectStarted = performance.now();
    mkdirSync(dirname(options.output), { recursive: true });
    const made = await makeExecutable({
      root: options.root,
      nodeBinary: toolchain.nodeBinary,
      main: bundles.main,
      assets: {
        [SCHEMA_ASSET]: schema,
        [POSTGRES_SCHEMA_ASSET]: postgresSchema,
        [ADDON_ASSET]: toolchain.addon,
        ...bundles.workers,
      },
      workDir,
      output: options.output,
      strip: options.strip,
    });
    options.log(
      `inject: blob ${megabytes(made.blobBytes)}, ${made.stripped ? 'stripped ' : options.strip ? 'unstripped (no strip on PATH) ' : ''}binary in ${seconds(injectStarted)}`,
    );
    const said = (
      await runOrThrow(options.output, ['--version'], { cwd: workDir, timeoutMs: 60_000 })
    ).trim();
    if (!said.includes(version) || !said.includes(toolchain.nodeVersion)) {
      throw new Error(
        `build: ${options.output} --version said "${said}", expected ${version} and ${toolchain.nodeVersion}`,
      );
    }
    writeFileSync(stamp, `${inputs}\n`);
    options.log(
      `build: ${relative(options.root, options.output)} ${megabytes(made.bytes)} ("${said}") in ${seconds(started)}`,
    );
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: join(root, 'dist', 'feedsub') },
      entry: { type: 'string', default: 'src/main.ts' },
      node: { type: 'string', default: DEFAULT_NODE_SPEC },
      'no-strip': { type: 'boolean', default: false },
      'if-changed': { type: 'boolean', default: false },
      'toolchain-only': { type: 'boolean', default: false },
      'unless-blocked': { type: 'boolean', default: false },
    },
  });
  if (values['unless-blocked']) {
    const blocker = await buildBlocker(root, values.node);
    if (blocker) {
      console.log(`build: skipped, cannot build the executable here: ${blocker}`);
      return;
    }
  }
  await buildExecutable({
    root,
    entry: values.entry,
    output: resolve(values.out),
    nodeSpec: values.node,
    strip: !values['no-strip'],
    ifChanged: values['if-changed'],
    toolchainOnly: values['toolchain-only'],
    log: (line) => console.log(line),
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
});
