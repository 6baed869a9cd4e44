// make bench-scale, the child processes: the feed origin, `feedsub serve`, `feedsub poll --once` and `feedsub storage
// copy`, each started as `node --import tsx` (so the PID is the process measured), its peak RSS read from
// /proc/<pid>/status, stopped by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { request } from 'undici';
// `serve` and `poll --once` run with the heap flags and malloc arena cap `make serve` passes (Node 20 cannot restart
// itself with them).
import { MALLOC_ARENA_MAX } from '../../src/heap.ts';
import { NODE_ARGS } from '../../test/support/daemon.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
/** The origin is a plain script: tsx's loader only, V8's own heap. */
const ORIGIN_ARGS = ['--import', import.meta.resolve('tsx')];
const SAMPLE_MS = 100;

/** A child process whose memory is sampled until it exits. */
export type Child = {
  pid: number;
  /** The highest VmHWM read so far (the kernel's peak resident set), in MiB. */
  peakMiB(): number;
  /** Its resident set now, in MiB (0 once it has exited). */
  rssMiB(): number;
  /** Its write_bytes now (/proc/<pid>/io), or the last value read once it has exited. */
  writeBytes(): number;
  /** Everything it wrote to stderr (the last 64 KiB). */
  stderr(): string;
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
};

/** write_bytes of /proc/<pid>/io (`self` for this process): bytes the process caused to be written to storage,
 *  counted when pages are dirtied (so WAL writes and checkpoints count). A parent's own counter also holds the total
 *  of every child it has reaped, writes at exit included: that is how a child's whole total is read (selfWriteBytes
 *  before it starts and after it exits). */
export function writeBytesOf(pid: number | 'self'): number | undefined {
  try {
    const m = /^write_bytes:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Reads one `Vm…:  123 kB` line of /proc/<pid>/status in MiB; 0 when the process is gone. */
function statusMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(
      readFileSync(`/proc/${pid}/status`, 'utf8'),
    );
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

function start(
  args: string[],
  env: Record<string, string> = {},
  command = process.execPath,
): Child & { child: ChildProcess } {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid!;
  let peak = 0;
  let written = 0;
  const writeBytes = () => (written = writeBytesOf(pid) ?? written);
  const sample = setInterval(() => {
    peak = Math.max(peak, statusMiB(pid, 'VmHWM'));
    writeBytes();
  }, SAMPLE_MS);
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-65_536);
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      clearInterval(sample);
      resolve(code);
    }),
  );
  const stop = async (graceMs = 20_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    process.kill(pid, 'SIGTERM');
    const timer = setTimeout(() => process.kill(pid, 'SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return {
    child,
    pid,
    peakMiB: () => (peak = Math.max(peak, statusMiB(pid, 'VmHWM'))),
    rssMiB: () => statusMiB(pid, 'VmRSS'),
    writeBytes,
    stderr: () => err,
    exited,
    stop,
  };
}

/** The feed origin and webhook receiver (scripts/bench-origin.ts) with `feeds` feeds, small ones (5–10 KB) unless
 *  `size` says `large` (~50 KB); its base URL. */
export async function startOrigin(
  feeds: number,
  size: 'small' | 'large' = 'small',
): Promise<{ base: string; process: Child }> {
  const c = start([...ORIGIN_ARGS, `${ROOT}scripts/bench-origin.ts`, String(feeds), size]);
  const port = await withDeadline(
    new Promise<string>((resolve) =>
      createInterface({ input: c.child.stdout! }).once('line', resolve),
    ),
    30_000,
    'the origin did not start',
  );
  return { base: `http://127.0.0.1:${port.trim()}`, process: c };
}

/** `feedsub serve --config <file>` with `env` (FEEDSUB_* settings over the file's), resolved once /healthz answers 200
 *  (within 60 s). */
export async function startServe(
  configFile: string,
  url: string,
  env: Record<string, string> = {},
): Promise<Child> {
  const c = start([...NODE_ARGS, `${ROOT}src/main.ts`, 'serve', '--config', configFile], {
    MALLOC_ARENA_MAX,
    ...env,
  });
  c.child.stdout!.resume();
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (c.child.exitCode !== null) break;
    try {
      const r = await request(`${url}/healthz`);
      await r.body.dump();
      if (r.statusCode === 200) return c;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  await c.stop(1000);
  throw new Error(`bench-scale: unable to start serve\n${c.stderr()}`);
}

/** What one `poll --once` did: its summary line, time, peak RSS, and bytes written (its whole total, exit included;
 *  `sampledBytes` is the last /proc/<pid>/io read before it exited, so the difference is what it wrote at close). */
export type PollRun = {
  summary: string;
  ms: number;
  peakMiB: number;
  code: number | null;
  writeBytes: number;
  sampledBytes: number;
};

/** Runs `feedsub poll --once --force --config <file>` (beside the running serve, whose lock it would otherwise
 *  respect) to its end (at most `timeoutMs`): the sources under tsx, or the built `executable` when given. Its
 *  write_bytes are this process's counter after it was reaped less before it started: no other child exits meanwhile
 *  (serve and the origin run on). */
export async function pollOnce(
  configFile: string,
  timeoutMs: number,
  executable?: string,
): Promise<PollRun> {
  const t = performance.now();
  const before = writeBytesOf('self') ?? 0;
  const args = ['poll', '--once', '--force', '--config', configFile];
  const c = executable
    ? start(args, { MALLOC_ARENA_MAX }, executable)
    : start([...NODE_ARGS, `${ROOT}src/main.ts`, ...args], { MALLOC_ARENA_MAX });
  let out = '';
  c.child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const code = await exitOf(c, timeoutMs);
  const writeBytes = (writeBytesOf('self') ?? 0) - before;
  if (code !== 0 || process.env.SCALE_VERBOSE)
    console.error(`bench-scale: poll --once exited ${code}\n${c.stderr().slice(-4000)}`);
  const ms = performance.now() - t;
  return {
    summary: out.trim(),
    ms,
    peakMiB: c.peakMiB(),
    code,
    writeBytes,
    sampledBytes: c.writeBytes(),
  };
}

/** Runs `feedsub storage copy --to <url> --config <file>` to its end (at most `timeoutMs`): the database of the config's
 *  data directory copied into the empty PostgreSQL database at `url`. Resolves with its time and peak RSS; throws with
 *  its stderr when it fails. */
export async function storageCopy(
  configFile: string,
  url: string,
  timeoutMs: number,
): Promise<{ ms: number; peakMiB: number }> {
  const args = [...NODE_ARGS, `${ROOT}src/main.ts`, 'storage', 'copy', '--to', url];
  const run = await runCommand(process.execPath, [...args, '--config', configFile], timeoutMs, {
    MALLOC_ARENA_MAX,
  });
  if (run.code !== 0)
    throw new Error(`bench-scale: storage copy exited ${run.code}\n${run.stderr.slice(-4000)}`);
  return run;
}

/** Runs `command` with `args` (and `env` over this process's environment) to its exit, stopping it once `timeoutMs`
 *  have passed: its time, exit code (null when stopped), peak RSS and the end of its stderr. Its stdout is read and
 *  dropped. */
export async function runCommand(
  command: string,
  args: string[],
  timeoutMs: number,
  env: Record<string, string> = {},
): Promise<{ ms: number; code: number | null; peakMiB: number; stderr: string }> {
  const t = performance.now();
  const c = start(args, env, command);
  c.child.stdout!.resume();
  const code = await exitOf(c, timeoutMs);
  return { ms: performance.now() - t, code, peakMiB: c.peakMiB(), stderr: c.stderr() };
}

/** Waits for `c` to exit, stopping it once `timeoutMs` have passed; its exit code (null when a signal ended it). */
async function exitOf(c: Child, timeoutMs: number): Promise<number | null> {
  const timer = setTimeout(() => void c.stop(5000), timeoutMs);
  try {
    return await c.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves as `promise` does, or rejects with `message` after `ms`. */
export async function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  message: string,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`bench-scale: ${message}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
