// poll --once (runPollOnce) beside another connection that holds the write lock past SQLite's busy timeout: it waits
// the lock out instead of dying. Its own file: the busy timeout blocks this process's event loop for 5 s.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { runPollOnce } from '../src/app.ts';
import { silentLogger } from '../src/log.ts';
import { within } from './support/deadline.ts';
import { setUp } from './support/poll-once.ts';
import { rss, startOrigin, startReceiver, type Origin, type Receiver } from './support/servers.ts';
import { makeWorld } from './support/world.ts';

describe('poll --once beside a busy database', () => {
  let origin: Origin;
  let receiver: Receiver;
  before(async () => {
    origin = await startOrigin();
    receiver = await startReceiver();
  });
  after(async () => {
    await origin.close();
    await receiver.close();
  });

  it('waits out another connection holding the write lock past the busy timeout, instead of dying', async () => {
    const w = makeWorld({}, new Date().toISOString());
    const other = new Database(join(w.dir, 'feedsub.db'));
    try {
      const s = await setUp(w, receiver);
      origin.set('/locked.xml', { body: rss([{ guid: 'a' }]) });
      const sub = await s.subscribe(`${origin.url}/locked.xml`);
      await s.queue(sub, 1);
      // runPollOnce opens the database and starts releasing a stopped instance's leases before it returns its promise;
      // that release commits a few microtasks later, and its first claim comes after a host lookup is awaited. The lock
      // is taken in between (as soon as the release has committed: never a macrotask later, which the lookup could
      // beat), so the claim (not the release, which would wait out its own busy timeout first) meets it, and is held
      // until 500 ms after the claim gave up waiting (the 5 s busy timeout blocks this process's event loop, so the
      // release runs during the retry's pause).
      const run = runPollOnce(w.ctx.config, silentLogger);
      await lockOnceFree(other);
      let fetchedWhileLocked = -1;
      setTimeout(() => {
        fetchedWhileLocked = origin.requests.filter((r) => r.path === '/locked.xml').length;
        other.exec('ROLLBACK');
      }, 500);
      const out = await within(run, 30_000, 'poll --once');
      assert.equal(fetchedWhileLocked, 0, 'the feed was claimed only once the lock was released');
      assert.match(out, /events delivered 1, events failed 0, events waiting 0$/);
    } finally {
      other.close();
      await w.close();
    }
  });
});

/** Takes the write lock on `other` as soon as no other connection holds it, yielding only to microtasks meanwhile
 *  (each try fails at once instead of waiting out the busy timeout, which would block the holder's commit). */
async function lockOnceFree(other: Database.Database): Promise<void> {
  const timeout = other.pragma('busy_timeout', { simple: true }) as number;
  other.pragma('busy_timeout = 0');
  try {
    for (let tries = 0; ; tries++) {
      try {
        other.exec('BEGIN IMMEDIATE');
        return;
      } catch (err) {
        if ((err as { code?: string }).code !== 'SQLITE_BUSY' || tries > 100_000) throw err;
        await Promise.resolve();
      }
    }
  } finally {
    other.pragma(`busy_timeout = ${timeout}`);
  }
}
