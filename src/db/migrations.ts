// Numbered schema changes after version 1 (schema.sql). MIGRATIONS[0] takes a version-1 database to version 2, and so on.
import { createHmac } from 'node:crypto';
import type Database from 'better-sqlite3';

/** Append-only: never edit a step once released; schema.sql must equal the result of all steps, and each step
 *  after version 22 has its twin in POSTGRES_MIGRATIONS (db/postgres-migrations.ts). */
export const MIGRATIONS: ReadonlyArray<(db: Database.Database) => void> = [
  // 1 → 2, quotas: the recent uses of the windowed quotas.
  (db) => {
    db.exec(`CREATE TABLE quota_usage (
      application_id  TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
      quota           TEXT NOT NULL,
      subject         TEXT,
      used_at         TEXT NOT NULL
    );
    CREATE INDEX quota_usage_window ON quota_usage(application_id, quota, used_at);`);
  },
  // 2 → 3, entry identity: the source a feed keys its entries from, the probe that lets a churning feed switch source,
  // and per-key fingerprints that tell a recycled guid from the entry that first had it. Existing keys stay valid:
  // every feed keeps keying from its guid, and keys as version 1 computed them are still recognised.
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
  // 3 → 4, bounds: when each entry key was last shown (every existing key counts as last shown when first seen), so
  // keys long gone can be pruned; how many entries a full churn hold did not keep; the indexes that let a hold be
  // released, Idempotency-Key records expire and a key's sessions be capped in small batches.
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
  // 4 → 5, parser upgrades: which parser version last read each feed; every existing feed was read by version 1, so its
  // first parse by a later version takes the upgrade pass (actions/ingest/upgrade.ts).
  (db) => {
    db.exec('ALTER TABLE feeds ADD COLUMN parser_version INTEGER NOT NULL DEFAULT 1');
  },
  // 5 → 6, feed health: the event types an endpoint receives (NULL = every type), and the feed.failing or feed.gone
  // alert of a feed's current outage, so each health event is sent once and feed.recovered ends it.
  (db) => {
    db.exec(`
      ALTER TABLE endpoints ADD COLUMN filter_types TEXT;
      ALTER TABLE feeds ADD COLUMN health_alert TEXT CHECK (health_alert IN ('failing', 'gone'));
      ALTER TABLE feeds ADD COLUMN health_alert_at TEXT;
    `);
  },
  // 6 → 7, the work pool: each application's waiting events by due time, for the fair delivery claim.
  (db) => {
    db.exec(
      "CREATE INDEX events_waiting_by_application ON events(application_id, next_attempt_at) WHERE status IN ('pending', 'failed');",
    );
  },
  // 7 → 8, history: each feed's last entries with the facts the trace reads, which entries each event carries, and per
  // subscription the updates opt-in, a backfill awaiting its feed's baseline and its last pauses. Existing feeds start
  // with an empty history; their next documents fill it.
  (db) => {
    db.exec(`
      ALTER TABLE subscriptions ADD COLUMN updates INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE subscriptions ADD COLUMN backfill INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE subscriptions ADD COLUMN pauses TEXT;
      ALTER TABLE held_entries ADD COLUMN key_source TEXT;
      CREATE TABLE entry_history (
        feed_id        TEXT NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
        key            TEXT NOT NULL,
        key_source     TEXT,
        content_hash   TEXT NOT NULL,
        first_seen_at  TEXT NOT NULL,
        via            TEXT NOT NULL DEFAULT 'poll' CHECK (via IN ('poll', 'push')),
        fate           TEXT NOT NULL CHECK (fate IN ('baseline', 'new', 'revealed', 'released', 'discarded')),
        changed_at     TEXT,
        entry          TEXT NOT NULL,
        UNIQUE (feed_id, key)
      );
      CREATE INDEX entry_history_recent ON entry_history(feed_id, first_seen_at);
      CREATE TABLE event_entries (
        subscription_id  TEXT NOT NULL,
        key              TEXT NOT NULL,
        event_id         TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
        PRIMARY KEY (subscription_id, key, event_id)
      ) WITHOUT ROWID;
      CREATE INDEX event_entries_by_event ON event_entries(event_id);
    `);
  },
  // 8 → 9, dashboard charts and metrics: each feed's polls per hour for its 24 h chart; the indexes that read an
  // endpoint's recent attempts and count feeds by status without touching their rows.
  (db) => {
    db.exec(`
      CREATE INDEX feeds_by_status ON feeds(status, id);
      CREATE INDEX attempts_by_endpoint ON attempts(endpoint_id, started_at, status_code, duration_ms);
      CREATE TABLE feed_poll_hours (
        feed_id      TEXT NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
        hour         TEXT NOT NULL,
        ok           INTEGER NOT NULL DEFAULT 0,
        failed       INTEGER NOT NULL DEFAULT 0,
        throttled    INTEGER NOT NULL DEFAULT 0,
        new_entries  INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (feed_id, hour)
      ) WITHOUT ROWID;
      CREATE INDEX feed_poll_hours_by_hour ON feed_poll_hours(hour);
    `);
  },
  // 9 → 10, queries that scan: the indexes every list filter and status count seeks on — an application's events by
  // status, a subscription's events by id (replacing the (subscription_id, sequence) order nothing used), an
  // application's feeds by id (feeds by status came with 8 → 9).
  (db) => {
    db.exec(`
      CREATE INDEX subscriptions_by_application_feed ON subscriptions(application_id, feed_id);
      DROP INDEX events_by_subscription;
      CREATE INDEX events_by_subscription ON events(subscription_id, id);
      CREATE INDEX events_by_application_status ON events(application_id, status, id);
    `);
  },
  // 10 → 11, WebSub: each feed's subscription at its hub.
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
  // 11 → 12, endpoint options: the extra headers sent with every attempt to the endpoint (NULL = none), and how many
  // attempts it may start in any one second (NULL = no limit).
  (db) => {
    db.exec(`
      ALTER TABLE endpoints ADD COLUMN headers TEXT;
      ALTER TABLE endpoints ADD COLUMN rate_limit INTEGER;
    `);
  },
  // 12 → 13, scale: the feeds a URL names by fetch or discovery URL, so that a new subscription's duplicate check
  // seeks instead of walking the endpoint's subscriptions.
  (db) => {
    db.exec(`
      CREATE INDEX feeds_by_fetch_url ON feeds(fetch_url);
      CREATE INDEX feeds_by_discovered_url ON feeds(discovered_url) WHERE discovered_url IS NOT NULL;
    `);
  },
  // 13 → 14: an endpoint's subscriptions in id order, so GET /v1/subscriptions?endpoint= seeks them instead of walking
  // every subscription of the application looking for the endpoint's.
  (db) => {
    db.exec('CREATE INDEX subscriptions_by_endpoint ON subscriptions(endpoint_id, id);');
  },
  // 14 → 15, writes per poll: feed leases move out of the feeds row into a table of their own that holds only the
  // polls in flight (a few pages), so a claim rewrites those pages, not each claimed feed's row a second time.
  (db) => {
    db.exec(`
      CREATE TABLE feed_leases (
        feed_id TEXT PRIMARY KEY REFERENCES feeds(id) ON DELETE CASCADE,
        until   TEXT NOT NULL
      ) WITHOUT ROWID;
      INSERT INTO feed_leases (feed_id, until) SELECT id, lease_until FROM feeds WHERE lease_until IS NOT NULL;
      ALTER TABLE feeds DROP COLUMN lease_until;
    `);
  },
  // 15 → 16, writes per poll: the chart's poll counts keyed by hour, then feed, so the counts noted in memory and
  // written by the minute, sorted, fill the hour's range in order (actions/poll-counts.ts) rather than a page of each
  // feed's run of hours. No foreign key: its cascade would walk the table for each deleted feed; a deleted feed's rows
  // are pruned with their hours, within a day.
  (db) => {
    db.exec(`
      CREATE TABLE feed_poll_hours_by_hour_and_feed (
        hour         TEXT NOT NULL,
        feed_id      TEXT NOT NULL,
        ok           INTEGER NOT NULL DEFAULT 0,
        failed       INTEGER NOT NULL DEFAULT 0,
        throttled    INTEGER NOT NULL DEFAULT 0,
        new_entries  INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (hour, feed_id)
      ) WITHOUT ROWID;
      INSERT INTO feed_poll_hours_by_hour_and_feed (hour, feed_id, ok, failed, throttled, new_entries)
        SELECT hour, feed_id, ok, failed, throttled, new_entries FROM feed_poll_hours ORDER BY hour, feed_id;
      DROP TABLE feed_poll_hours;
      ALTER TABLE feed_poll_hours_by_hour_and_feed RENAME TO feed_poll_hours;
    `);
  },
  // 16 → 17, writes per poll: the identity probe (a JSON list of keys per source, tens of KB for a long feed) moves out
  // of the feeds row, which every poll rewrites: a 304 rewrites the page its feed's row is on, and small rows put more
  // feeds on a page.
  (db) => {
    db.exec(`
      CREATE TABLE feed_probes (
        feed_id TEXT PRIMARY KEY REFERENCES feeds(id) ON DELETE CASCADE,
        probe   TEXT NOT NULL
      );
      INSERT INTO feed_probes (feed_id, probe) SELECT id, identity_probe FROM feeds WHERE identity_probe IS NOT NULL;
      ALTER TABLE feeds DROP COLUMN identity_probe;
    `);
  },
  // 17 → 18: a refresh (or push stopping) while the feed's poll runs is noted on the lease, so the poll's record, which
  // sets the next poll from its own answer, does not drop it.
  (db) => {
    db.exec('ALTER TABLE feed_leases ADD COLUMN again_at TEXT');
  },
  // 18 → 19, WebSub: each subscribe request names a random callback token of its own, stored (version 11 derived one
  // per feed from the secret), the callback a renewal replaces is kept until the renewal is verified, a lapsed lease
  // has a status of its own ('expired'), and a plain-http hub has no secret. Existing callbacks keep their token: the
  // hub still knows them.
  (db) => {
    db.exec(`
      CREATE TABLE websub_subscriptions_v19 (
        feed_id           TEXT PRIMARY KEY,
        hub_url           TEXT NOT NULL,
        topic_url         TEXT NOT NULL,
        secret            TEXT,
        callback_token    TEXT NOT NULL,
        previous_token    TEXT,
        status            TEXT NOT NULL
                          CHECK (status IN ('subscribing', 'active', 'expired', 'denied', 'failed', 'unsubscribing')),
        pending           TEXT CHECK (pending IN ('subscribe', 'unsubscribe')),
        lease_expires_at  TEXT,
        next_action_at    TEXT NOT NULL,
        attempts          INTEGER NOT NULL DEFAULT 0,
        last_push_at      TEXT,
        last_error        TEXT,
        created_at        TEXT NOT NULL,
        updated_at        TEXT NOT NULL
      );
    `);
    const rows = db.prepare('SELECT feed_id, secret FROM websub_subscriptions').all() as {
      feed_id: string;
      secret: string;
    }[];
    const copy = db.prepare(
      `INSERT INTO websub_subscriptions_v19 (feed_id, hub_url, topic_url, secret, callback_token, status, pending,
         lease_expires_at, next_action_at, attempts, last_push_at, last_error, created_at, updated_at)
       SELECT feed_id, hub_url, topic_url, secret, ?, status, pending, lease_expires_at, next_action_at, attempts,
         last_push_at, last_error, created_at, updated_at
       FROM websub_subscriptions WHERE feed_id = ?`,
    );
    // The token schema version 11 derived from the secret, frozen here as it was.
    for (const r of rows)
      copy.run(
        createHmac('sha256', r.secret)
          .update(`feedsub websub callback ${r.feed_id}`)
          .digest('base64url'),
        r.feed_id,
      );
    db.exec(`
      DROP TABLE websub_subscriptions;
      ALTER TABLE websub_subscriptions_v19 RENAME TO websub_subscriptions;
      CREATE INDEX websub_subscriptions_due ON websub_subscriptions(next_action_at);
    `);
  },
  // 19 → 20: the trace finds an entry by its guid or URL with one seek in the feed's history and in its hold, instead of
  // reading the JSON of every entry the feed stores or holds. Each index carries the order the trace answers in: the
  // newest history entry first, the first held one in document order.
  (db) => {
    db.exec(`
      CREATE INDEX entry_history_by_guid ON entry_history(feed_id, entry ->> '$.guid', first_seen_at);
      CREATE INDEX entry_history_by_url ON entry_history(feed_id, entry ->> '$.url', first_seen_at);
      CREATE INDEX held_entries_by_guid ON held_entries(feed_id, entry ->> '$.guid', position);
      CREATE INDEX held_entries_by_url ON held_entries(feed_id, entry ->> '$.url', position);
    `);
  },
  // 20 → 21, backfills off the request path: a backfill is queued by a loop a chunk at a time, so a subscription notes
  // when its backfill became ready (backfill_at) and the entries still to send (backfill_entries); a window quota's use
  // counts an amount (the entries a backfill asks for). A backfill waiting for a baseline its feed already has is ready
  // now; pausing ends a backfill, so a paused subscription waits for none.
  (db) => {
    db.exec(`
      ALTER TABLE quota_usage ADD COLUMN amount INTEGER NOT NULL DEFAULT 1;
      ALTER TABLE subscriptions ADD COLUMN backfill_at TEXT;
      CREATE INDEX subscriptions_backfilling ON subscriptions(application_id, id) WHERE backfill_at IS NOT NULL;
      CREATE TABLE backfill_entries (
        subscription_id  TEXT NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,
        position         INTEGER NOT NULL,
        key              TEXT NOT NULL,
        PRIMARY KEY (subscription_id, position)
      ) WITHOUT ROWID;
      UPDATE subscriptions SET backfill = 0 WHERE backfill > 0 AND status = 'paused';
      UPDATE subscriptions SET backfill_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        WHERE backfill > 0 AND feed_id IN (SELECT id FROM feeds WHERE baseline_at IS NOT NULL);
    `);
  },
  // 21 → 22 (storage bounds). Held entries in a rowid table: a WITHOUT ROWID row of more than about 1,000 bytes (most
  // held entries) keeps 489 bytes in its page and puts the rest on a 4 KiB overflow page of its own; a rowid table keeps
  // rows of up to about 4 KB in their page.
  // The storage budget (quotas.storage_bytes_per_application): feeds may be 'over_budget' (a CHECK constraint, so the
  // table is rebuilt: create, copy, drop, rename, with foreign keys off, as migrate() runs every step), and count what
  // they keep and which application alone uses them; events count their bytes; each application's sums. Existing rows
  // are counted here as store/storage.ts counts them (the maintenance pass recounts them anyway).
  (db) => {
    db.exec(`
      CREATE TABLE held_entries_rowid (
        feed_id     TEXT NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
        key         TEXT NOT NULL,
        entry       TEXT NOT NULL,
        position    INTEGER NOT NULL,
        held_at     TEXT NOT NULL,
        fingerprint TEXT,
        key_source  TEXT,
        PRIMARY KEY (feed_id, key)
      );
      INSERT INTO held_entries_rowid (feed_id, key, entry, position, held_at, fingerprint, key_source)
        SELECT feed_id, key, entry, position, held_at, fingerprint, key_source FROM held_entries
        ORDER BY feed_id, position, held_at;
      DROP TABLE held_entries;
      ALTER TABLE held_entries_rowid RENAME TO held_entries;
      CREATE INDEX held_entries_order ON held_entries(feed_id, position, held_at);
      CREATE INDEX held_entries_by_guid ON held_entries(feed_id, entry ->> '$.guid', position);
      CREATE INDEX held_entries_by_url ON held_entries(feed_id, entry ->> '$.url', position);
    `);
    const columns = `id, url, credentials, credential_key, fetch_url, discovered_url, title, site_url, format, status,
      baseline_at, etag, last_modified, body_hash, last_polled_at, last_success_at, next_poll_at, interval_seconds,
      ttl_seconds, last_http_status, error_count, network_error_count, http_error_count, parse_error_count, last_error,
      last_error_at, degraded, redirect_url, redirect_count, entry_count, hub_url, self_url, created_at, updated_at,
      identity_key, identity_rotations, held_dropped, parser_version, health_alert, health_alert_at`;
    db.exec(`
      CREATE TABLE feeds_budget (
        id                   TEXT PRIMARY KEY,
        url                  TEXT NOT NULL,
        credentials          TEXT,
        credential_key       TEXT NOT NULL DEFAULT '',
        fetch_url            TEXT NOT NULL,
        discovered_url       TEXT,
        title                TEXT,
        site_url             TEXT,
        format               TEXT,
        status               TEXT NOT NULL DEFAULT 'pending'
                             CHECK (status IN ('pending', 'active', 'error', 'gone', 'identity_changed', 'over_budget')),
        baseline_at          TEXT,
        etag                 TEXT,
        last_modified        TEXT,
        body_hash            TEXT,
        last_polled_at       TEXT,
        last_success_at      TEXT,
        next_poll_at         TEXT NOT NULL,
        interval_seconds     INTEGER,
        ttl_seconds          INTEGER,
        last_http_status     INTEGER,
        error_count          INTEGER NOT NULL DEFAULT 0,
        network_error_count  INTEGER NOT NULL DEFAULT 0,
        http_error_count     INTEGER NOT NULL DEFAULT 0,
        parse_error_count    INTEGER NOT NULL DEFAULT 0,
        last_error           TEXT,
        last_error_at        TEXT,
        degraded             TEXT,
        redirect_url         TEXT,
        redirect_count       INTEGER NOT NULL DEFAULT 0,
        entry_count          INTEGER NOT NULL DEFAULT 0,
        hub_url              TEXT,
        self_url             TEXT,
        created_at           TEXT NOT NULL,
        updated_at           TEXT NOT NULL,
        identity_key         TEXT NOT NULL DEFAULT 'guid' CHECK (identity_key IN ('guid', 'link', 'enclosure', 'content')),
        identity_rotations   INTEGER NOT NULL DEFAULT 0,
        held_dropped         INTEGER NOT NULL DEFAULT 0,
        parser_version       INTEGER NOT NULL DEFAULT 1,
        health_alert         TEXT CHECK (health_alert IN ('failing', 'gone')),
        health_alert_at      TEXT,
        sole_application_id  TEXT,
        stored_keys          INTEGER NOT NULL DEFAULT 0,
        stored_bytes         INTEGER NOT NULL DEFAULT 0,
        budget_held_at       TEXT,
        UNIQUE (url, credential_key)
      );
      INSERT INTO feeds_budget (${columns}, sole_application_id, stored_keys, stored_bytes)
        SELECT ${columns},
          (SELECT CASE WHEN count(DISTINCT s.application_id) = 1 THEN min(s.application_id) END
             FROM subscriptions s WHERE s.feed_id = f.id),
          (SELECT count(*) FROM entries e WHERE e.feed_id = f.id),
          (SELECT count(*) * 255 FROM entries e WHERE e.feed_id = f.id)
            + (SELECT coalesce(sum(octet_length(h.entry) + 390), 0) FROM held_entries h WHERE h.feed_id = f.id)
            + (SELECT coalesce(sum(octet_length(x.entry) + 300), 0) FROM entry_history x WHERE x.feed_id = f.id)
            + (SELECT coalesce(sum(octet_length(p.probe) + 50), 0) FROM feed_probes p WHERE p.feed_id = f.id)
        FROM feeds f ORDER BY f.rowid;
      DROP TABLE feeds;
      ALTER TABLE feeds_budget RENAME TO feeds;
      CREATE INDEX feeds_due ON feeds(next_poll_at) WHERE status <> 'gone';
      CREATE INDEX feeds_by_status ON feeds(status, id);
      CREATE INDEX feeds_by_fetch_url ON feeds(fetch_url);
      CREATE INDEX feeds_by_discovered_url ON feeds(discovered_url) WHERE discovered_url IS NOT NULL;
      CREATE INDEX feeds_by_sole_application ON feeds(sole_application_id, id) WHERE sole_application_id IS NOT NULL;

      ALTER TABLE events ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0;
      UPDATE events SET stored_bytes = 700
        + coalesce((SELECT octet_length(b.body) FROM event_bodies b WHERE b.event_id = events.id), 0)
        + 205 * (SELECT count(*) FROM event_entries x WHERE x.event_id = events.id)
        + (SELECT coalesce(sum(260 + coalesce(octet_length(a.response_body), 0)), 0) FROM attempts a
           WHERE a.event_id = events.id);

      CREATE TABLE application_storage (
        application_id    TEXT PRIMARY KEY REFERENCES applications(id) ON DELETE CASCADE,
        feed_bytes        INTEGER NOT NULL DEFAULT 0,
        event_bytes       INTEGER NOT NULL DEFAULT 0,
        feed_walk_at      TEXT,
        feed_walk_change  INTEGER NOT NULL DEFAULT 0,
        event_walk_at     TEXT,
        event_walk_change INTEGER NOT NULL DEFAULT 0
      ) WITHOUT ROWID;
      INSERT INTO application_storage (application_id, feed_bytes, event_bytes)
        SELECT a.id,
          (SELECT coalesce(sum(f.stored_bytes), 0) FROM feeds f WHERE f.sole_application_id = a.id),
          (SELECT coalesce(sum(e.stored_bytes), 0) FROM events e WHERE e.application_id = a.id)
        FROM applications a;
    `);
  },
  // 22 → 23, nodes: the serve processes on the database, the work one of them at a time does, the node whose
  // heartbeat renews each lease, and the keys every node signs with.
  (db) => {
    db.exec(`
      ALTER TABLE feed_leases ADD COLUMN node_id TEXT;
      ALTER TABLE events ADD COLUMN lease_node TEXT;
      CREATE INDEX events_leased ON events(lease_node) WHERE lease_until IS NOT NULL;
      CREATE TABLE nodes (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        version     TEXT NOT NULL,
        started_at  TEXT NOT NULL,
        seen_at     TEXT NOT NULL,
        polls       INTEGER NOT NULL DEFAULT 0,
        deliveries  INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE service_keys (
        name  TEXT PRIMARY KEY,
        key   TEXT NOT NULL
      );
      CREATE TABLE node_roles (
        role     TEXT PRIMARY KEY,
        node_id  TEXT NOT NULL,
        until    TEXT NOT NULL
      );
    `);
  },
  // 23 → 24 (subscription filters): a subscription's keep and block rules, when they last changed, and how many
  // entries they filtered out.
  (db) => {
    db.exec(`
      ALTER TABLE subscriptions ADD COLUMN entry_filter TEXT;
      ALTER TABLE subscriptions ADD COLUMN entry_filter_at TEXT;
      ALTER TABLE subscriptions ADD COLUMN entries_filtered INTEGER NOT NULL DEFAULT 0;
    `);
  },
  // 24 → 25: each stored entry's source hash (what its texts were before rendering), so a document's entries the
  // history holds unchanged are not rendered again.
  (db) => {
    db.exec('ALTER TABLE entry_history ADD COLUMN source_hash TEXT;');
  },
];

/** The schema version of a database schema.sql makes, which every migration leads to; PostgreSQL's
 *  (schema-postgres.sql, db/postgres-migrations.ts) counts in the same sequence: each migration here from version 22
 *  on has its PostgreSQL step there. */
export const SCHEMA_VERSION = MIGRATIONS.length + 1;
