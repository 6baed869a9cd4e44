// Numbered schema changes after version 1 (schema.sql). MIGRATIONS[0] takes a version-1 database to version 2, and so on.
import type Database from 'better-sqlite3';

/** Append-only: never edit a step once released; schema.sql must equal the result of all steps. */
export const MIGRATIONS: ReadonlyArray<(db: Database.Database) => void> = [];
