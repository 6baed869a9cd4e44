// Making a PostgreSQL database feedsub's (src/db/postgres-schema.ts): once, by one of several nodes starting at once,
// and never over a database that is someone else's or newer than this feedsub.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readPostgresSchemaSql } from '../../src/assets.ts';
import { SCHEMA_VERSION } from '../../src/db/migrations.ts';
import { PostgresEngine } from '../../src/db/postgres-engine.ts';
import { preparePostgresSchema } from '../../src/db/postgres-schema.ts';
import { sharedPostgres, testEngine, type Postgres } from '../support/postgres.ts';

describe('a PostgreSQL database made feedsub’s', () => {
  let server: Postgres;
  const engines: PostgresEngine[] = [];
  const engineOn = (url: string) => {
    const engine = testEngine(url, { poolSize: 2 });
    engines.push(engine);
    return engine;
  };
  before(async () => {
    server = await sharedPostgres();
  });
  after(async () => {
    for (const engine of engines) await engine.close();
  });

  it('gets the schema at the current version once, however many nodes start on it at once', async () => {
    const url = await server.newDatabase();
    const nodes = [engineOn(url), engineOn(url), engineOn(url)];
    const results = await Promise.all(
      nodes.map((engine) => preparePostgresSchema(engine, readPostgresSchemaSql())),
    );
    assert.deepEqual(
      results.map((r) => r.created).sort(),
      [false, false, true],
      'one node made it, the others found it',
    );
    assert.ok(results.every((r) => r.version === SCHEMA_VERSION));
    const again = await preparePostgresSchema(nodes[0]!, readPostgresSchemaSql());
    assert.deepEqual(again, { created: false, version: SCHEMA_VERSION });
    assert.equal(
      await nodes[0]!.read((sql) =>
        sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM applications').then((r) => r!.n),
      ),
      0,
    );
  });

  it('refuses a database whose schema a newer feedsub made, naming both versions', async () => {
    const url = await server.newDatabase();
    const engine = engineOn(url);
    await preparePostgresSchema(engine, readPostgresSchemaSql(), SCHEMA_VERSION + 1);
    await assert.rejects(
      preparePostgresSchema(engine, readPostgresSchemaSql()),
      new RegExp(
        `schema version ${SCHEMA_VERSION + 1}, and this feedsub knows up to ${SCHEMA_VERSION}`,
      ),
    );
  });

  it("refuses a database that is not empty and not feedsub's, and leaves it as it was", async () => {
    const url = await server.newDatabase();
    const engine = engineOn(url);
    await engine.write((sql) => sql.exec('CREATE TABLE invoices (id integer)'));
    await assert.rejects(
      preparePostgresSchema(engine, readPostgresSchemaSql()),
      /not empty and is not feedsub's \(it has the tables invoices…\)/,
    );
    assert.deepEqual(
      await engine.read((sql) =>
        sql.column("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"),
      ),
      ['invoices'],
    );
  });
});
