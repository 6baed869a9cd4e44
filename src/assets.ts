// Runtime files (schema.sql and schema-postgres.sql, the SQLite native addon) read from disk in development or from the single-executable's assets.
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { getAsset, getRawAsset, isSea } from 'node:sea';
import { fileURLToPath } from 'node:url';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import { FEEDSUB_VERSION } from './version.ts';

/** Asset keys of the single executable; scripts/sea/inject.ts embeds files under these names. */
export const SCHEMA_ASSET = 'schema.sql';
export const POSTGRES_SCHEMA_ASSET = 'schema-postgres.sql';
export const ADDON_ASSET = 'better_sqlite3.node';
export const PARSE_WORKER_ASSET = 'parse-worker.cjs';
export const CHECKPOINT_WORKER_ASSET = 'checkpoint-worker.cjs';
const ADDON_FILE = 'better_sqlite3.node';

/** Returns the text of schema.sql: the embedded asset in the executable, the repository copy in development. */
export function readSchemaSql(): string {
  if (isSea()) return getAsset(SCHEMA_ASSET, 'utf8');
  return readFileSync(new URL('../schema.sql', import.meta.url), 'utf8');
}

/** Returns the text of schema-postgres.sql, as readSchemaSql does schema.sql's. */
export function readPostgresSchemaSql(): string {
  if (isSea()) return getAsset(POSTGRES_SCHEMA_ASSET, 'utf8');
  return readFileSync(new URL('../schema-postgres.sql', import.meta.url), 'utf8');
}

/**
 * Returns a path to better-sqlite3's native addon to load, or undefined to let better-sqlite3 find its own.
 * In the executable the embedded addon is written once to a private cache directory (see installAddon).
 */
export function nativeBindingPath(): string | undefined {
  if (!isSea()) return undefined;
  // getRawAsset avoids copying the ~2 MB addon; its typings also allow a string, never seen for a binary asset.
  const raw = getRawAsset(ADDON_ASSET);
  const bytes = new Uint8Array(typeof raw === 'string' ? getAsset(ADDON_ASSET) : raw);
  return installAddon(bytes, addonCacheRoots(process.env), FEEDSUB_VERSION);
}

// Defined by the bundles the test suite makes of the sources (test/support/bundle.ts): the directory holding each worker
// thread's bundle, made with them (<kind>.cjs); absent in development and in the executable.
declare const __FEEDSUB_WORKER_DIR__: string | undefined;
const WORKER_DIR = typeof __FEEDSUB_WORKER_DIR__ === 'string' ? __FEEDSUB_WORKER_DIR__ : undefined;

/** feedsub's worker threads: the module each runs from in development (relative to this file), the function of it the
 *  thread calls, and the asset holding its own bundle in the executable. */
export const WORKER_THREADS = {
  parse: {
    module: './feed/parse/read-document.ts',
    run: 'runParseWorker',
    asset: PARSE_WORKER_ASSET,
    bundledInDevelopment: true,
  },
  checkpoint: {
    module: './db/checkpoint-worker.ts',
    run: 'runCheckpointWorker',
    asset: CHECKPOINT_WORKER_ASSET,
    bundledInDevelopment: false,
  },
} as const;

/**
 * Starts one of feedsub's worker threads with `workerData` (and `resourceLimits`, its heap's bounds). In the executable
 * it runs the embedded bundle (there is no worker file on disk); in the test suite's bundles, the one made with them.
 * In development the module is TypeScript, and Node 20 workers do not inherit tsx's --import hooks: the parse thread runs a bundle of its module made as the executable's
 * is (developmentBundle); the checkpoint thread, which imports little, registers tsx's loader itself and imports the
 * .ts module.
 */
export function startWorkerThread(
  kind: keyof typeof WORKER_THREADS,
  workerData?: unknown,
  resourceLimits?: ResourceLimits,
): Worker {
  const thread = WORKER_THREADS[kind];
  if (isSea())
    return new Worker(getAsset(thread.asset, 'utf8'), { eval: true, workerData, resourceLimits });
  if (WORKER_DIR !== undefined)
    return new Worker(join(WORKER_DIR, `${kind}.cjs`), { workerData, resourceLimits });
  if (thread.bundledInDevelopment)
    return new Worker(developmentBundle(kind), { eval: true, workerData, resourceLimits });
  const register = `await (await import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})).register();`;
  const url = new URL(thread.module, import.meta.url).href;
  return new Worker(
    `(async () => { ${register} (await import(${JSON.stringify(url)})).${thread.run}(); })()`,
    { eval: true, workerData, resourceLimits },
  );
}

/** The bundles developmentBundle made, by thread kind: each is made once per process. */
const developmentBundles = new Map<string, string>();

/** The part of esbuild's API developmentBundle uses (esbuild is a development dependency, as tsx is). */
type EsbuildSync = {
  buildSync(options: Record<string, unknown>): { outputFiles: { text: string }[] };
};

/**
 * A worker thread's module as one CommonJS script, bundled by esbuild in memory the way the executable's copy is
 * (scripts/sea/bundle.ts), once per process. Loading the parse thread's module graph (feedsmith, sanitize-html, the
 * decoders) through tsx's loader cost each thread about two seconds of CPU; the bundle takes about a fifth of a second
 * once, and each thread then starts in a fraction of that. It blocks the event loop for that while, once, when the
 * first thread starts.
 */
function developmentBundle(kind: keyof typeof WORKER_THREADS): string {
  const made = developmentBundles.get(kind);
  if (made !== undefined) return made;
  const thread = WORKER_THREADS[kind];
  const esbuild = createRequire(import.meta.url)('esbuild') as EsbuildSync;
  const entry = fileURLToPath(new URL(thread.module, import.meta.url));
  const { outputFiles } = esbuild.buildSync({
    stdin: {
      contents: `import { ${thread.run} } from ${JSON.stringify(entry)};\n${thread.run}();\n`,
      resolveDir: dirname(entry),
      sourcefile: `${kind}-worker-entry.ts`,
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${process.versions.node.split('.')[0]}`,
    write: false,
    logLevel: 'silent',
  });
  const code = outputFiles[0]!.text;
  developmentBundles.set(kind, code);
  return code;
}

/**
 * Returns the candidate cache roots, best first: systemd's $CACHE_DIRECTORY, $XDG_CACHE_HOME/feedsub,
 * $HOME/.cache/feedsub, then a per-user folder in the OS temp directory. Relative paths are ignored.
 */
export function addonCacheRoots(env: NodeJS.ProcessEnv): string[] {
  const roots: string[] = [];
  const systemd = env.CACHE_DIRECTORY?.split(delimiter)[0];
  if (systemd && isAbsolute(systemd)) roots.push(join(systemd, 'addon'));
  if (env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME))
    roots.push(join(env.XDG_CACHE_HOME, 'feedsub'));
  if (env.HOME && isAbsolute(env.HOME)) roots.push(join(env.HOME, '.cache', 'feedsub'));
  roots.push(join(tmpdir(), `feedsub-${process.getuid?.() ?? 'user'}`));
  return roots;
}

/**
 * Writes `bytes` to <root>/<version>-<sha256 prefix>/better_sqlite3.node under the first usable root and returns
 * that path. A root is usable when it is (or can be made) a directory we own that nobody else can write to
 * (created with mode 0700). An existing file is reused only when its hash matches; otherwise it is replaced
 * atomically (write to a temporary name, fsync, rename). Throws when no root is usable.
 */
export function installAddon(bytes: Uint8Array, roots: readonly string[], version: string): string {
  const hash = sha256(bytes);
  const failures: string[] = [];
  for (const root of roots) {
    try {
      const dir = join(root, `${version}-${hash.slice(0, 16)}`);
      ensurePrivateDir(root);
      ensurePrivateDir(dir);
      const file = join(dir, ADDON_FILE);
      if (!hasHash(file, hash)) writeAtomically(file, bytes);
      return file;
    } catch (error) {
      failures.push(`${root}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw new Error(
    `assets: unable to write the SQLite addon to a private cache directory (${failures.join('; ')})`,
  );
}

/** Creates `dir` (mode 0700) if missing; throws unless it is a real directory owned by us and not group/other writable. */
function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory()) throw new Error(`${dir} is not a directory`);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid)
    throw new Error(`${dir} is owned by uid ${stat.uid}, not ${uid}`);
  if ((stat.mode & 0o022) !== 0)
    throw new Error(`${dir} is writable by other users (mode ${(stat.mode & 0o777).toString(8)})`);
}

/** True when `file` is a regular file whose SHA-256 is `hash`; false when it is missing or differs. */
function hasHash(file: string, hash: string): boolean {
  try {
    if (!lstatSync(file).isFile()) return false;
    return sha256(readFileSync(file)) === hash;
  } catch {
    return false;
  }
}

/** Writes `bytes` to a fresh temporary file beside `file`, flushes it, then renames it over `file`. */
function writeAtomically(file: string, bytes: Uint8Array): void {
  const temp = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(temp, 'wx', 0o500);
  try {
    try {
      let offset = 0;
      while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
