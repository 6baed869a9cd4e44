// A work pool over a table of its own in a real database, seen as its spec's callbacks see it: which items start and
// when, which transactions the pool opens and what each one records, releases and claims.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sql } from '../../../src/db/engine.ts';
import { openDatabase, type Db } from '../../../src/db/open.ts';
import { SqliteEngine } from '../../../src/db/sqlite-engine.ts';
import { silentLogger, type Logger } from '../../../src/log.ts';
import { Pool } from '../../../src/worker/pool/core.ts';
import type { Room } from '../../../src/worker/pool/spec.ts';
import { throughput, type ThroughputSpec } from '../../../src/worker/pool/throughput.ts';

/** One claimed item: its id, and the key `k:<key>` it holds. */
export type Item = { id: string; key: string };

/** A transaction the pool opened, with what ran in it; `committed` is false when it threw (rolled back). */
export type Tx = {
  recorded: string[];
  released: string[];
  claimed: string[];
  /** The `free` the claim was asked for; undefined when it did not claim. */
  asked: number | undefined;
  committed: boolean;
};

/** An item's start: `turnOf` is the index (in `txs`) of the transaction committed in the same turn just before it
 *  started, when there is one: the item was claimed by it and started without a timer. */
export type Start = { id: string; turnOf: number | undefined };

export type Harness = ReturnType<typeof harness>;

/** A pool over a `work` table of a database made from schema.sql: items are due in the order given, each holding the
 *  key `k:<key>` under `caps` (others uncapped); each run waits for finish(id) or fail(id), unless `autoMs` is set.
 *  `layer` adds the throughput layer (result strings are `ran <id>`). */
export function harness(opts: {
  slots: number;
  caps?: Record<string, number>;
  items: [id: string, key: string][];
  autoMs?: number;
  record?: (item: Item) => void;
  beforeClaim?: () => void;
  weightOf?: (id: string) => number;
  logger?: Logger;
  layer?: ThroughputSpec<string>;
}) {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-pool-'));
  const txs: Noted = { list: [], sameTurn: undefined };
  const store = new NotedEngine(openDatabase(join(dir, 'feedsub.db')), txs);
  const db = store.db;
  db.exec(
    'CREATE TABLE work (id TEXT PRIMARY KEY, k TEXT, due INTEGER, leased INTEGER NOT NULL DEFAULT 0, runs INTEGER NOT NULL DEFAULT 0)',
  );
  const insert = db.prepare('INSERT INTO work (id, k, due) VALUES (?, ?, ?)');
  opts.items.forEach(([id, key], i) => insert.run(id, key, i));
  let due = opts.items.length;
  const started: Start[] = [];
  const reported: { id: string; after: number }[] = [];
  const gates = new Map<string, { resolve: () => void; reject: (err: Error) => void }>();
  const inFlight = { total: 0, max: 0, byKey: new Map<string, number>() };
  const maxByKey = new Map<string, number>();
  let idles = 0;
  const current = () => {
    assert.ok(db.inTransaction, 'inside a transaction');
    return txs.list[txs.list.length - 1]!;
  };
  const pool = new Pool<Item, string, string>(
    store,
    {
      name: 'test',
      slots: opts.slots,
      keysOf: (item) => [`k:${item.key}`],
      capOf: (key) => opts.caps?.[key.slice(2)] ?? Infinity,
      claim: async (free, room, tx) => {
        opts.beforeClaim?.();
        const noted = current();
        noted.asked = free;
        const picked = await claimDue(tx, free, room);
        noted.claimed.push(...picked.map((i) => i.id));
        return picked;
      },
      run: async (item) => {
        started.push({ id: item.id, turnOf: txs.sameTurn });
        inFlight.total++;
        inFlight.max = Math.max(inFlight.max, inFlight.total);
        const here = (inFlight.byKey.get(item.key) ?? 0) + 1;
        inFlight.byKey.set(item.key, here);
        maxByKey.set(item.key, Math.max(maxByKey.get(item.key) ?? 0, here));
        try {
          await new Promise<void>((resolve, reject) => {
            if (opts.autoMs !== undefined) setTimeout(resolve, opts.autoMs);
            else gates.set(item.id, { resolve, reject });
          });
        } finally {
          inFlight.total--;
          inFlight.byKey.set(item.key, inFlight.byKey.get(item.key)! - 1);
        }
        return `ran ${item.id}`;
      },
      record: async (item, result, tx) => {
        const noted = current();
        opts.record?.(item);
        await tx.run('UPDATE work SET leased = 0, runs = runs + 1 WHERE id = ?', [item.id]);
        noted.recorded.push(item.id);
        return result;
      },
      weightOf: opts.weightOf && ((result) => opts.weightOf!(result.slice('ran '.length))),
      recorded: (item) => void reported.push({ id: item.id, after: txs.list.length - 1 }),
      release: async (items, tx) => {
        current().released.push(...items.map((i) => i.id));
        for (const i of items) await tx.run('UPDATE work SET leased = 0 WHERE id = ?', [i.id]);
      },
      idle: () => void idles++,
      layer: opts.layer && throughput(opts.layer),
    },
    opts.logger ?? silentLogger,
  );
  const gate = (id: string) => {
    const g = gates.get(id);
    assert.ok(g, `${id} is running`);
    gates.delete(id);
    return g;
  };
  const count = async (sql: string, ...args: string[]) =>
    (await store.column<number>(sql, args))[0]!;
  return {
    store,
    pool,
    /** Every transaction the pool opened, oldest first. */
    txs: txs.list,
    /** The transactions that committed, after the first `from` of `txs`. */
    commits: (from = 0) => txs.list.slice(from).filter((t) => t.committed),
    /** What each committed transaction that recorded anything recorded, oldest first. */
    batches: () =>
      txs.list.filter((t) => t.committed && t.recorded.length > 0).map((t) => t.recorded),
    /** Every start, in order. */
    started,
    startedIds: () => started.map((s) => s.id),
    /** spec.recorded calls, each with the index of the last transaction opened before it. */
    reported,
    inFlight,
    maxByKey,
    idles: () => idles,
    /** Makes more items due, after those before them. */
    addItems: (items: [id: string, key: string][]) => {
      for (const [id, key] of items) insert.run(id, key, due++);
    },
    /** Lets the item's run resolve (it must be waiting). */
    finish: (id: string) => gate(id).resolve(),
    /** Makes the item's run reject. */
    fail: (id: string) => gate(id).reject(new Error(`${id} failed`)),
    /** The items whose run waits for finish() or fail(), in start order. */
    running: () => [...gates.keys()],
    leased: (id: string) => count('SELECT leased FROM work WHERE id = ?', id),
    runs: (id: string) => count('SELECT runs FROM work WHERE id = ?', id),
    recordedCount: () => count('SELECT count(*) FROM work WHERE runs > 0'),
    async close() {
      pool.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The items `[id, id]` for each id: each its own key. */
export function own(...ids: string[]): [string, string][] {
  return ids.map((id) => [id, id]);
}

/** Longer than any test: only a slot standing idle ends the wait of an outcome (ThroughputSpec.lingerMs). */
export const FOREVER_MS = 60_000;

/** Asserts that nothing was recorded after `ms`. */
export async function nothingRecordedAfter(h: Harness, ms: number, why: string): Promise<void> {
  await sleep(ms);
  assert.equal(await h.recordedCount(), 0, why);
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Leases up to `free` due items in due order, each that fits `room`. */
async function claimDue(db: Sql, free: number, room: Room): Promise<Item[]> {
  const picked: Item[] = [];
  const due = await db.all<Item>(
    'SELECT id, k AS key FROM work WHERE leased = 0 AND runs = 0 ORDER BY due',
  );
  for (const item of due) {
    if (picked.length >= free) break;
    if (!room.fits([`k:${item.key}`])) continue;
    room.take([`k:${item.key}`]);
    picked.push(item);
  }
  for (const item of picked) await db.run('UPDATE work SET leased = 1 WHERE id = ?', [item.id]);
  return picked;
}

/** The transactions an engine ran; `sameTurn` is the index of the one that committed last while the code that ran it
 *  has not yet returned to the event loop. */
type Noted = { list: Tx[]; sameTurn: number | undefined };

/** An engine whose write transactions are noted in `noted.list`. */
class NotedEngine extends SqliteEngine {
  readonly #noted: Noted;

  constructor(db: Db, noted: Noted) {
    super(db);
    this.#noted = noted;
  }

  override async write<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    const noted = this.#noted;
    let tx: Tx | undefined;
    let index = -1;
    try {
      const value = await super.write(async (sql) => {
        tx = { recorded: [], released: [], claimed: [], asked: undefined, committed: true };
        index = noted.list.push(tx) - 1;
        return fn(sql);
      });
      noted.sameTurn = index;
      // A tick queued from a promise's continuation runs once every continuation chained to it has run: once the
      // code that ran the transaction returns to the event loop.
      process.nextTick(() => {
        if (noted.sameTurn === index) noted.sameTurn = undefined;
      });
      return value;
    } catch (err) {
      if (tx) tx.committed = false;
      throw err;
    }
  }
}
