// The `feedsub` command the end-to-end tests start: src/main.ts as one esbuild bundle, so a start costs a fraction of a
// second instead of tsx compiling the sources again in every process (about 2 s of CPU each). It is the same code:
// each source file keeps its own import.meta.url (schema.sql and package.json are found as in development), better-
// sqlite3 loads its own addon from node_modules, and each worker thread runs a bundle of its module made beside it.
// Made under build/test/<hash of its inputs>/, so any change to src/ or the dependencies makes a new one, for a single
// test file as for the whole suite; concurrent test processes build in a directory of their own and rename it.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { WORKER_THREADS } from '../../src/assets.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every file whose change can change the bundle: the sources, the manifests and this file. */
function inputs(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }))
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else files.push(join(dir, entry.name));
  };
  walk(join(ROOT, 'src'));
  files.push(
    join(ROOT, 'package.json'),
    join(ROOT, 'package-lock.json'),
    join(ROOT, 'tsconfig.json'),
    fileURLToPath(import.meta.url),
  );
  return files.sort();
}

function inputsHash(): string {
  const hash = createHash('sha256');
  for (const file of inputs()) {
    hash.update(relative(ROOT, file)).update('\0');
    hash.update(existsSync(file) ? readFileSync(file) : '').update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

// "import.meta.url", spelled in parts: the test runner bundles this file with the plugin below, which would otherwise
// rewrite these very texts.
const IMPORT_META_URL = ['import', 'meta', 'url'].join('.');

/** What a bundle of feedsub's TypeScript needs to run as the sources do under tsx: each file matching `filter` keeps
 *  its own import.meta.url (its file URL; a bundle would give every module the bundle's), and `require` is Node's own
 *  (esbuild's ESM output has none, and jschardet is loaded with it on first use). */
export function asUnderTsx(filter: RegExp): Pick<BuildOptions, 'banner' | 'plugins'> {
  const ownUrls: Plugin = {
    name: 'feedsub-own-import-meta-url',
    setup(b) {
      b.onLoad({ filter }, (args) => ({
        contents: readFileSync(args.path, 'utf8').replaceAll(
          IMPORT_META_URL,
          JSON.stringify(pathToFileURL(args.path).href),
        ),
        loader: 'ts',
      }));
    },
  };
  return {
    banner: {
      js: `import { createRequire as __feedsubCreateRequire } from 'node:module'; const require = __feedsubCreateRequire(${IMPORT_META_URL});`,
    },
    plugins: [ownUrls],
  };
}

/** Returns the path of the bundle of src/main.ts for the current sources, building it first when it is missing. Each
 *  worker thread's module is bundled beside it (workers/<kind>.cjs) and the main bundle starts its threads from those
 *  files (src/assets.ts, __FEEDSUB_WORKER_DIR__): in development a thread would bundle its module again (the parse
 *  thread) or load it through tsx (the checkpoint thread), a second or so of CPU in every daemon a test starts. */
export async function feedsubBundle(): Promise<string> {
  const dir = join(ROOT, 'build', 'test', inputsHash());
  const file = join(dir, 'main.mjs');
  if (existsSync(file)) return file;
  // Built in a directory of its own and renamed into place whole, so a concurrent test process sees all or nothing.
  const temp = `${dir}.tmp-${process.pid}`;
  const workers = join(dir, 'workers');
  try {
    await Promise.all([
      build({
        absWorkingDir: ROOT,
        entryPoints: [join(ROOT, 'src', 'main.ts')],
        outfile: join(temp, 'main.mjs'),
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        // The addon is found next to better-sqlite3's own files, as in development.
        external: ['better-sqlite3'],
        define: workerDirDefine(workers),
        ...asUnderTsx(/[\\/]src[\\/].*\.ts$/),
        logLevel: 'silent',
      }),
      ...workerBundles(join(temp, 'workers')),
    ]);
    try {
      renameSync(temp, dir);
    } catch (err) {
      if (!existsSync(file)) throw err; // another process put the same bundle in place first
    }
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
  return file;
}

/** Bundles each of feedsub's worker threads (src/assets.ts WORKER_THREADS) into `dir`/<kind>.cjs, as the executable's
 *  copies are made (scripts/sea/bundle.ts) but with better-sqlite3 loaded from node_modules. */
export function workerBundles(dir: string): Promise<unknown>[] {
  return Object.entries(WORKER_THREADS).map(([kind, thread]) =>
    build({
      absWorkingDir: ROOT,
      stdin: {
        contents: `import { ${thread.run} } from ${JSON.stringify(`./src/${thread.module}`)};\n${thread.run}();\n`,
        resolveDir: ROOT,
        sourcefile: `${kind}-worker-entry.ts`,
        loader: 'ts',
      },
      outfile: join(dir, `${kind}.cjs`),
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      external: ['better-sqlite3'],
      plugins: asUnderTsx(/[\\/]src[\\/].*\.ts$/).plugins,
      logLevel: 'silent',
    }),
  );
}

/** The esbuild `define` that makes a bundle of feedsub's sources start its worker threads from the bundles
 *  workerBundles wrote to `dir`. */
export function workerDirDefine(dir: string): Record<string, string> {
  return { __FEEDSUB_WORKER_DIR__: JSON.stringify(dir) };
}
