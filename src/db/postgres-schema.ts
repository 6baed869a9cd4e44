// Makes a PostgreSQL database feedsub's, or checks that it is: an empty database gets schema-postgres.sql at the
// current schema version, a database feedsub made is checked for a version this feedsub knows, and anything else is
// refused. The version counts in SQLite's sequence (db/migrations.ts SCHEMA_VERSION): PostgreSQL databases begin at
// the version their schema file was written for, and every later schema change adds a step for both engines.
import { SCHEMA_VERSION } from './migrations.ts';
import type { Engine } from './engine.ts';

/** The advisory lock that one node holds while it makes or checks the schema, so that nodes starting together on an
 *  empty database do not both make it: "feed" in ASCII. */
const SCHEMA_LOCK = 0x66656564;

/** What preparePostgresSchema found: whether it made the schema, and the database's version. */
export type PreparedSchema = { created: boolean; version: number };

/** Makes the schema in an empty database, or checks the version of one feedsub made; throws, saying what to do, on a
 *  database that is not empty and not feedsub's, or whose version this feedsub does not know (a newer feedsub
 *  migrated it: an older node must not run against it). */
export function preparePostgresSchema(
  engine: Engine,
  schemaSql: string,
  latest = SCHEMA_VERSION,
): Promise<PreparedSchema> {
  return engine.write(async (sql) => {
    await sql.get('SELECT pg_advisory_xact_lock(@key)', { key: SCHEMA_LOCK });
    const ours = await sql.get<{ present: boolean }>(
      "SELECT to_regclass('public.feedsub_schema') IS NOT NULL AS present",
    );
    if (!ours?.present) {
      const tables = await sql.column<string>(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename LIMIT 3",
      );
      if (tables.length > 0)
        throw new Error(
          `db: the PostgreSQL database is not empty and is not feedsub's (it has the tables ${tables.join(', ')}…): give feedsub an empty database of its own`,
        );
      await sql.exec(schemaSql);
      await sql.exec('CREATE TABLE feedsub_schema (version BIGINT NOT NULL)');
      await sql.run('INSERT INTO feedsub_schema (version) VALUES (@version)', { version: latest });
      return { created: true, version: latest };
    }
    const version = (await sql.get<{ version: number }>('SELECT version FROM feedsub_schema'))
      ?.version;
    if (version === undefined)
      throw new Error('db: the PostgreSQL database has a feedsub_schema table without a version');
    if (version > latest)
      throw new Error(
        `db: the PostgreSQL database has schema version ${version}, and this feedsub knows up to ${latest}: a newer feedsub has upgraded it, so run that version here too`,
      );
    if (version < latest)
      throw new Error(
        `db: the PostgreSQL database has schema version ${version}, older than any this feedsub can upgrade (PostgreSQL databases begin at version ${latest})`,
      );
    return { created: false, version };
  });
}
