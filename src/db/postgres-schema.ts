// Makes a PostgreSQL database feedsub's, or brings it up to date: an empty database gets schema-postgres.sql at the
// current schema version, a database feedsub made at an older version is taken through the steps it lacks
// (db/postgres-migrations.ts), one at a newer version is refused, and anything else is refused. The version counts in
// SQLite's sequence (db/migrations.ts SCHEMA_VERSION).
import { SCHEMA_VERSION } from './migrations.ts';
import type { Engine } from './engine.ts';
import {
  POSTGRES_FIRST_VERSION,
  POSTGRES_MIGRATIONS,
  type PostgresStep,
} from './postgres-migrations.ts';

/** The advisory lock that one node holds while it makes or checks the schema, so that nodes starting together on an
 *  empty database do not both make it: "feed" in ASCII. */
const SCHEMA_LOCK = 0x66656564;

/** What preparePostgresSchema found: whether it made the schema, the version the database had before (when it was
 *  feedsub's already), and the version it has now. */
export type PreparedSchema = { created: boolean; version: number; from?: number };

/** The version sequence of PostgreSQL databases: where it begins and its steps (a test passes its own). */
export type PostgresVersions = { first: number; steps: readonly PostgresStep[] };

const RELEASED: PostgresVersions = { first: POSTGRES_FIRST_VERSION, steps: POSTGRES_MIGRATIONS };

/** Makes the schema in an empty database, or takes one feedsub made through the steps it lacks, all in one transaction
 *  under the schema lock: of several nodes starting at once, one makes or migrates and the others find it done. Throws,
 *  saying what to do, on a database that is not empty and not feedsub's, or whose version this feedsub does not know (a
 *  newer feedsub migrated it: an older node must not run against it). */
export function preparePostgresSchema(
  engine: Engine,
  schemaSql: string,
  versions: PostgresVersions = RELEASED,
): Promise<PreparedSchema> {
  const latest = versions.first + versions.steps.length;
  if (versions === RELEASED && latest !== SCHEMA_VERSION)
    throw new Error(
      `db: PostgreSQL's schema steps lead to version ${latest}, SQLite's to ${SCHEMA_VERSION}: every migration needs its PostgreSQL step`,
    );
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
    if (version < versions.first)
      throw new Error(
        `db: the PostgreSQL database has schema version ${version}, older than any this feedsub can upgrade (PostgreSQL databases begin at version ${versions.first})`,
      );
    if (version === latest) return { created: false, version };
    for (let v = version; v < latest; v++) await versions.steps[v - versions.first]!(sql);
    await sql.run('UPDATE feedsub_schema SET version = @version', { version: latest });
    return { created: false, version: latest, from: version };
  });
}
