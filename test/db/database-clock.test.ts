// The database's clock (src/db/database-clock.ts): this machine's clock corrected by its offset to the server's.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Clock } from '../../src/clock.ts';
import { databaseClock } from '../../src/db/database-clock.ts';
import type { Engine } from '../../src/db/engine.ts';
import { openDatabase } from '../../src/db/open.ts';
import { SqliteEngine } from '../../src/db/sqlite-engine.ts';
import { sharedPostgres, testEngine } from '../support/postgres.ts';

/** This machine's clock, five minutes slow: a node whose clock is off. */
const SLOW_MS = 5 * 60_000;
const slow: Clock = { now: () => new Date(Date.now() - SLOW_MS) };

describe('the database clock', () => {
  let dir: string;
  const engines: [string, Engine][] = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'feedsub-clock-'));
    engines.push(
      ['PostgreSQL', testEngine(await (await sharedPostgres()).newDatabase())],
      ['SQLite', new SqliteEngine(openDatabase(join(dir, 'feedsub.db')))],
    );
  });
  after(async () => {
    for (const [, engine] of engines) await engine.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const name of ['PostgreSQL', 'SQLite'])
    it(`on ${name}: reads the server's time on a machine whose clock is five minutes slow, once measured`, async () => {
      const engine = engines.find(([n]) => n === name)![1];
      const clock = databaseClock(engine, slow);
      try {
        assert.ok(
          Date.now() - clock.now().getTime() > SLOW_MS - 1000,
          'before measuring it reads the machine',
        );
        const { offsetMs, roundTripMs } = await clock.sync();
        assert.ok(Math.abs(offsetMs - SLOW_MS) < 1000, `offset ${offsetMs} ms`);
        const error = Math.abs(clock.now().getTime() - Date.now());
        assert.ok(
          error <= roundTripMs / 2 + 20,
          `${error} ms off after a ${roundTripMs} ms round trip`,
        );
      } finally {
        clock.stop();
      }
    });
});
