// The real `feedsub serve` for the bench's daemon phases: a child process with a TOML config in its own directory,
// keys made with the CLI, an API client over real HTTP, its memory read from /proc, and a stop by its PID.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../src/config.ts';
import { heapFlags, MALLOC_ARENA_MAX } from '../../src/heap.ts';
import { Agent, request } from 'undici';
import { freePort } from '../../test/support/daemon.ts';

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;
// One process (node --import tsx), as `make serve` runs it, so the PID we read and signal is the server itself.
// As `make serve` starts it: with the heap flags of server.heap_limit_mb's default and the malloc arena cap (Node 20
// cannot restart itself with them; the executable does).
const FROM_SOURCE = [
  process.execPath,
  ...heapFlags(loadConfig({ env: {} }).server.heap_limit_mb),
  '--import',
  import.meta.resolve('tsx'),
  MAIN,
];
const MiB = 1024 * 1024;

/** A config section: key → TOML value (number, boolean or string). */
export type Sections = Record<string, Record<string, number | boolean | string>>;

/** One application's key and an API client speaking for it. */
export type Tenant = {
  key: string;
  get: (path: string) => Promise<{ status: number; body: unknown }>;
  post: (path: string, body: unknown) => Promise<{ status: number; body: unknown }>;
  delete: (path: string) => Promise<{ status: number; body: unknown }>;
};

/** The running daemon. */
export type Serve = {
  url: string;
  pid: number;
  tenants: Record<string, Tenant>;
  /** VmRSS and VmHWM (peak) of the process, in MiB. */
  memory: () => { rssMiB: number; peakMiB: number };
  /** Resets VmHWM to the current RSS (Linux clear_refs 5); false when the kernel refuses. */
  resetPeak: () => boolean;
  /** SIGTERM, then SIGKILL after 15 s; removes its directory. */
  stop: () => Promise<void>;
};

/** Writes `sections` as config.toml under `dir`, creates one key per application name with `feedsub keys create`,
 *  starts `feedsub serve` and resolves once /healthz answers (within 60 s). It listens on `sections.server.port` when
 *  given (so a config may name its own URL, e.g. server.public_url), else on a free port. `executable`: a built feedsub
 *  instead of the sources under tsx. */
export async function startServe(
  dir: string,
  sections: Sections,
  applications: string[],
  executable?: string,
): Promise<Serve> {
  const [command, ...args] = executable ? [executable] : FROM_SOURCE;
  mkdirSync(dir, { recursive: true });
  const port = Number(sections.server?.port ?? (await freePort()));
  const config = join(dir, 'config.toml');
  writeFileSync(
    config,
    toToml({
      ...sections,
      server: { host: '127.0.0.1', port, ...sections.server },
      storage: { data_dir: join(dir, 'data') },
      log: { level: 'info', format: 'json', ...sections.log }, // as a service runs it
    }),
  );
  const keys = applications.map((app) => createKey([command!, ...args], config, app));
  const child = spawn(command!, [...args, 'serve', '--config', config], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: executable ? process.env : { ...process.env, MALLOC_ARENA_MAX },
  });
  let errors = '';
  child.stderr!.on('data', (d: Buffer) => {
    if (errors.length < 64 * 1024) errors += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const agent = new Agent({ connections: 8 });
  const serve: Serve = {
    url,
    pid: child.pid!,
    tenants: Object.fromEntries(applications.map((app, i) => [app, tenant(url, keys[i]!, agent)])),
    memory: () => memoryOf(child.pid!),
    resetPeak: () => resetPeak(child.pid!),
    stop: async () => {
      await agent.close();
      await stopChild(child, exited);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await healthy(url, child, 60_000);
  } catch (err) {
    await serve.stop();
    throw new Error(`bench: unable to start feedsub serve: ${String(err)}\n${errors}`);
  }
  return serve;
}

/** `feedsub keys create --app NAME --json` against the config's data dir; returns the key. */
function createKey([command, ...args]: string[], config: string, app: string): string {
  const r = spawnSync(
    command!,
    [...args, 'keys', 'create', '--app', app, '--json', '--config', config],
    { encoding: 'utf8', timeout: 60_000 },
  );
  if (r.status !== 0) throw new Error(`bench: unable to create a key for ${app}: ${r.stderr}`);
  return (JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { key: string }).key;
}

function tenant(url: string, key: string, agent: Agent): Tenant {
  const call = async (method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => {
    const r = await request(url + path, {
      method,
      dispatcher: agent,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const text = await r.body.text();
    return { status: r.statusCode, body: text ? (JSON.parse(text) as unknown) : null };
  };
  return {
    key,
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body),
    delete: (path) => call('DELETE', path),
  };
}

async function healthy(url: string, child: ChildProcess, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error('it exited');
    try {
      const r = await request(`${url}/healthz`, { headersTimeout: 1000, bodyTimeout: 1000 });
      await r.body.dump();
      if (r.statusCode === 200) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`not healthy within ${ms} ms`);
    await sleep(100);
  }
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const late = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(late);
}

function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { rssMiB: (kib('VmRSS') * 1024) / MiB, peakMiB: (kib('VmHWM') * 1024) / MiB };
}

function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

function toToml(sections: Sections): string {
  return Object.entries(sections)
    .map(
      ([name, values]) =>
        `[${name}]\n${Object.entries(values)
          .map(([k, v]) => `${k} = ${typeof v === 'string' ? JSON.stringify(v) : String(v)}`)
          .join('\n')}\n`,
    )
    .join('\n');
}
