// Turns a bundle and its assets into a single executable: SEA blob from the toolchain's Node, injected with postject.
import { chmodSync, copyFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run, runOrThrow } from './run.ts';

// The fuse Node checks to know a blob was injected (Node's single-executable-applications documentation).
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export interface InjectOptions {
  root: string;
  /** The Node binary to copy; it also prepares the blob, which must come from the same Node version. */
  nodeBinary: string;
  /** The bundled main script. */
  main: string;
  /** Asset key → file embedded under that key (read at run time with node:sea getAsset). */
  assets: Record<string, string>;
  /** Scratch folder for sea-config.json and the blob. */
  workDir: string;
  output: string;
  /** Remove the Node binary's symbol and debug sections before injecting (smaller file). */
  strip: boolean;
}

/** Strips `file` when binutils' strip is on PATH; returns whether it did. Throws when strip exists but fails. */
async function stripIfAvailable(file: string): Promise<boolean> {
  const found = await run('sh', ['-c', 'command -v strip'], { timeoutMs: 10_000 });
  if (found.code !== 0) return false;
  await runOrThrow('strip', [file]);
  return true;
}

/** Builds the executable at options.output (written under a temporary name, then renamed) and returns its size. */
export async function makeExecutable(
  options: InjectOptions,
): Promise<{ bytes: number; blobBytes: number; stripped: boolean }> {
  const blob = join(options.workDir, 'sea-prep.blob');
  const config = {
    main: options.main,
    output: blob,
    disableExperimentalSEAWarning: true,
    // V8 code cache made at build time by the same Node version: the bundle is not compiled again on every start.
    useCodeCache: true,
    assets: options.assets,
  };
  const configFile = join(options.workDir, 'sea-config.json');
  writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`);
  await runOrThrow(options.nodeBinary, ['--experimental-sea-config', configFile], {
    cwd: options.workDir,
  });

  const temp = `${options.output}.tmp-${process.pid}`;
  let stripped = false;
  try {
    copyFileSync(options.nodeBinary, temp);
    chmodSync(temp, 0o755);
    stripped = options.strip && (await stripIfAvailable(temp));
    const postject = join(options.root, 'node_modules', 'postject', 'dist', 'cli.js');
    await runOrThrow(process.execPath, [
      postject,
      temp,
      'NODE_SEA_BLOB',
      blob,
      '--sentinel-fuse',
      SEA_FUSE,
    ]);
    renameSync(temp, options.output);
  } finally {
    rmSync(temp, { force: true });
  }
  return { bytes: statSync(options.output).size, blobBytes: statSync(blob).size, stripped };
}
