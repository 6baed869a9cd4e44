// The PostgreSQL engine when its server goes away or a statement runs long: a transaction under way fails instead of
// hanging, writes fail promptly while the server is down, the engine works again once it is back with nothing
// half-written, and a statement past its timeout is cancelled by the server.
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { PostgresEngine } from '../../src/db/postgres-engine.ts';
import { within } from '../support/deadline.ts';
import { startPostgres, testEngine, type Postgres } from '../support/postgres.ts';

describe('the PostgreSQL engine when its server goes away or a statement runs long', () => {
  let server: Postgres;
  let engine: PostgresEngine;
  before(async () => {
    server = await startPostgres(); // its own: this file restarts it
    engine = testEngine(await server.newDatabase(), { connectTimeoutMs: 2_000 });
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

  it('has the server cancel a statement that runs past the statement timeout, and takes the next one', async () => {
    const quick = testEngine(await server.newDatabase(), {
      poolSize: 1,
      connectTimeoutMs: 2_000,
      statementTimeoutMs: 200,
    });
    try {
      await assert.rejects(
        within(
          quick.read((sql) => sql.get('SELECT pg_sleep(5)')),
          3_000,
          'a statement past its timeout',
        ),
        /canceling statement due to statement timeout/,
      );
      assert.deepEqual(await quick.read((sql) => sql.column('SELECT 1')), [1]);
    } finally {
      await quick.close();
    }
  });

  it('fails within the connect timeout, naming no password, when the server accepts and never answers', async () => {
    // A TCP listener that takes connections and says nothing: a server hung, or a firewall that swallows packets.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    after(() => {
      for (const socket of sockets) socket.destroy();
      silent.close();
    });
    const nowhere = testEngine(`postgresql://feedsub:hunter2@127.0.0.1:${port}/feedsub`, {
      poolSize: 1,
      connectTimeoutMs: 1_000,
      statementTimeoutMs: 1_000,
    });
    try {
      const err = await within(
        nowhere
          .write((sql) => sql.run('SELECT 1'))
          .then(
            () => undefined,
            (e: unknown) => e,
          ),
        3_000,
        'a write to an unreachable server',
      );
      assert.ok(err instanceof Error, 'it fails');
      assert.match(err.message, /timeout/i);
      assert.doesNotMatch(`${err.message} ${err.stack}`, /hunter2/);
    } finally {
      await within(nowhere.close(), 3_000, 'closing an engine whose connect timed out');
    }
  });
});
