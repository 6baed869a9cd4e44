// Which errors mean the database cannot serve for now: SQLite's result codes, and the PostgreSQL engine's errors (each
// made here for real: a server that is not there, a connection its server ends, a statement past its timeout) apart
// from a wrong statement, and apart from an HTTP client's own ECONNRESET.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fromPostgres, markPostgres, unavailableDatabase } from '../../src/db/unavailable.ts';
import { isClientAbort } from '../../src/http/errors.ts';
import { sharedPostgres, testEngine } from '../support/postgres.ts';
import type { PostgresEngine } from '../../src/db/postgres-engine.ts';

/** The error `promise` rejects with. */
async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail('it did not fail');
}

const coded = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('which errors mean the database is unavailable', () => {
  it("takes SQLite's codes for a full, locked, read-only or failing database, unmarked", () => {
    for (const code of [
      'SQLITE_FULL',
      'SQLITE_BUSY',
      'SQLITE_LOCKED_SHAREDCACHE',
      'SQLITE_IOERR_WRITE',
    ])
      assert.equal(unavailableDatabase(coded(code)), code);
    for (const code of ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_ERROR'])
      assert.equal(unavailableDatabase(coded(code)), undefined);
  });

  it("takes a connection's errors only from the PostgreSQL engine: a fetch's ECONNREFUSED is not the database", () => {
    assert.equal(unavailableDatabase(coded('ECONNREFUSED')), undefined);
    for (const code of [
      'ECONNREFUSED',
      'ECONNRESET',
      'ENOENT',
      'EPIPE',
      'ETIMEDOUT',
      'EHOSTUNREACH',
    ])
      assert.equal(unavailableDatabase(markPostgres(coded(code))), code);
    assert.equal(unavailableDatabase(markPostgres(coded('EACCES'))), undefined);
    assert.equal(unavailableDatabase(coded('57P01')), undefined);
  });

  it('takes the server shutting down, starting up, a lost connection, a full disk and the statement timeout', () => {
    for (const code of [
      '57P01',
      '57P02',
      '57P03',
      '57014',
      '08006',
      '08001',
      '53100',
      '53300',
      '25006',
    ])
      assert.equal(unavailableDatabase(markPostgres(coded(code))), code);
    for (const code of ['23505', '42601', '42P01', '40001', '22P02', '28P01'])
      assert.equal(unavailableDatabase(markPostgres(coded(code))), undefined, code);
    assert.equal(
      unavailableDatabase(markPostgres(new Error('Connection terminated unexpectedly'))),
      'connection lost',
    );
    assert.equal(
      unavailableDatabase(markPostgres(new Error('timeout exceeded when trying to connect'))),
      'connection lost',
    );
    assert.equal(unavailableDatabase(markPostgres(new Error('something else'))), undefined);
  });

  it("tells an HTTP client's ECONNRESET from a connection to PostgreSQL reset under a statement", () => {
    assert.equal(isClientAbort(coded('ECONNRESET', 'aborted')), true);
    const reset = markPostgres(coded('ECONNRESET', 'read ECONNRESET'));
    assert.equal(isClientAbort(reset), false);
    assert.equal(unavailableDatabase(reset), 'ECONNRESET');
  });
});

describe("the PostgreSQL engine's errors, marked and told apart", () => {
  let engine: PostgresEngine;
  before(async () => {
    engine = testEngine(await (await sharedPostgres()).newDatabase(), {
      connectTimeoutMs: 2_000,
      statementTimeoutMs: 300,
    });
  });
  after(() => engine?.close());

  it('marks a server that is not there, alone and in a transaction', async () => {
    const nowhere = testEngine('postgresql://postgres@/feedsub?host=/nonexistent-feedsub-socket', {
      connectTimeoutMs: 2_000,
    });
    try {
      for (const err of [
        await failure(nowhere.value('SELECT 1')),
        await failure(nowhere.write((sql) => sql.run('SELECT 1'))),
        await failure(nowhere.read((sql) => sql.get('SELECT 1'))),
      ]) {
        assert.ok(fromPostgres(err), String(err));
        assert.equal(unavailableDatabase(err), 'ENOENT');
      }
    } finally {
      await nowhere.close();
    }
  });

  it('marks a connection the server ends under a transaction (admin shutdown) as unavailable', async () => {
    const err = await failure(
      engine.write(async (sql) => {
        await sql.get('SELECT pg_terminate_backend(pg_backend_pid())');
      }),
    );
    assert.ok(fromPostgres(err));
    assert.ok(unavailableDatabase(err), `unavailable: ${String(err)}`);
    assert.equal(await engine.value('SELECT 1'), 1, 'the next statement has a connection again');
  });

  it('marks a statement past the statement timeout as unavailable (57014)', async () => {
    const err = await failure(engine.read((sql) => sql.get('SELECT pg_sleep(2)')));
    assert.equal(unavailableDatabase(err), '57014');
  });

  it("marks a wrong statement as the database's, and not as unavailable: a 500, not a 503", async () => {
    for (const err of [
      await failure(engine.value('SELEC 1')),
      await failure(engine.write((sql) => sql.run('INSERT INTO nowhere VALUES (1)'))),
    ]) {
      assert.ok(fromPostgres(err));
      assert.equal(unavailableDatabase(err), undefined, String(err));
    }
  });
});
