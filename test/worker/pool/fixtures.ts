// A work pool over a table of its own in a real database, seen as its spec's callbacks see it: which items start and
// when, which transactions the pool opens and what each one records, releases and claims.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Db } from '../../../src/db/open.ts';
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
  const db: Db = openDatabase(join(dir, 'feedsub.db'));
  db.exec(
    'CREATE TABLE work (id TEXT PRIMARY KEY, k TEXT, due INTEGER, leased INTEGER NOT NULL DEFAULT 0, runs INTEGER NOT NULL DEFAULT 0)',
  );
  const insert = db.prepare('INSERT INTO work (id, k, due) VALUES (?, ?, ?)');
  opts.items.forEach(([id, key], i) => insert.run(id, key, i));
  let due = opts.items.length;
  const txs = noteTransactions(db);
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
    db,
    {
      name: 'test',
      slots: opts.slots,
      keysOf: (item) => [`k:${item.key}`],
      capOf: (key) => opts.caps?.[key.slice(2)] ?? Infinity,
      claim: (free, room) => {
        opts.beforeClaim?.();
        const tx = current();
        tx.asked = free;
        const picked = claimDue(db, free, room);
        tx.claimed.push(...picked.map((i) => i.id));
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
      record: (item, result) => {
        const tx = current();
        opts.record?.(item);
        db.prepare('UPDATE work SET leased = 0, runs = runs + 1 WHERE id = ?').run(item.id);
        tx.recorded.push(item.id);
        return result;
      },
      weightOf: opts.weightOf && ((result) => opts.weightOf!(result.slice('ran '.length))),
      recorded: (item) => void reported.push({ id: item.id, after: txs.list.length - 1 }),
      release: (items) => {
        current().released.push(...items.map((i) => i.id));
        const release = db.prepare('UPDATE work SET leased = 0 WHERE id = ?');
        for (const i of items) release.run(i.id);
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
  const count = (sql: string, ...args: string[]) =>
    db
      .prepare(sql)
      .pluck()
      .get(...args) as number;
  return {
    db,
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
    close() {
      pool.stop();
      db.close();
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
  assert.equal(h.recordedCount(), 0, why);
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Leases up to `free` due items in due order, each that fits `room`. */
function claimDue(db: Db, free: number, room: Room): Item[] {
  const picked: Item[] = [];
  const due = db
    .prepare('SELECT id, k AS key FROM work WHERE leased = 0 AND runs = 0 ORDER BY due')
    .all() as Item[];
  for (const item of due) {
    if (picked.length >= free) break;
    if (!room.fits([`k:${item.key}`])) continue;
    room.take([`k:${item.key}`]);
    picked.push(item);
  }
  const lease = db.prepare('UPDATE work SET leased = 1 WHERE id = ?');
  for (const item of picked) lease.run(item.id);
  return picked;
}

/** Wraps `db.transaction` so that each transaction run is noted in `list`; `sameTurn` is the index of the one that
 *  committed last while the code that ran it has not yet returned to the event loop. */
function noteTransactions(db: Db): { list: Tx[]; sameTurn: number | undefined } {
  const noted: { list: Tx[]; sameTurn: number | undefined } = { list: [], sameTurn: undefined };
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: (...args: unknown[]) => unknown) =>
    transaction((...args: unknown[]) => {
      const tx: Tx = { recorded: [], released: [], claimed: [], asked: undefined, committed: true };
      const index = noted.list.push(tx) - 1;
      try {
        const value = fn(...args);
        noted.sameTurn = index;
        queueMicrotask(() => {
          if (noted.sameTurn === index) noted.sameTurn = undefined;
        });
        return value;
      } catch (err) {
        tx.committed = false;
        throw err;
      }
    })) as Db['transaction'];
  return noted;
}
