// Numbered schema changes after version 1 (schema.sql). MIGRATIONS[0] takes a version-1 database to version 2, and so on.
import type Database from 'better-sqlite3';

/** Append-only: never edit a step once released; schema.sql must equal the result of all steps. */
export const MIGRATIONS: ReadonlyArray<(db: Database.Database) => void> = [
  // 1 → 2 (issue 13, quotas): the recent uses of the windowed quotas.
  (db) => {
    db.exec(`CREATE TABLE quota_usage (
      application_id  TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
      quota           TEXT NOT NULL,
      subject         TEXT,
      used_at         TEXT NOT NULL
    );
    CREATE INDEX quota_usage_window ON quota_usage(application_id, quota, used_at);`);
  },
  // 2 → 3, entry identity (issue 12): the source a feed keys its entries from, the probe that lets a churning feed
  // switch source, and per-key fingerprints that tell a recycled guid from the entry that first had it. Existing keys
  // stay valid: every feed keeps keying from its guid, and keys the old code computed are still recognised.
  (db) => {
    db.exec(`
      ALTER TABLE feeds ADD COLUMN identity_key TEXT NOT NULL DEFAULT 'guid'
        CHECK (identity_key IN ('guid', 'link', 'enclosure', 'content'));
      ALTER TABLE feeds ADD COLUMN identity_probe TEXT;
      ALTER TABLE feeds ADD COLUMN identity_rotations INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE entries ADD COLUMN fingerprint TEXT;
      ALTER TABLE held_entries ADD COLUMN fingerprint TEXT;
    `);
  },
  // 3 → 4, bounds (issue 13): when each entry key was last shown (every existing key counts as last shown when first
  // seen), so keys long gone can be pruned; how many entries a full churn hold did not keep; the indexes that let a
  // hold be released, Idempotency-Key records expire and a key's sessions be capped in small batches.
  (db) => {
    db.exec(`
      ALTER TABLE entries ADD COLUMN seen_at TEXT;
      UPDATE entries SET seen_at = first_seen_at;
      CREATE INDEX entries_seen ON entries(feed_id, seen_at);
      ALTER TABLE feeds ADD COLUMN held_dropped INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX held_entries_order ON held_entries(feed_id, position, held_at);
      CREATE INDEX idempotency_keys_expiry ON idempotency_keys(created_at);
      CREATE INDEX sessions_by_key ON sessions(api_key_id, last_seen_at);
    `);
  },
  // 4 → 5, parser upgrades (issue 12): which parser version last read each feed; every existing feed was read by
  // version 1, so its first parse by a later version takes the upgrade pass (worker/poll-upgrade.ts).
  (db) => {
    db.exec('ALTER TABLE feeds ADD COLUMN parser_version INTEGER NOT NULL DEFAULT 1');
  },
  // 5 → 6, feed health (issue 14): the event types an endpoint receives (NULL = every type), and the feed.failing or
  // feed.gone alert of a feed's current outage, so each health event is sent once and feed.recovered ends it.
  (db) => {
    db.exec(`
      ALTER TABLE endpoints ADD COLUMN filter_types TEXT;
      ALTER TABLE feeds ADD COLUMN health_alert TEXT CHECK (health_alert IN ('failing', 'gone'));
      ALTER TABLE feeds ADD COLUMN health_alert_at TEXT;
    `);
  },
  // 6 → 7 (issue 13, the work pool): each application's waiting events by due time, for the fair delivery claim.
  (db) => {
    db.exec(
      "CREATE INDEX events_waiting_by_application ON events(application_id, next_attempt_at) WHERE status IN ('pending', 'failed');",
    );
  },
  // 7 → 8 (issue 14, WebSub): each feed's subscription at its hub; self-contained, renumbered at merge if needed.
  (db) => {
    db.exec(`
      CREATE TABLE websub_subscriptions (
        feed_id           TEXT PRIMARY KEY,
        hub_url           TEXT NOT NULL,
        topic_url         TEXT NOT NULL,
        secret            TEXT NOT NULL,
        status            TEXT NOT NULL CHECK (status IN ('subscribing', 'active', 'denied', 'failed', 'unsubscribing')),
        pending           TEXT CHECK (pending IN ('subscribe', 'unsubscribe')),
        lease_expires_at  TEXT,
        next_action_at    TEXT NOT NULL,
        attempts          INTEGER NOT NULL DEFAULT 0,
        last_push_at      TEXT,
        last_error        TEXT,
        created_at        TEXT NOT NULL,
        updated_at        TEXT NOT NULL
      );
      CREATE INDEX websub_subscriptions_due ON websub_subscriptions(next_action_at);
    `);
  },
];
