// Parses large feed bodies on worker threads so the event loop (API, loops) stays responsive.
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { startWorkerThread } from '../assets.ts';
import { FeedParseError, parseFeed } from './parse.ts';
import type { ParseReply, ParseRequest } from './parse-worker.ts';
import type { ParsedFeed, ParseOptions } from './types.ts';

export type ParsePoolOptions = {
  size?: number; // workers; default 1–2 depending on cores
  thresholdBytes?: number; // bodies up to this length parse inline; default 1 MiB
  timeoutMs?: number; // a parse running longer is killed and rejected; default 60 s
  spawn?: () => Worker; // how to start a worker whose entry calls runParseWorker(); default: startWorkerThread('parse')
  sanitizeHtml?: boolean; // delivery.sanitize_html, for requests that do not say; default true
};

export type ParsePool = {
  parse(text: string, opts: ParseOptions): Promise<ParsedFeed>;
  close(): Promise<void>;
  /** 'worker' while workers serve large bodies; 'inline' when none could be started. */
  readonly mode: 'worker' | 'inline';
  /** Resolves once every worker has started (or the pool fell back to inline). */
  ready(): Promise<'worker' | 'inline'>;
};

type Job = {
  req: ParseRequest;
  resolve: (f: ParsedFeed) => void;
  reject: (e: Error) => void;
  timer?: NodeJS.Timeout;
};
type Slot = { worker: Worker; ready: boolean; job: Job | null };

/** Parses off the main thread when text.length > thresholdBytes (default 1 MiB), in a pool of
 *  worker_threads (default size 1-2); small bodies parse inline. parse() rejects with
 *  FeedParseError like parseFeed. close() terminates workers. Works under tsx (dev/tests). */
export function createParsePool(opts: ParsePoolOptions = {}): ParsePool {
  return new WorkerPool(opts);
}

class WorkerPool implements ParsePool {
  readonly #threshold: number;
  readonly #timeoutMs: number;
  readonly #spawn: () => Worker;
  readonly #sanitizeHtml: boolean;
  readonly #slots: Slot[] = [];
  readonly #queue: Job[] = [];
  readonly #readyWaiters: Array<() => void> = [];
  #inline = false;
  #closed = false;
  #nextId = 1;

  constructor(opts: ParsePoolOptions) {
    const size = Math.max(1, opts.size ?? Math.min(2, Math.max(1, availableParallelism() - 1)));
    this.#threshold = opts.thresholdBytes ?? 1024 * 1024;
    this.#timeoutMs = opts.timeoutMs ?? 60_000;
    this.#spawn = opts.spawn ?? (() => startWorkerThread('parse'));
    this.#sanitizeHtml = opts.sanitizeHtml ?? true;
    for (let i = 0; i < size && !this.#inline; i++) this.#start();
  }

  get mode(): 'worker' | 'inline' {
    return this.#inline ? 'inline' : 'worker';
  }

  ready(): Promise<'worker' | 'inline'> {
    return new Promise((resolve) => {
      this.#readyWaiters.push(() => resolve(this.mode));
      this.#settleReady();
    });
  }

  parse(text: string, opts: ParseOptions): Promise<ParsedFeed> {
    if (this.#closed) return Promise.reject(new Error('parse pool: closed'));
    return new Promise<ParsedFeed>((resolve, reject) => {
      const req = {
        id: this.#nextId++,
        text,
        opts: {
          baseUrl: opts.baseUrl,
          contentLocation: opts.contentLocation ?? null,
          sanitizeHtml: opts.sanitizeHtml ?? this.#sanitizeHtml,
        },
      };
      const job: Job = { req, resolve, reject };
      if (this.#inline || text.length <= this.#threshold) return runInline(job);
      this.#queue.push(job);
      this.#dispatch();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.reject(new Error('parse pool: closed'));
    await Promise.all(
      this.#slots.splice(0).map(async (s) => {
        this.#finish(s, (j) => j.reject(new Error('parse pool: closed')));
        await s.worker.terminate();
      }),
    );
    this.#settleReady();
  }

  #start(): void {
    let worker: Worker;
    try {
      worker = this.#spawn();
    } catch {
      return this.#fallBackInline();
    }
    const slot: Slot = { worker, ready: false, job: null };
    this.#slots.push(slot);
    worker.unref();
    worker.on('message', (m: ParseReply) => this.#onReply(slot, m));
    worker.on('error', (e) => this.#onDeath(slot, `failed: ${e.message}`));
    worker.on('exit', (code) => this.#onDeath(slot, `exited with code ${code}`));
  }

  #dispatch(): void {
    for (const slot of this.#slots) {
      const job = slot.job ? undefined : this.#queue.shift();
      if (!job) continue;
      slot.job = job;
      slot.worker.ref();
      job.timer = setTimeout(() => {
        this.#finish(slot, (j) =>
          j.reject(new FeedParseError(`parse: timed out after ${this.#timeoutMs} ms`)),
        );
        this.#replace(slot);
      }, this.#timeoutMs);
      job.timer.unref(); // the busy worker is ref'd; the timer alone must not hold the process open
      slot.worker.postMessage(job.req);
    }
  }

  #onReply(slot: Slot, reply: ParseReply): void {
    if (reply.type === 'ready') {
      slot.ready = true;
      return this.#settleReady();
    }
    if (slot.job?.req.id !== reply.id) return;
    if (reply.type === 'result') this.#finish(slot, (j) => j.resolve(reply.feed));
    else
      this.#finish(slot, (j) =>
        j.reject(reply.parseError ? new FeedParseError(reply.message) : new Error(reply.message)),
      );
    this.#dispatch();
  }

  #onDeath(slot: Slot, why: string): void {
    if (this.#closed || !this.#slots.includes(slot)) return;
    if (!slot.ready) return this.#fallBackInline(); // the worker never started: this runtime cannot host it
    this.#finish(slot, (j) => j.reject(new FeedParseError(`parse: worker ${why}`)));
    this.#replace(slot);
  }

  #finish(slot: Slot, settle: (job: Job) => void): void {
    const job = slot.job;
    slot.job = null;
    slot.worker.unref();
    if (!job) return;
    clearTimeout(job.timer);
    settle(job);
  }

  #replace(slot: Slot): void {
    void slot.worker.terminate();
    const at = this.#slots.indexOf(slot);
    if (at !== -1) this.#slots.splice(at, 1);
    if (!this.#closed && !this.#inline) this.#start();
    this.#dispatch();
  }

  #fallBackInline(): void {
    this.#inline = true;
    for (const s of this.#slots.splice(0)) {
      if (s.job) {
        clearTimeout(s.job.timer);
        this.#queue.unshift(s.job);
      }
      void s.worker.terminate();
    }
    for (const job of this.#queue.splice(0)) runInline(job);
    this.#settleReady();
  }

  #settleReady(): void {
    if (this.#inline || this.#slots.every((s) => s.ready))
      this.#readyWaiters.splice(0).forEach((w) => w());
  }
}

function runInline(job: Job): void {
  try {
    job.resolve(parseFeed(job.req.text, job.req.opts));
  } catch (err) {
    job.reject(err instanceof Error ? err : new Error(String(err)));
  }
}
