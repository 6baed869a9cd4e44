// Numbered schema changes of PostgreSQL databases, in the one version sequence SQLite's migrations count
// (db/migrations.ts). A PostgreSQL database begins at POSTGRES_FIRST_VERSION, the version schema-postgres.sql was first
// written for; each later version has its step here as well as in MIGRATIONS, and schema-postgres.sql always equals a
// first-version database taken through every step (test/db/postgres-schema.test.ts compares the catalogs).
import type { Sql } from './engine.ts';

/** The schema version every PostgreSQL database begins at: no database of this engine is older. */
export const POSTGRES_FIRST_VERSION = 22;

/** A step takes a database from one version to the next, inside the transaction (and under the schema lock) that
 *  records the new version: PostgreSQL's DDL is transactional, so a step that fails leaves nothing of itself. */
export type PostgresStep = (sql: Sql) => Promise<void>;

/** Append-only: POSTGRES_MIGRATIONS[0] takes a version-22 database to version 23, and so on; never edit a step once
 *  released. Its length is SCHEMA_VERSION - POSTGRES_FIRST_VERSION. */
export const POSTGRES_MIGRATIONS: readonly PostgresStep[] = [
  // 22 → 23, nodes: the serve processes on the database, the work one of them at a time does, the node whose
  // heartbeat renews each lease, and the keys every node signs with.
  (sql) =>
    sql.exec(`
      ALTER TABLE feed_leases ADD COLUMN node_id TEXT COLLATE "C";
      ALTER TABLE events ADD COLUMN lease_node TEXT COLLATE "C";
      CREATE INDEX events_leased ON events(lease_node) WHERE lease_until IS NOT NULL;
      CREATE TABLE nodes (
        id          TEXT COLLATE "C" PRIMARY KEY,
        name        TEXT COLLATE "C" NOT NULL,
        version     TEXT COLLATE "C" NOT NULL,
        started_at  TEXT COLLATE "C" NOT NULL,
        seen_at     TEXT COLLATE "C" NOT NULL,
        polls       BIGINT NOT NULL DEFAULT 0,
        deliveries  BIGINT NOT NULL DEFAULT 0
      );
      CREATE TABLE service_keys (
        name  TEXT COLLATE "C" PRIMARY KEY,
        key   TEXT COLLATE "C" NOT NULL
      );
      CREATE TABLE node_roles (
        role     TEXT COLLATE "C" PRIMARY KEY,
        node_id  TEXT COLLATE "C" NOT NULL,
        until    TEXT COLLATE "C" NOT NULL
      );
    `),
  // 23 → 24 (subscription filters): a subscription's keep and block rules, when they last changed, and how many
  // entries they filtered out.
  (sql) =>
    sql.exec(`
      ALTER TABLE subscriptions ADD COLUMN entry_filter TEXT COLLATE "C";
      ALTER TABLE subscriptions ADD COLUMN entry_filter_at TEXT COLLATE "C";
      ALTER TABLE subscriptions ADD COLUMN entries_filtered BIGINT NOT NULL DEFAULT 0;
    `),
  // 24 → 25: each stored entry's source hash (what its texts were before rendering), so a document's entries the
  // history holds unchanged are not rendered again.
  (sql) => sql.exec('ALTER TABLE entry_history ADD COLUMN source_hash TEXT COLLATE "C";'),
];
