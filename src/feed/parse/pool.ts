// Reads fetched documents (decode, parse, key) on worker threads so the event loop (API, loops) stays responsive: only
// tiny bodies are read inline; the queue is bounded, every read ends by its fetch's deadline, and a worker whose heap
// passes its limit dies alone (the daemon does not).
import { availableParallelism } from 'node:os';
import type { ResourceLimits, Worker } from 'node:worker_threads';
import { startWorkerThread } from '../../assets.ts';
import {
  readDocument,
  type DocumentReply,
  type DocumentRequest,
  type ParseReply,
  type ParseRequest,
} from './read-document.ts';

export type ParsePoolOptions = {
  /** Worker threads; default: the cores but one, 1 to 4. */
  size?: number;
  /** Bodies up to this many bytes are read inline; default 16 KiB: below it a worker's round trip costs more than the
   *  read. */
  thresholdBytes?: number;
  /** Documents waiting for a worker, at most; past it a read is refused at once. Default 64. */
  maxQueued?: number;
  /** A worker's heap (old generation) in MiB; a document that needs more kills the worker, not the daemon. */
  heapMb?: number;
  /** How to start a worker whose entry calls runParseWorker(); default: startWorkerThread('parse'). */
  spawn?: (limits: ResourceLimits) => Worker;
  /** delivery.sanitize_html, for requests that do not say; default true. */
  sanitizeHtml?: boolean;
};

export type ParsePool = {
  /** Reads `doc` by `deadline` (a performance.now() time): inline when tiny, else on a worker. Takes ownership of
   *  `doc.bytes` (its ArrayBuffer is moved to the worker). Never rejects: a timeout, a full queue or a worker that
   *  died is an 'error' reply. */
  read(doc: DocumentRequest, deadline: number): Promise<DocumentReply>;
  close(): Promise<void>;
  /** 'worker' while workers serve large bodies; 'inline' when none could be started. */
  readonly mode: 'worker' | 'inline';
  /** Resolves once every worker has started (or the pool fell back to inline). */
  ready(): Promise<'worker' | 'inline'>;
};

type Job = {
  req: ParseRequest;
  transfer: ArrayBuffer[];
  resolve: (r: DocumentReply) => void;
  timer: NodeJS.Timeout;
};
type Slot = { worker: Worker; ready: boolean; job: Job | null; outOfMemory: boolean };

/** Creates the pool and starts its workers (they start in the background; ready() waits for them). */
export function createParsePool(opts: ParsePoolOptions = {}): ParsePool {
  return new WorkerPool(opts);
}

/** The default worker heap: a 15 MiB feed (poll.max_body_bytes) parses in about 60 MiB. */
export const DEFAULT_PARSE_HEAP_MB = 96;

class WorkerPool implements ParsePool {
  readonly #threshold: number;
  readonly #maxQueued: number;
  readonly #limits: ResourceLimits;
  readonly #spawn: (limits: ResourceLimits) => Worker;
  readonly #sanitizeHtml: boolean;
  readonly #slots: Slot[] = [];
  readonly #queue: Job[] = [];
  readonly #readyWaiters: Array<() => void> = [];
  #inline = false;
  #closed = false;
  #nextId = 1;

  constructor(opts: ParsePoolOptions) {
    const size = Math.max(1, opts.size ?? Math.min(4, Math.max(1, availableParallelism() - 1)));
    this.#threshold = opts.thresholdBytes ?? 16 * 1024;
    this.#maxQueued = opts.maxQueued ?? 64;
    const heapMb = opts.heapMb ?? DEFAULT_PARSE_HEAP_MB;
    this.#limits = { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: 16 };
    this.#spawn = opts.spawn ?? ((limits) => startWorkerThread('parse', undefined, limits));
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

  read(request: DocumentRequest, deadline: number): Promise<DocumentReply> {
    const sanitizeHtml = request.parse.sanitizeHtml ?? this.#sanitizeHtml;
    const doc = { ...request, parse: { ...request.parse, sanitizeHtml } };
    if (this.#closed) return Promise.resolve(failure('parse pool: closed'));
    if (this.#inline || doc.bytes.length <= this.#threshold)
      return Promise.resolve(readDocument(doc));
    if (this.#queue.length >= this.#maxQueued)
      return Promise.resolve(
        failure(`parse: ${this.#maxQueued} documents already wait to be read`),
      );
    return new Promise((resolve) => {
      const { bytes, transfer } = movable(doc.bytes);
      const job: Job = {
        req: { id: this.#nextId++, doc: { ...doc, bytes } },
        transfer,
        resolve,
        timer: setTimeout(() => this.#expire(job), Math.max(0, deadline - performance.now())),
      };
      job.timer.unref(); // a busy worker is ref'd; the timer alone must not hold the process open
      this.#queue.push(job);
      this.#dispatch();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) settle(job, failure('parse pool: closed'));
    await Promise.all(
      this.#slots.splice(0).map(async (s) => {
        this.#finish(s, failure('parse pool: closed'));
        await s.worker.terminate();
      }),
    );
    this.#settleReady();
  }

  #start(): void {
    let worker: Worker;
    try {
      worker = this.#spawn(this.#limits);
    } catch {
      return this.#fallBackInline();
    }
    const slot: Slot = { worker, ready: false, job: null, outOfMemory: false };
    this.#slots.push(slot);
    worker.unref();
    worker.on('message', (m: ParseReply) => this.#onReply(slot, m));
    worker.on('error', (e: Error & { code?: string }) => {
      slot.outOfMemory ||= e.code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.#onDeath(slot, `failed: ${e.message}`);
    });
    worker.on('exit', (code) => this.#onDeath(slot, `exited with code ${code}`));
  }

  #dispatch(): void {
    for (const slot of this.#slots) {
      if (slot.job || !slot.ready) continue;
      const job = this.#queue.shift();
      if (!job) return;
      slot.job = job;
      slot.worker.ref();
      slot.worker.postMessage(job.req, job.transfer);
    }
  }

  #onReply(slot: Slot, reply: ParseReply): void {
    if (reply.type === 'ready') {
      slot.ready = true;
      this.#settleReady();
      return this.#dispatch();
    }
    if (slot.job?.req.id !== reply.id) return;
    this.#finish(slot, reply.reply);
    this.#dispatch();
  }

  /** The read's deadline passed: a waiting job leaves the queue; a running one takes its worker down with it. */
  #expire(job: Job): void {
    const waiting = this.#queue.indexOf(job);
    const why = failure('parse: not read within the poll deadline (poll.timeout_seconds)');
    if (waiting !== -1) {
      this.#queue.splice(waiting, 1);
      return settle(job, why);
    }
    const slot = this.#slots.find((s) => s.job === job);
    if (!slot) return;
    this.#finish(slot, why);
    this.#replace(slot);
  }

  #onDeath(slot: Slot, why: string): void {
    if (this.#closed || !this.#slots.includes(slot)) return;
    if (!slot.ready) return this.#fallBackInline(); // the worker never started: this runtime cannot host it
    const heapMb = this.#limits.maxOldGenerationSizeMb;
    this.#finish(
      slot,
      slot.outOfMemory
        ? failure(`parse: the document needs more than ${heapMb} MiB to read`, true)
        : failure(`parse: worker ${why}`),
    );
    this.#replace(slot);
  }

  #finish(slot: Slot, reply: DocumentReply): void {
    const job = slot.job;
    slot.job = null;
    slot.worker.unref();
    if (job) settle(job, reply);
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
      if (s.job) this.#queue.unshift(s.job);
      void s.worker.terminate();
    }
    for (const job of this.#queue.splice(0)) settle(job, readDocument(job.req.doc));
    this.#settleReady();
  }

  #settleReady(): void {
    if (this.#inline || this.#slots.every((s) => s.ready))
      this.#readyWaiters.splice(0).forEach((w) => w());
  }
}

/** The bytes as a view of an ArrayBuffer that can be moved to a worker: the caller's own (feed/fetch/body.ts allocates
 *  one per body), or, for a small view that may share Node's buffer pool, a copy. */
function movable(bytes: Uint8Array): { bytes: Uint8Array; transfer: ArrayBuffer[] } {
  const own =
    bytes.byteLength >= 8192 && bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0;
  const moved = own ? bytes : bytes.slice();
  return { bytes: moved, transfer: [moved.buffer as ArrayBuffer] };
}

function settle(job: Job, reply: DocumentReply): void {
  clearTimeout(job.timer);
  job.resolve(reply);
}

function failure(message: string, parseError = false): DocumentReply {
  return { kind: 'error', parseError, message };
}
