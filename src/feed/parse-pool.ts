// Parses large feed bodies on worker threads so the event loop (API, loops) stays responsive.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { FeedParseError, parseFeed } from './parse.ts';
import type { ParseReply, ParseRequest } from './parse-worker.ts';
import type { ParsedFeed, ParseOptions } from './types.ts';

export type ParsePoolOptions = {
  size?: number; // workers; default 1–2 depending on cores
  thresholdBytes?: number; // bodies up to this length parse inline; default 1 MiB
  timeoutMs?: number; // a parse running longer is killed and rejected; default 60 s
  spawn?: () => Worker; // how to start a worker whose entry calls runParseWorker(); default: the .ts/.js beside this file
};

export type ParsePool = {
  parse(text: string, opts: ParseOptions): Promise<ParsedFeed>;
  close(): Promise<void>;
  /** 'worker' while workers serve large bodies; 'inline' when none could be started. */
  readonly mode: 'worker' | 'inline';
  /** Resolves once every worker has started (or the pool fell back to inline). */
  ready(): Promise<'worker' | 'inline'>;
};

type Job = { req: ParseRequest; resolve: (f: ParsedFeed) => void; reject: (e: Error) => void; timer?: NodeJS.Timeout };
type Slot = { worker: Worker; ready: boolean; job: Job | null };

/** Parses off the main thread when text.length > thresholdBytes (default 1 MiB), in a pool of
 *  worker_threads (default size 1-2); small bodies parse inline. parse() rejects with
 *  FeedParseError like parseFeed. close() terminates workers. Works under tsx (dev/tests). */
export function createParsePool(opts: ParsePoolOptions = {}): ParsePool {
  const size = Math.max(1, opts.size ?? Math.min(2, Math.max(1, availableParallelism() - 1)));
  const threshold = opts.thresholdBytes ?? 1024 * 1024;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const spawn = opts.spawn ?? defaultSpawn;
  const slots: Slot[] = [];
  const queue: Job[] = [];
  const readyWaiters: Array<() => void> = [];
  let inline = false;
  let closed = false;
  let nextId = 1;

  const settleReady = () => {
    if (inline || slots.every((s) => s.ready)) readyWaiters.splice(0).forEach((w) => w());
  };
  const fallBackInline = () => {
    inline = true;
    for (const s of slots.splice(0)) {
      if (s.job) queue.unshift(s.job);
      void s.worker.terminate();
    }
    for (const job of queue.splice(0)) runInline(job);
    settleReady();
  };
  const finish = (slot: Slot, settle: (job: Job) => void) => {
    const job = slot.job;
    slot.job = null;
    slot.worker.unref();
    if (job) {
      clearTimeout(job.timer);
      settle(job);
    }
  };
  const dispatch = () => {
    for (const slot of slots) {
      if (slot.job || queue.length === 0) continue;
      const job = queue.shift()!;
      slot.job = job;
      slot.worker.ref();
      job.timer = setTimeout(() => {
        finish(slot, (j) => j.reject(new FeedParseError(`parse: timed out after ${timeoutMs} ms`)));
        replace(slot);
      }, timeoutMs);
      slot.worker.postMessage(job.req);
    }
  };
  const replace = (slot: Slot) => {
    void slot.worker.terminate();
    const at = slots.indexOf(slot);
    if (at !== -1) slots.splice(at, 1);
    if (!closed && !inline) start();
    dispatch();
  };
  const onReply = (slot: Slot, reply: ParseReply) => {
    if (reply.type === 'ready') {
      slot.ready = true;
      settleReady();
      return;
    }
    if (slot.job?.req.id !== reply.id) return;
    if (reply.type === 'result') finish(slot, (j) => j.resolve(reply.feed));
    else finish(slot, (j) => j.reject(reply.parseError ? new FeedParseError(reply.message) : new Error(reply.message)));
    dispatch();
  };
  const onDeath = (slot: Slot, why: string) => {
    if (closed || !slots.includes(slot)) return;
    if (!slot.ready) return fallBackInline(); // the worker never started: this runtime cannot host it
    finish(slot, (j) => j.reject(new FeedParseError(`parse: worker ${why}`)));
    replace(slot);
  };
  const start = () => {
    let worker: Worker;
    try {
      worker = spawn();
    } catch {
      return fallBackInline();
    }
    const slot: Slot = { worker, ready: false, job: null };
    slots.push(slot);
    worker.unref();
    worker.on('message', (m: ParseReply) => onReply(slot, m));
    worker.on('error', (e) => onDeath(slot, `failed: ${e.message}`));
    worker.on('exit', (code) => onDeath(slot, `exited with code ${code}`));
  };

  for (let i = 0; i < size && !inline; i++) start();
  return {
    get mode() {
      return inline ? 'inline' : 'worker';
    },
    ready: () => new Promise((resolve) => {
      readyWaiters.push(() => resolve(inline ? 'inline' : 'worker'));
      settleReady();
    }),
    parse(text, parseOpts) {
      if (closed) return Promise.reject(new Error('parse pool: closed'));
      return new Promise<ParsedFeed>((resolve, reject) => {
        const job: Job = { req: { id: nextId++, text, opts: { baseUrl: parseOpts.baseUrl, contentLocation: parseOpts.contentLocation ?? null } }, resolve, reject };
        if (inline || text.length <= threshold) return runInline(job);
        queue.push(job);
        dispatch();
      });
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error('parse pool: closed'));
      await Promise.all(slots.splice(0).map(async (s) => {
        if (s.job) finish(s, (j) => j.reject(new Error('parse pool: closed')));
        await s.worker.terminate();
      }));
      settleReady();
    },
  };
}

function runInline(job: Job): void {
  try {
    job.resolve(parseFeed(job.req.text, job.req.opts));
  } catch (err) {
    job.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

// Starts parse-worker beside this module. Under tsx (a .ts source tree) the worker registers tsx's
// loader itself, because Node 20 workers do not inherit the --import hooks; a bundled build passes
// its own `spawn` instead (import.meta.url does not point at a worker file there).
function defaultSpawn(): Worker {
  const self = import.meta.url;
  if (!self) throw new Error('parse pool: no module URL to locate the worker');
  const workerUrl = new URL(`./parse-worker${self.endsWith('.ts') ? '.ts' : '.js'}`, self).href;
  const register = self.endsWith('.ts')
    ? `await (await import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})).register();`
    : '';
  const code = `(async () => { ${register} (await import(${JSON.stringify(workerUrl)})).runParseWorker(); })()`;
  return new Worker(code, { eval: true });
}
