// Bundles src/main.ts into one CommonJS file for the single executable (esbuild, platform node, target node24).
import { build } from 'esbuild';
import type { Message, Plugin } from 'esbuild';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { WORKER_THREADS } from '../../src/assets.ts';

export interface BundleOptions {
  root: string;
  /** Entry file, relative to root (default src/main.ts). */
  entry?: string;
  outfile: string;
  /** feedsub's version, fixed into src/version.ts. */
  version: string;
  /** esbuild target, e.g. node24. */
  target: string;
}

// An executable's injected main script gets a require() that loads only built-in modules, and has no import.meta.
// The banner gives the bundle a real require (createRequire, used by better-sqlite3 to load the addon from the
// `nativeBinding` path: it prefers __non_webpack_require__ when defined) and a file URL standing in for import.meta.url.
const BANNER = [
  "const __non_webpack_require__ = require('node:module').createRequire(__filename);",
  "const __feedsub_import_meta_url = require('node:url').pathToFileURL(__filename).href;",
].join('\n');

// better-sqlite3 falls back to the `bindings` package to find its addon next to its sources, which do not exist in
// the executable. Replace it so that path fails loudly; the addon is always passed through `nativeBinding`.
const noBindings: Plugin = {
  name: 'feedsub-no-bindings',
  setup(b) {
    b.onResolve({ filter: /^bindings$/ }, () => ({
      path: 'bindings',
      namespace: 'feedsub-no-bindings',
    }));
    b.onLoad({ filter: /.*/, namespace: 'feedsub-no-bindings' }, () => ({
      contents:
        "module.exports = function () { throw new Error('feedsub: the SQLite addon must be passed through better-sqlite3 nativeBinding'); };",
      loader: 'js',
    }));
  },
};

function warningLines(warnings: readonly Message[]): string[] {
  return warnings.map(
    (w) => `${w.location ? `${w.location.file}:${w.location.line}: ` : ''}${w.text}`,
  );
}

/** Writes the bundle to options.outfile and returns its size in bytes and esbuild's warnings; throws on errors. */
export async function bundleMain(
  options: BundleOptions,
): Promise<{ bytes: number; warnings: string[] }> {
  const entryFile = join(options.root, options.entry ?? 'src/main.ts');
  const result = await build({
    absWorkingDir: options.root,
    entryPoints: [entryFile],
    outfile: options.outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: options.target,
    banner: { js: BANNER },
    define: {
      'import.meta.url': '__feedsub_import_meta_url',
      __FEEDSUB_VERSION__: JSON.stringify(options.version),
    },
    plugins: [noBindings],
    legalComments: 'eof',
    logLevel: 'silent',
  });
  return { bytes: statSync(options.outfile).size, warnings: warningLines(result.warnings) };
}

/**
 * Writes the bundle of one of feedsub's worker threads (its module in WORKER_THREADS, calling its run function) to
 * `outfile`. The executable embeds it as an asset and starts it with `new Worker(source, { eval: true })`: there is no
 * worker file on disk. It gets no banner (an eval worker has no file name) and must not use import.meta; the SQLite
 * addon comes through nativeBinding, as in the main bundle.
 */
export async function bundleWorker(
  kind: keyof typeof WORKER_THREADS,
  options: Omit<BundleOptions, 'entry'>,
): Promise<{ bytes: number; warnings: string[] }> {
  const thread = WORKER_THREADS[kind];
  const module = `./${join('src', thread.module)}`;
  const result = await build({
    absWorkingDir: options.root,
    stdin: {
      contents: `import { ${thread.run} } from ${JSON.stringify(module)};\n${thread.run}();\n`,
      resolveDir: options.root,
      sourcefile: `${kind}-worker-entry.ts`,
      loader: 'ts',
    },
    outfile: options.outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: options.target,
    define: { __FEEDSUB_VERSION__: JSON.stringify(options.version) },
    plugins: [noBindings],
    legalComments: 'eof',
    logLevel: 'silent',
  });
  return { bytes: statSync(options.outfile).size, warnings: warningLines(result.warnings) };
}
