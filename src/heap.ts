// The V8 heap limit of a long-running command (server.heap_limit_mb): the flags it takes, whether the running process
// already has them, and how the process restarts itself in place (execve, same PID) when it does not; glibc's malloc
// arenas are capped in the same restart.
//
// Why a limit at all: V8 sizes its heap from the machine's memory (about 4 GB on a large box) and collects lazily below
// that, so a busy serve's heap fills up with garbage towards that size, with long pauses to collect it; capped, it
// stays flat.
// Why a restart: V8 reads the limit when the isolate is created; it cannot be lowered from JavaScript afterwards.
import { isSea } from 'node:sea';
import { getHeapStatistics } from 'node:v8';

/** The V8 flags for a heap limit of `limitMb`: the old generation's size, and a young generation's semi-space of 1/128
 *  of it (1 to 16 MB; V8's default is 16 MB), because three semi-spaces of 16 MB in each thread's heap would be most of
 *  the idle daemon's memory, while a young generation this size still collects a request's garbage in one scavenge. */
export function heapFlags(limitMb: number): string[] {
  const semiMb = Math.min(16, Math.max(1, Math.round(limitMb / 128)));
  return [`--max-old-space-size=${limitMb}`, `--max-semi-space-size=${semiMb}`];
}

/** How the process was started: Node's own flags (`process.execArgv`), the NODE_OPTIONS environment variable, and
 *  whether it is the single executable (whose argv[1] repeats the executable instead of naming a script). */
export type Runtime = {
  execPath: string;
  execArgv: readonly string[];
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  isSea: boolean;
  /** Node ≥ 22.15 replaces the process image in place (process.execve); Node 20 cannot. */
  canExec: boolean;
};

/** glibc's malloc keeps up to 8 arenas per core, one more whenever a thread finds the others locked, and each keeps the
 *  memory it once grew to. feedsub's threads (the event loop, the parse and checkpoint threads, V8's compilers,
 *  libuv's pool) make it grow several; capped at two, the daemon's peak RSS is lower. Set in the environment at the
 *  restart (glibc reads it when the process starts) unless the operator set it; other allocators (musl) ignore it. */
export const MALLOC_ARENA_MAX = '2';
const ARENA_ENV = 'MALLOC_ARENA_MAX';

export type HeapPlan =
  | { kind: 'keep'; reason: 'off' | 'applied' }
  | { kind: 'restart'; file: string; args: string[]; env: NodeJS.ProcessEnv }
  | { kind: 'cannot'; flags: string[] };

// V8 takes dashes or underscores in a flag's name.
const HEAP_FLAG = /^--max[-_](?:old|semi)[-_]space[-_]size(?:=|$)/;
/** Set in the environment of the restarted process: if the flags still do not show there, it never restarts again. */
export const RESTARTED_ENV = 'HEAP_RESTARTED_BY_FEEDSUB'; // not FEEDSUB_*: those are config keys

/** What to do for `limitMb` (0: leave the runtime alone): keep the process when its flags already say exactly this
 *  limit and its environment caps malloc's arenas, else restart it with them (the flags go through NODE_OPTIONS, which
 *  the single executable honours and which Node's command line would override, so the command line's own heap flags
 *  are dropped), or say it cannot. The arenas alone never make it say it cannot: they save memory, they bound nothing. */
export function planHeap(limitMb: number, runtime: Runtime): HeapPlan {
  if (limitMb === 0) return { kind: 'keep', reason: 'off' };
  const wanted = heapFlags(limitMb);
  const running = runningHeapFlags(runtime.execArgv, runtime.env.NODE_OPTIONS ?? '');
  const flagsApplied = wanted.every((flag) => running.includes(flag));
  const cannot = !runtime.canExec || runtime.env[RESTARTED_ENV] !== undefined;
  if (flagsApplied && (runtime.env[ARENA_ENV] !== undefined || cannot))
    return { kind: 'keep', reason: 'applied' };
  if (cannot) return { kind: 'cannot', flags: wanted };
  const options = (runtime.env.NODE_OPTIONS ?? '')
    .split(/\s+/)
    .filter((option) => option !== '' && !HEAP_FLAG.test(option));
  const script = runtime.isSea
    ? runtime.argv.slice(2)
    : [...runtime.execArgv.filter((arg) => !HEAP_FLAG.test(arg)), ...runtime.argv.slice(1)];
  return {
    kind: 'restart',
    file: runtime.execPath,
    args: [runtime.execPath, ...script],
    env: {
      ...runtime.env,
      NODE_OPTIONS: [...options, ...wanted].join(' '),
      [ARENA_ENV]: runtime.env[ARENA_ENV] ?? MALLOC_ARENA_MAX,
      [RESTARTED_ENV]: '1',
    },
  };
}

/** The heap flags in effect, last one of each kind winning as in Node: NODE_OPTIONS first, then the command line. */
function runningHeapFlags(execArgv: readonly string[], nodeOptions: string): string[] {
  const effective = new Map<string, string>();
  for (const option of [...nodeOptions.split(/\s+/), ...execArgv]) {
    const match = /^--max[-_](old|semi)[-_]space[-_]size=(\d+)$/.exec(option);
    if (match) effective.set(match[1]!, `--max-${match[1]!}-space-size=${match[2]!}`);
  }
  return [...effective.values()];
}

/** What `applyHeapLimit` found, when it returns (it does not return when it restarts the process). */
export type HeapOutcome = {
  /** V8's limit for the whole heap in effect now, in MiB (the old generation plus the young one). */
  effectiveMb: number;
  /** The flags that could not be applied (this Node.js cannot restart itself), or undefined. */
  notApplied: string[] | undefined;
};

type Execve = (file: string, args: string[], env: NodeJS.ProcessEnv) => never;

/** Applies `limitMb` to this process before it opens anything: returns at once when nothing is to change or nothing
 *  can; otherwise replaces the process image with the same command under the flags (same PID, same open stdio). */
export function applyHeapLimit(limitMb: number): HeapOutcome {
  const execve = (process as { execve?: Execve }).execve;
  const plan = planHeap(limitMb, {
    execPath: process.execPath,
    execArgv: process.execArgv,
    argv: process.argv,
    env: process.env,
    isSea: isSea(),
    canExec: typeof execve === 'function',
  });
  if (plan.kind === 'restart') execve!.call(process, plan.file, plan.args, plan.env);
  return {
    effectiveMb: Math.round(getHeapStatistics().heap_size_limit / 1024 / 1024),
    notApplied: plan.kind === 'cannot' ? plan.flags : undefined,
  };
}
