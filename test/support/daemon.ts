// Runs `feedsub` as a child process for end-to-end tests: the bundle of src/main.ts (./bundle.ts), or with `source`
// src/main.ts itself under tsx's loader, as `make serve` runs it; every child is killed by PID.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { heapFlags } from '../../src/heap.ts';
import { feedsubBundle } from './bundle.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const MAIN = `${ROOT}src/main.ts`;
// `node --import <tsx's loader>` runs the server in this one process. The tsx command runs it in a child of its own and,
// when the child does not acknowledge a relayed SIGTERM within 30 ms (a busy machine), SIGKILLs it: the graceful stop
// under test would then never run.
/** Node's arguments before src/main.ts: tsx's loader, and the heap flags of server.heap_limit_mb's default as
 *  `make serve` gives them: Node 20 cannot restart itself with them. */
export const NODE_ARGS = [
  ...heapFlags(loadConfig({ env: {} }).server.heap_limit_mb),
  '--import',
  import.meta.resolve('tsx'),
];
const BUNDLED = [...heapFlags(loadConfig({ env: {} }).server.heap_limit_mb), await feedsubBundle()];

/** Node's arguments before feedsub's own: the bundle, or with `source` src/main.ts under tsx. */
export function feedsubArgs(source = false): string[] {
  return source ? [...NODE_ARGS, MAIN] : BUNDLED;
}

export type RunOptions = {
  /** Run src/main.ts under tsx (development mode) rather than the bundle. */
  source?: boolean;
};

/** Runs a one-shot command to completion. */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  opts: RunOptions = {},
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [...feedsubArgs(opts.source), ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Runs a one-shot command to completion without blocking this process, so its HTTP servers keep answering and its
 *  keep-alive sockets do not go stale meanwhile; killed after `timeoutMs`, which then shows as status null. */
export function runCliAsync(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 60_000,
  opts: RunOptions = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...feedsubArgs(opts.source), ...args],
      { env: { ...process.env, ...env }, timeout: timeoutMs },
      (err, stdout, stderr) => {
        const status = err ? (typeof err.code === 'number' ? err.code : null) : 0;
        resolve({ status, stdout, stderr });
      },
    );
  });
}

/** A free TCP port on 127.0.0.1 (bound then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export type Daemon = {
  url: string;
  child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code once it has exited. */
  exited: Promise<number | null>;
  /** Sends `signal` to the server and resolves with the exit code; SIGKILLs the group if it has not exited within
   *  20 s, so a cleanup never hangs. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** SIGKILLs the whole process group (the server and any thread or child it started) and resolves once it exited. */
  kill(): Promise<void>;
};

/** Starts `feedsub serve` in its own process group and resolves once /healthz answers 200 (bounded wait). */
export async function startDaemon(opts: {
  dataDir: string;
  env?: Record<string, string>;
  args?: string[];
  timeoutMs?: number;
  /** The port to listen on (from freePort()), when the caller must know it first (server.public_url); else a free one. */
  port?: number;
  /** Run src/main.ts under tsx (development mode) rather than the bundle. */
  source?: boolean;
}): Promise<Daemon> {
  const port = opts.port ?? (await freePort());
  const child = spawn(
    process.execPath,
    [
      ...feedsubArgs(opts.source),
      'serve',
      '--port',
      String(port),
      '--data-dir',
      opts.dataDir,
      ...(opts.args ?? []),
    ],
    {
      env: { ...process.env, FEEDSUB_LOG_FORMAT: 'json', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  // 'close', not 'exit': the process may exit before its last lines are read from the pipes, and callers read output()
  // once it has.
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code) => resolve(code)),
  );
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  const daemon: Daemon = {
    url: `http://127.0.0.1:${port}`,
    child,
    exited,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (!gone()) child.kill(signal);
      const force = setTimeout(() => {
        void daemon.kill();
      }, 20_000);
      try {
        return await exited;
      } finally {
        clearTimeout(force);
      }
    },
    async kill() {
      if (!gone() && child.pid) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          /* the group has already exited */
        }
      }
      await exited;
    },
  };
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  for (;;) {
    if (gone()) throw new Error(`feedsub exited early (${child.exitCode}): ${out}`);
    try {
      if (
        (await fetch(`${daemon.url}/healthz`, { signal: AbortSignal.timeout(1000) })).status === 200
      )
        return daemon;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      await daemon.kill();
      throw new Error(`feedsub did not become healthy: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** For a describe block of command-line tests: `tempDir()` makes a fresh data directory, and a test pushes the daemons
 *  it starts onto `daemons`; after the block every daemon is killed and every directory removed. Call it inside the
 *  describe, so the hook is the block's. */
export function cliScratch(): { tempDir: () => string; daemons: Daemon[] } {
  const dirs: string[] = [];
  const daemons: Daemon[] = [];
  after(async () => {
    await Promise.all(daemons.map((d) => d.kill()));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return {
    tempDir: () => {
      const d = mkdtempSync(join(tmpdir(), 'feedsub-cli-'));
      dirs.push(d);
      return d;
    },
    daemons,
  };
}
