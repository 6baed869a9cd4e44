// The PostgreSQL engine when its server goes away: a transaction under way fails instead of hanging, writes fail
// promptly while the server is down, and the engine works again once it is back, with nothing half-written.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PostgresEngine } from '../../src/db/postgres-engine.ts';
import { within } from '../support/deadline.ts';
import { startPostgres, type Postgres } from '../support/postgres.ts';

describe('the PostgreSQL engine across a server restart', () => {
  let server: Postgres;
  let engine: PostgresEngine;
  before(async () => {
    server = await startPostgres();
    engine = new PostgresEngine({
      url: await server.newDatabase(),
      poolSize: 4,
      connectTimeoutMs: 2_000,
      statementTimeoutMs: 10_000,
    });
    await engine.write((sql) => sql.exec('CREATE TABLE notes (id TEXT PRIMARY KEY)'));
  });
  after(async () => {
    await engine?.close();
    await server?.stop();
  });

  it('fails the transaction under way, fails writes while down, and works again once the server is back', async () => {
    await engine.write((sql) => sql.run("INSERT INTO notes VALUES ('before')"));
    // Idle connections in the pool, which the shutdown will end.
    await Promise.all([1, 2, 3].map(() => engine.read((sql) => sql.get('SELECT 1 AS one'))));

    let halfway!: () => void;
    const inserted = new Promise<void>((resolve) => (halfway = resolve));
    let resume!: () => void;
    const held = new Promise<void>((resolve) => (resume = resolve));
    const cut = engine.write(async (sql) => {
      await sql.run("INSERT INTO notes VALUES ('cut-1')");
      halfway();
      await held;
      await sql.run("INSERT INTO notes VALUES ('cut-2')");
    });
    cut.catch(() => {}); // awaited below
    await inserted;
    const restarting = server.restart(1_000);
    await new Promise((r) => setTimeout(r, 300)); // the server is down now
    resume();
    await assert.rejects(within(cut, 5_000, 'the cut transaction'));
    await assert.rejects(
      within(
        engine.write((sql) => sql.run("INSERT INTO notes VALUES ('while-down')")),
        5_000,
        'a write while the server is down',
      ),
    );
    await restarting;
    await within(
      engine.write((sql) => sql.run("INSERT INTO notes VALUES ('after')")),
      5_000,
      'a write once the server is back',
    );
    assert.deepEqual(await engine.read((sql) => sql.column('SELECT id FROM notes ORDER BY id')), [
      'after',
      'before',
    ]);
  });
});
