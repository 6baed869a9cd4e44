// Making a PostgreSQL database feedsub's (src/db/postgres-schema.ts): once, by one of several nodes starting at once;
// an older one taken through the steps it lacks (src/db/postgres-migrations.ts) to exactly schema-postgres.sql; never
// over a database that is someone else's or newer than this feedsub.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { readPostgresSchemaSql } from '../../src/assets.ts';
import { SCHEMA_VERSION } from '../../src/db/migrations.ts';
import type { Sql } from '../../src/db/engine.ts';
import { PostgresEngine } from '../../src/db/postgres-engine.ts';
import { POSTGRES_FIRST_VERSION, POSTGRES_MIGRATIONS } from '../../src/db/postgres-migrations.ts';
import { preparePostgresSchema } from '../../src/db/postgres-schema.ts';
import { postgresTables } from '../support/postgres-catalog.ts';
import { sharedPostgres, testEngine, type Postgres } from '../support/postgres.ts';

/** schema-postgres.sql as it was at POSTGRES_FIRST_VERSION, the schema of the oldest PostgreSQL database there is. */
const FIRST_SCHEMA = readFileSync(
  new URL(`../fixtures/schema-postgres-v${POSTGRES_FIRST_VERSION}.sql`, import.meta.url),
  'utf8',
);

/** The catalog of the database at `url`, as test/support/postgres-catalog.ts reads it. */
async function tablesOf(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await postgresTables(client);
  } finally {
    await client.end();
  }
}

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
    await preparePostgresSchema(engine, readPostgresSchemaSql(), {
      first: SCHEMA_VERSION + 1,
      steps: [],
    });
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

  it('counts every schema version after the first PostgreSQL one in a PostgreSQL step too', () => {
    assert.equal(
      POSTGRES_FIRST_VERSION + POSTGRES_MIGRATIONS.length,
      SCHEMA_VERSION,
      'a migration in src/db/migrations.ts without its step in src/db/postgres-migrations.ts',
    );
  });

  it('takes a database of the first PostgreSQL version through every step to exactly schema-postgres.sql', async () => {
    const old = await server.newDatabase();
    const engine = engineOn(old);
    await engine.write(async (sql) => {
      await sql.exec(FIRST_SCHEMA);
      await sql.exec('CREATE TABLE feedsub_schema (version BIGINT NOT NULL)');
      await sql.run('INSERT INTO feedsub_schema (version) VALUES (@v)', {
        v: POSTGRES_FIRST_VERSION,
      });
    });
    const migrated = await preparePostgresSchema(engine, readPostgresSchemaSql());
    assert.deepEqual(
      migrated,
      POSTGRES_MIGRATIONS.length === 0
        ? { created: false, version: SCHEMA_VERSION }
        : { created: false, version: SCHEMA_VERSION, from: POSTGRES_FIRST_VERSION },
    );
    const fresh = await server.newDatabase();
    await preparePostgresSchema(engineOn(fresh), readPostgresSchemaSql());
    const [got, want] = [await tablesOf(old), await tablesOf(fresh)];
    assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
    for (const [name, table] of want) assert.deepEqual(got.get(name), table, name);
  });

  it('takes an older database through the steps it lacks once, however many nodes start on it at once', async () => {
    const url = await server.newDatabase();
    const base = SCHEMA_VERSION;
    await preparePostgresSchema(engineOn(url), readPostgresSchemaSql(), { first: base, steps: [] });
    let ran = 0;
    const steps = [
      async (sql: Sql) => {
        ran += 1;
        await sql.exec('ALTER TABLE applications ADD COLUMN motto TEXT');
      },
      async (sql: Sql) => {
        ran += 1;
        await sql.exec("UPDATE applications SET motto = 'none'");
      },
    ];
    const nodes = [engineOn(url), engineOn(url), engineOn(url)];
    const results = await Promise.all(
      nodes.map((engine) =>
        preparePostgresSchema(engine, readPostgresSchemaSql(), { first: base, steps }),
      ),
    );
    assert.equal(ran, 2, 'each step ran once');
    assert.deepEqual(
      results.map((r) => r.from ?? null).sort(),
      [base, null, null],
      'one node migrated, the others found it done',
    );
    assert.ok(results.every((r) => r.version === base + 2 && !r.created));
    assert.deepEqual(
      await nodes[0]!.read((sql) =>
        sql.column(
          "SELECT column_name FROM information_schema.columns WHERE table_name = 'applications' AND column_name = 'motto'",
        ),
      ),
      ['motto'],
    );
  });

  it('leaves a database at its version, with nothing of the steps, when a step fails', async () => {
    const url = await server.newDatabase();
    const engine = engineOn(url);
    const base = SCHEMA_VERSION;
    await preparePostgresSchema(engine, readPostgresSchemaSql(), { first: base, steps: [] });
    const steps = [
      async (sql: Sql) => sql.exec('ALTER TABLE applications ADD COLUMN motto TEXT'),
      async (sql: Sql) => sql.exec('ALTER TABLE no_such_table ADD COLUMN motto TEXT'),
    ];
    await assert.rejects(
      preparePostgresSchema(engine, readPostgresSchemaSql(), { first: base, steps }),
      /no_such_table/,
    );
    assert.deepEqual(
      await engine.read(async (sql) => [
        await sql.value('SELECT version FROM feedsub_schema'),
        await sql.column(
          "SELECT column_name FROM information_schema.columns WHERE table_name = 'applications' AND column_name = 'motto'",
        ),
      ]),
      [base, []],
    );
  });

  it('refuses a database older than the first PostgreSQL version, naming both', async () => {
    const url = await server.newDatabase();
    const engine = engineOn(url);
    await preparePostgresSchema(engine, readPostgresSchemaSql(), { first: 5, steps: [] });
    await assert.rejects(
      preparePostgresSchema(engine, readPostgresSchemaSql(), {
        first: 6,
        steps: [async () => {}],
      }),
      /schema version 5, older than any this feedsub can upgrade \(PostgreSQL databases begin at version 6\)/,
    );
  });
});
