// Whether the database can take a write now, for /healthz: its write lock, room to grow, and free space on its disk.
import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Db } from './open.ts';

/** Below this much free space on the database's file system, writes are about to fail: a commit appends whole pages
 *  to the WAL, and a checkpoint grows the database file. */
export const MIN_FREE_DISK_BYTES = 1024 * 1024;
/** How long the probe waits for another process's write (a `keys create`) before calling the database locked; a
 *  write of the daemon's own never overlaps it (better-sqlite3 is synchronous and no transaction spans an await). */
export const PROBE_BUSY_TIMEOUT_MS = 100;

export type WriteHealth = { ok: true } | { ok: false; reason: string };

/** How long /healthz waits for the database to answer its ping: a PostgreSQL server out of reach would otherwise keep
 *  the probe waiting for a connection (POSTGRES_CONNECT_TIMEOUT_MS, db/connect.ts) past a load balancer's timeout. */
export const PING_DEADLINE_MS = 2_000;

/** Resolves when `ping` does, or rejects with "database did not answer within <ms> ms" once `ms` have passed. */
export async function answerWithin(ping: Promise<unknown>, ms = PING_DEADLINE_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`database did not answer within ${ms} ms`)), ms);
  });
  ping.catch(() => {}); // past the deadline its failure is no one's to hear
  try {
    await Promise.race([ping, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The floor of free disk space (default MIN_FREE_DISK_BYTES), and how the free space is read (default statfs each
 *  time; /healthz passes cachedFreeBytes). */
export type ProbeOptions = {
  minFreeBytes?: number;
  freeBytes?: (dir: string) => Promise<number>;
};

/** Probes, without writing anything, what a write needs: the write lock (BEGIN IMMEDIATE; ROLLBACK), a free page or
 *  room under max_page_count (SQLITE_FULL), and disk space. `reason` says which is missing. An in-memory database
 *  has no disk to check. */
export async function probeWrite(
  db: Db,
  { minFreeBytes = MIN_FREE_DISK_BYTES, freeBytes = readFreeBytes }: ProbeOptions = {},
): Promise<WriteHealth> {
  const locked = probeLock(db);
  if (locked) return { ok: false, reason: locked };
  const pages = db.pragma('page_count', { simple: true }) as number;
  const max = db.pragma('max_page_count', { simple: true }) as number;
  if (pages >= max && (db.pragma('freelist_count', { simple: true }) as number) === 0)
    return {
      ok: false,
      reason: `database is full: ${pages} pages, the most it may hold (SQLite's max_page_count)`,
    };
  if (db.memory) return { ok: true };
  const free = await freeBytes(dirname(db.name));
  if (free < minFreeBytes)
    return { ok: false, reason: `disk is full: ${free} bytes free where the database is` };
  return { ok: true };
}

/** Bytes an unprivileged process may still write on the file system of `dir`. */
async function readFreeBytes(dir: string): Promise<number> {
  const fs = await statfs(dir);
  return fs.bavail * fs.bsize;
}

/** `read` (statfs) at most once per `maxAgeMs`, for /healthz: a load balancer may probe many times a second, and each
 *  statfs is a round trip through libuv's thread pool that keeps the probe waiting a turn of the event loop more. A
 *  call answers the last reading at once and starts a new one when it is older than `maxAgeMs`; only the first call
 *  (and one after a failed reading) waits for its reading. */
export function cachedFreeBytes(
  read: (dir: string) => Promise<number> = readFreeBytes,
  maxAgeMs = 1000,
  now: () => number = () => performance.now(),
): (dir: string) => Promise<number> {
  let last: { dir: string; at: number; bytes: number } | undefined;
  let reading: Promise<number> | undefined;
  const fresh = (dir: string) =>
    (reading ??= read(dir)
      .then((bytes) => {
        last = { dir, at: now(), bytes };
        return bytes;
      })
      .finally(() => (reading = undefined)));
  return async (dir) => {
    if (!last || last.dir !== dir) return fresh(dir);
    if (now() - last.at >= maxAgeMs) fresh(dir).catch(() => (last = undefined));
    return last.bytes;
  };
}

/** Takes and drops the write lock; a reason when it cannot be had, else undefined. */
function probeLock(db: Db): string | undefined {
  if (db.inTransaction) return undefined; // our own write is running: the lock is ours
  const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma(`busy_timeout = ${PROBE_BUSY_TIMEOUT_MS}`);
  try {
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
    return undefined;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'SQLITE_BUSY') return 'database is locked: another process holds its write lock';
    if (typeof code === 'string' && code.startsWith('SQLITE_READONLY'))
      return 'database is read-only';
    return err instanceof Error ? err.message : String(err);
  } finally {
    db.pragma(`busy_timeout = ${busyTimeout}`);
  }
}
