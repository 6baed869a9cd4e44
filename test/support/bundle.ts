// The `feedsub` command the end-to-end tests start: src/main.ts as one esbuild bundle, so a start costs a fraction of a
// second instead of tsx compiling the sources again in every process (about 2 s of CPU each). It is the same code:
// each source file keeps its own import.meta.url (schema.sql, package.json and the worker threads' .ts modules are
// found as in development, the threads still started under tsx), and better-sqlite3 loads its own addon from
// node_modules. Made under build/test/<hash of its inputs>/, so any change to src/ or the dependencies makes a new
// one, for a single test file as for the whole suite; concurrent test processes write to a temporary name and rename.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type BuildOptions, type Plugin } from 'esbuild';

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

/** Returns the path of the bundle of src/main.ts for the current sources, building it first when it is missing. */
export async function feedsubBundle(): Promise<string> {
  const dir = join(ROOT, 'build', 'test', inputsHash());
  const file = join(dir, 'main.mjs');
  if (existsSync(file)) return file;
  mkdirSync(dir, { recursive: true });
  const temp = `${file}.tmp-${process.pid}`;
  try {
    await build({
      absWorkingDir: ROOT,
      entryPoints: [join(ROOT, 'src', 'main.ts')],
      outfile: temp,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      // The addon is found next to better-sqlite3's own files, as in development.
      external: ['better-sqlite3'],
      ...asUnderTsx(/[\\/]src[\\/].*\.ts$/),
      logLevel: 'silent',
    });
    renameSync(temp, file);
  } finally {
    rmSync(temp, { force: true });
  }
  return file;
}
