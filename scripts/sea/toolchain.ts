// Build-only toolchain of the executable: Node 24 from the npm registry's `node` package and better-sqlite3 compiled
// for it, kept under build/toolchain/<key>/ (just `node`, `better_sqlite3.node`, toolchain.json) and reused while the
// versions match.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { run, runOrThrow } from './run.ts';

export interface Toolchain {
  /** The Node binary the executable is made from (and that prepares the SEA blob). */
  nodeBinary: string;
  nodeVersion: string;
  /** better_sqlite3.node compiled for nodeVersion's ABI (against headersVersion's headers). */
  addon: string;
  headersVersion: string;
  betterSqlite3Version: string;
  dir: string;
  reused: boolean;
}

interface Manifest {
  nodeSpec: string;
  nodeVersion: string;
  headersVersion: string;
  betterSqlite3Version: string;
  nodeBinary: string;
  addon: string;
}

/** The npm `node` version range the executable embeds by default: the current LTS line. */
export const DEFAULT_NODE_SPEC = '24';

// Node 24.19.0 changed the header-only node::ObjectWrap (node_object_wrap.h): its destructor now calls
// RemoveEnvironmentCleanupHook, which aborts the process ("Assertion failed: (env) != nullptr") when V8 collects an
// object outside any context, e.g. a better-sqlite3 Statement in a GC between callbacks (nodejs/node#65446, open;
// still in 24.21.0). The code comes from the headers the addon is compiled against, not from the runtime, so the
// addon is compiled against 24.18.1's headers, the last 24.x without the change; within a major the addon ABI is
// stable (NODE_MODULE_VERSION 137). checkAddon() below reproduces the crash, so a toolchain that has it never builds.
const ADDON_HEADERS: Record<string, string> = { '24': '24.18.1' };

// The npm package holding one platform's Node binary and headers (what the `node` package's preinstall fetches).
const PLATFORM_PACKAGE = `${process.platform === 'darwin' && process.arch === 'arm64' ? 'node-bin' : 'node'}-${process.platform}-${process.arch}`;

// Bump when the way the toolchain is made changes, so old folders are not reused.
const RECIPE = 3;

/** Returns the exact better-sqlite3 version installed in the project (the one the tests use). */
export function projectBetterSqlite3Version(root: string): string {
  const text = readFileSync(join(root, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8');
  const parsed = JSON.parse(text) as { version?: unknown };
  if (typeof parsed.version !== 'string')
    throw new Error('build: node_modules/better-sqlite3 has no version');
  return parsed.version;
}

/** Returns the folder a toolchain for these versions lives in (it may not exist yet). */
export function toolchainDir(root: string, nodeSpec: string, betterSqlite3Version: string): string {
  const key = `node${nodeSpec}-better-sqlite3-${betterSqlite3Version}-${process.platform}-${process.arch}-r${RECIPE}`;
  return join(root, 'build', 'toolchain', key);
}

/** Returns the cached toolchain for these versions, or undefined when it has not been built (or is incomplete). */
export function cachedToolchain(
  root: string,
  nodeSpec: string,
  betterSqlite3Version: string,
): Toolchain | undefined {
  const dir = toolchainDir(root, nodeSpec, betterSqlite3Version);
  const manifestFile = join(dir, 'toolchain.json');
  if (!existsSync(manifestFile)) return undefined;
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Manifest;
  const nodeBinary = resolve(dir, manifest.nodeBinary);
  const addon = resolve(dir, manifest.addon);
  if (!existsSync(nodeBinary) || !existsSync(addon)) return undefined;
  const { nodeVersion, headersVersion } = manifest;
  return {
    nodeBinary,
    nodeVersion,
    addon,
    headersVersion,
    betterSqlite3Version,
    dir,
    reused: true,
  };
}

/**
 * Returns the toolchain, building it first when missing: `npm install node@<nodeSpec>` and a from-source build of
 * better-sqlite3 in a staging folder that is renamed into place when complete (so an interrupted or concurrent build
 * never leaves a half-made toolchain behind). Never touches the project's node_modules. Throws on failure.
 */
export async function ensureToolchain(
  root: string,
  nodeSpec: string,
  log: (line: string) => void,
): Promise<Toolchain> {
  const betterSqlite3Version = projectBetterSqlite3Version(root);
  const cached = cachedToolchain(root, nodeSpec, betterSqlite3Version);
  if (cached) return cached;
  const dir = toolchainDir(root, nodeSpec, betterSqlite3Version);
  const staging = join(root, 'build', 'toolchain', `.staging-${process.pid}-${Date.now()}`);
  mkdirSync(staging, { recursive: true });
  try {
    log(`toolchain: npm install node@${nodeSpec} (build-only, in ${relative(root, staging)})`);
    const node = await installNode(join(staging, 'node'), nodeSpec);
    const headers = await addonHeaders(join(staging, 'headers'), node);
    log(
      `toolchain: node ${node.version}; compiling better-sqlite3 ${betterSqlite3Version} against node ${headers.version} headers`,
    );
    const addon = await buildAddon(
      join(staging, 'better-sqlite3'),
      betterSqlite3Version,
      headers.dir,
      log,
    );
    await checkAddon(node.binary, join(staging, 'better-sqlite3'), log);
    keepOnly(staging, { node: node.binary, 'better_sqlite3.node': addon });
    const manifest: Manifest = {
      nodeSpec,
      nodeVersion: node.version,
      headersVersion: headers.version,
      betterSqlite3Version,
      nodeBinary: 'node',
      addon: 'better_sqlite3.node',
    };
    writeFileSync(join(staging, 'toolchain.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    publish(staging, dir);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  const built = cachedToolchain(root, nodeSpec, betterSqlite3Version);
  if (!built) throw new Error(`build: toolchain missing from ${dir} after building it`);
  return { ...built, reused: false };
}

/** Moves each source file to `staging/<name>` and removes everything else in staging (npm trees, headers, objects). */
function keepOnly(staging: string, keep: Record<string, string>): void {
  const kept = join(staging, '.kept');
  mkdirSync(kept);
  for (const [name, source] of Object.entries(keep)) renameSync(source, join(kept, name));
  for (const entry of readdirSync(staging))
    if (entry !== '.kept') rmSync(join(staging, entry), { recursive: true, force: true });
  for (const name of Object.keys(keep)) renameSync(join(kept, name), join(staging, name));
  rmSync(kept, { recursive: true });
}

/** Renames the finished staging folder to `dir`; when another build got there first, keeps theirs. */
function publish(staging: string, dir: string): void {
  try {
    renameSync(staging, dir);
  } catch (error) {
    if (!existsSync(join(dir, 'toolchain.json'))) throw error;
  }
}

/** Installs the npm `node` package (whose preinstall fetches node-<platform>-<arch>) into `dir`. */
async function installNode(
  dir: string,
  nodeSpec: string,
): Promise<{ binary: string; version: string; headersDir: string }> {
  mkdirSync(dir, { recursive: true });
  // npm 11 runs a dependency's install scripts only when allowScripts lists it; `node` needs its preinstall.
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ private: true, allowScripts: { node: true } }),
  );
  await runOrThrow('npm', ['install', '--no-audit', '--no-fund', `node@${nodeSpec}`], { cwd: dir });
  const binary = join(dir, 'node_modules', 'node', 'bin', 'node');
  const version = (await runOrThrow(binary, ['--version'])).trim();
  const wantedMajor = nodeSpec.split('.')[0];
  if (version.replace(/^v/, '').split('.')[0] !== wantedMajor) {
    throw new Error(`build: npm's node@${nodeSpec} gave ${version}`);
  }
  const candidates = [
    join(dir, 'node_modules', 'node', 'node_modules', PLATFORM_PACKAGE),
    join(dir, 'node_modules', PLATFORM_PACKAGE),
  ];
  const headersDir = candidates.find((c) =>
    existsSync(join(c, 'include', 'node', 'node_version.h')),
  );
  if (!headersDir) throw new Error(`build: no include/node headers in ${candidates.join(' or ')}`);
  return { binary, version, headersDir };
}

/** Returns the headers to compile the addon against: ADDON_HEADERS' pinned version for this major, else the runtime's. */
async function addonHeaders(
  dir: string,
  node: { version: string; headersDir: string },
): Promise<{ version: string; dir: string }> {
  const runtime = node.version.replace(/^v/, '');
  const pinned = ADDON_HEADERS[runtime.split('.')[0] ?? ''];
  if (!pinned || pinned === runtime) return { version: runtime, dir: node.headersDir };
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true }));
  await runOrThrow('npm', ['install', '--no-audit', '--no-fund', `${PLATFORM_PACKAGE}@${pinned}`], {
    cwd: dir,
  });
  const headersDir = join(dir, 'node_modules', PLATFORM_PACKAGE);
  if (!existsSync(join(headersDir, 'include', 'node', 'node_version.h')))
    throw new Error(`build: no headers in ${headersDir}`);
  return { version: pinned, dir: headersDir };
}

/** Installs better-sqlite3@version into `dir`, compiled from source against the headers in `nodedir`. */
async function buildAddon(
  dir: string,
  version: string,
  nodedir: string,
  log: (line: string) => void,
): Promise<string> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ private: true, allowScripts: { 'better-sqlite3': true } }),
  );
  // The env settings outrank ~/.npmrc (which points nodedir at the machine's Node 20). Building from source also keeps
  // prebuild-install from trying to download a prebuilt addon.
  const env = { ...process.env, npm_config_nodedir: nodedir, npm_config_build_from_source: 'true' };
  const started = Date.now();
  await runOrThrow(
    'npm',
    ['install', '--no-audit', '--no-fund', '--foreground-scripts', `better-sqlite3@${version}`],
    {
      cwd: dir,
      env,
    },
  );
  log(`toolchain: better-sqlite3 compiled in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const addon = join(
    dir,
    'node_modules',
    'better-sqlite3',
    'build',
    'Release',
    'better_sqlite3.node',
  );
  if (!existsSync(addon)) throw new Error(`build: better-sqlite3 built no addon at ${addon}`);
  return addon;
}

// Loads the addon under the new Node (an ABI mismatch fails here), then prepares many statements and lets the GC
// collect them between callbacks: with the ObjectWrap regression above this aborts within milliseconds.
const ADDON_CHECK = `
const Database = require('better-sqlite3');
const db = new Database(':memory:');
let round = 0;
function step() {
  for (let i = 0; i < 500; i++) db.prepare('SELECT ' + (i % 97) + ' AS v').get();
  const junk = [];
  for (let i = 0; i < 20000; i++) junk.push({ i, s: 'x'.repeat(20) });
  if (++round < 200) return setImmediate(step);
  console.log(db.prepare('SELECT sqlite_version() AS v').get().v, process.versions.modules);
}
step();
`;

/** Fails the build when the new addon does not load, or crashes when its statements are garbage collected. */
async function checkAddon(
  nodeBinary: string,
  dir: string,
  log: (line: string) => void,
): Promise<void> {
  const output = await runOrThrow(nodeBinary, ['-e', ADDON_CHECK], {
    cwd: dir,
    timeoutMs: 120_000,
  });
  const [sqlite, abi] = output.trim().split(' ');
  log(
    `toolchain: addon loads and survives GC of statements under the new node (SQLite ${sqlite ?? '?'}, NODE_MODULE_VERSION ${abi ?? '?'})`,
  );
}

/**
 * Returns why the executable cannot be built on this machine, or undefined when it can: a cached toolchain is enough;
 * otherwise npm must reach the registry's `node` package and a C++ toolchain (c++, make, python3) must exist.
 */
export async function buildBlocker(root: string, nodeSpec: string): Promise<string | undefined> {
  if (!existsSync(join(root, 'node_modules', 'better-sqlite3', 'package.json')))
    return 'node_modules is not installed';
  if (cachedToolchain(root, nodeSpec, projectBetterSqlite3Version(root))) return undefined;
  for (const tool of ['c++', 'make', 'python3']) {
    const found = await run('sh', ['-c', `command -v ${tool}`], { timeoutMs: 10_000 });
    if (found.code !== 0) return `no ${tool} on PATH to compile better-sqlite3`;
  }
  const view = await run('npm', ['view', `node@${nodeSpec}`, 'version'], { timeoutMs: 60_000 });
  if (view.code !== 0)
    return `the npm registry's node@${nodeSpec} package is not reachable (npm view failed)`;
  return undefined;
}
