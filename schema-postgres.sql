-- feedsub's database for a new install on PostgreSQL: the tables, columns, keys and indexes of schema.sql (SQLite),
-- which says what each one holds, in PostgreSQL's words. test/db/schema-postgres.test.ts checks that the two agree.
-- - Text compares and sorts byte by byte (COLLATE "C"), as SQLite's does, whatever the database's default collation:
--   ids, keys and ISO 8601 times order and page the same on both engines.
-- - Integers are 64-bit (BIGINT), as SQLite's are.
-- - SQLite's rowid, which the store reads where rows keep their insertion order (events claimed by it, entry history
--   ordered by it), is a column of that name here; attempts.id, a rowid alias there, is an identity column.
-- - The JSON expression indexes read the entry text as json (SQLite's entry ->> '$.guid' is (entry::json ->> 'guid')).

CREATE TABLE applications (
  id          TEXT COLLATE "C" PRIMARY KEY,
  name        TEXT COLLATE "C" NOT NULL UNIQUE,
  created_at  TEXT COLLATE "C" NOT NULL
);

CREATE TABLE api_keys (
  id              TEXT COLLATE "C" PRIMARY KEY,
  application_id  TEXT COLLATE "C" NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  name            TEXT COLLATE "C",
  prefix          TEXT COLLATE "C" NOT NULL,
  hash            TEXT COLLATE "C" NOT NULL UNIQUE,
  created_at      TEXT COLLATE "C" NOT NULL,
  last_used_at    TEXT COLLATE "C",
  revoked_at      TEXT COLLATE "C"
);

CREATE TABLE endpoints (
  id                    TEXT COLLATE "C" PRIMARY KEY,
  application_id        TEXT COLLATE "C" NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  title                 TEXT COLLATE "C" NOT NULL,
  url                   TEXT COLLATE "C" NOT NULL,
  secret                TEXT COLLATE "C" NOT NULL,
  previous_secret       TEXT COLLATE "C",
  previous_secret_until TEXT COLLATE "C",
  status                TEXT COLLATE "C" NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  disabled_reason       TEXT COLLATE "C",
  failing_since         TEXT COLLATE "C",
  created_at            TEXT COLLATE "C" NOT NULL,
  updated_at            TEXT COLLATE "C" NOT NULL,
  filter_types          TEXT COLLATE "C",
  headers               TEXT COLLATE "C",
  rate_limit            BIGINT
);
CREATE INDEX endpoints_by_application ON endpoints(application_id, id);

CREATE TABLE feeds (
  id                   TEXT COLLATE "C" PRIMARY KEY,
  url                  TEXT COLLATE "C" NOT NULL,
  credentials          TEXT COLLATE "C",
  credential_key       TEXT COLLATE "C" NOT NULL DEFAULT '',
  fetch_url            TEXT COLLATE "C" NOT NULL,
  discovered_url       TEXT COLLATE "C",
  title                TEXT COLLATE "C",
  site_url             TEXT COLLATE "C",
  format               TEXT COLLATE "C",
  status               TEXT COLLATE "C" NOT NULL DEFAULT 'pending'
                       CHECK (status IN ('pending', 'active', 'error', 'gone', 'identity_changed', 'over_budget')),
  baseline_at          TEXT COLLATE "C",
  etag                 TEXT COLLATE "C",
  last_modified        TEXT COLLATE "C",
  body_hash            TEXT COLLATE "C",
  last_polled_at       TEXT COLLATE "C",
  last_success_at      TEXT COLLATE "C",
  next_poll_at         TEXT COLLATE "C" NOT NULL,
  interval_seconds     BIGINT,
  ttl_seconds          BIGINT,
  last_http_status     BIGINT,
  error_count          BIGINT NOT NULL DEFAULT 0,
  network_error_count  BIGINT NOT NULL DEFAULT 0,
  http_error_count     BIGINT NOT NULL DEFAULT 0,
  parse_error_count    BIGINT NOT NULL DEFAULT 0,
  last_error           TEXT COLLATE "C",
  last_error_at        TEXT COLLATE "C",
  degraded             TEXT COLLATE "C",
  redirect_url         TEXT COLLATE "C",
  redirect_count       BIGINT NOT NULL DEFAULT 0,
  entry_count          BIGINT NOT NULL DEFAULT 0,
  hub_url              TEXT COLLATE "C",
  self_url             TEXT COLLATE "C",
  created_at           TEXT COLLATE "C" NOT NULL,
  updated_at           TEXT COLLATE "C" NOT NULL,
  identity_key         TEXT COLLATE "C" NOT NULL DEFAULT 'guid' CHECK (identity_key IN ('guid', 'link', 'enclosure', 'content')),
  identity_rotations   BIGINT NOT NULL DEFAULT 0,
  held_dropped         BIGINT NOT NULL DEFAULT 0,
  parser_version       BIGINT NOT NULL DEFAULT 1,
  health_alert         TEXT COLLATE "C" CHECK (health_alert IN ('failing', 'gone')),
  health_alert_at      TEXT COLLATE "C",
  sole_application_id  TEXT COLLATE "C",
  stored_keys          BIGINT NOT NULL DEFAULT 0,
  stored_bytes         BIGINT NOT NULL DEFAULT 0,
  budget_held_at       TEXT COLLATE "C",
  UNIQUE (url, credential_key)
);
CREATE INDEX feeds_due ON feeds(next_poll_at) WHERE status <> 'gone';
CREATE INDEX feeds_by_status ON feeds(status, id);
CREATE INDEX feeds_by_fetch_url ON feeds(fetch_url);
CREATE INDEX feeds_by_discovered_url ON feeds(discovered_url) WHERE discovered_url IS NOT NULL;
CREATE INDEX feeds_by_sole_application ON feeds(sole_application_id, id) WHERE sole_application_id IS NOT NULL;

CREATE TABLE feed_leases (
  feed_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES feeds(id) ON DELETE CASCADE,
  until    TEXT COLLATE "C" NOT NULL,
  again_at TEXT COLLATE "C",
  node_id  TEXT COLLATE "C"
);

CREATE TABLE feed_probes (
  feed_id TEXT COLLATE "C" PRIMARY KEY REFERENCES feeds(id) ON DELETE CASCADE,
  probe   TEXT COLLATE "C" NOT NULL
);

CREATE TABLE subscriptions (
  id              TEXT COLLATE "C" PRIMARY KEY,
  application_id  TEXT COLLATE "C" NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  endpoint_id     TEXT COLLATE "C" NOT NULL REFERENCES endpoints(id),
  feed_id         TEXT COLLATE "C" NOT NULL REFERENCES feeds(id),
  url             TEXT COLLATE "C" NOT NULL,
  metadata        TEXT COLLATE "C",
  status          TEXT COLLATE "C" NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
  last_sequence   BIGINT NOT NULL DEFAULT 0,
  created_at      TEXT COLLATE "C" NOT NULL,
  updated_at      TEXT COLLATE "C" NOT NULL,
  updates         BIGINT NOT NULL DEFAULT 0,
  backfill        BIGINT NOT NULL DEFAULT 0,
  pauses          TEXT COLLATE "C",
  backfill_at     TEXT COLLATE "C",
  entry_filter     TEXT COLLATE "C",
  entry_filter_at  TEXT COLLATE "C",
  entries_filtered BIGINT NOT NULL DEFAULT 0,
  UNIQUE (endpoint_id, url)
);
CREATE INDEX subscriptions_by_application ON subscriptions(application_id, id);
CREATE INDEX subscriptions_by_feed ON subscriptions(feed_id, status);
CREATE INDEX subscriptions_by_application_feed ON subscriptions(application_id, feed_id);
CREATE INDEX subscriptions_by_endpoint ON subscriptions(endpoint_id, id);
CREATE INDEX subscriptions_backfilling ON subscriptions(application_id, id) WHERE backfill_at IS NOT NULL;

CREATE TABLE entries (
  feed_id        TEXT COLLATE "C" NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  key            TEXT COLLATE "C" NOT NULL,
  first_seen_at  TEXT COLLATE "C" NOT NULL,
  fingerprint    TEXT COLLATE "C",
  seen_at        TEXT COLLATE "C",
  PRIMARY KEY (feed_id, key)
);
CREATE INDEX entries_seen ON entries(feed_id, seen_at);

CREATE TABLE entry_history (
  feed_id        TEXT COLLATE "C" NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  key            TEXT COLLATE "C" NOT NULL,
  key_source     TEXT COLLATE "C",
  content_hash   TEXT COLLATE "C" NOT NULL,
  first_seen_at  TEXT COLLATE "C" NOT NULL,
  via            TEXT COLLATE "C" NOT NULL DEFAULT 'poll' CHECK (via IN ('poll', 'push')),
  fate           TEXT COLLATE "C" NOT NULL CHECK (fate IN ('baseline', 'new', 'revealed', 'released', 'discarded')),
  changed_at     TEXT COLLATE "C",
  entry          TEXT COLLATE "C" NOT NULL,
  rowid          BIGINT GENERATED BY DEFAULT AS IDENTITY UNIQUE,
  source_hash    TEXT COLLATE "C",
  UNIQUE (feed_id, key)
);
CREATE INDEX entry_history_recent ON entry_history(feed_id, first_seen_at);
CREATE INDEX entry_history_by_guid ON entry_history(feed_id, (entry::json ->> 'guid'), first_seen_at);
CREATE INDEX entry_history_by_url ON entry_history(feed_id, (entry::json ->> 'url'), first_seen_at);

CREATE TABLE backfill_entries (
  subscription_id  TEXT COLLATE "C" NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,
  position         BIGINT NOT NULL,
  key              TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (subscription_id, position)
);

CREATE TABLE held_entries (
  feed_id     TEXT COLLATE "C" NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  key         TEXT COLLATE "C" NOT NULL,
  entry       TEXT COLLATE "C" NOT NULL,
  position    BIGINT NOT NULL,
  held_at     TEXT COLLATE "C" NOT NULL,
  fingerprint TEXT COLLATE "C",
  key_source  TEXT COLLATE "C",
  PRIMARY KEY (feed_id, key)
);
CREATE INDEX held_entries_order ON held_entries(feed_id, position, held_at);
CREATE INDEX held_entries_by_guid ON held_entries(feed_id, (entry::json ->> 'guid'), position);
CREATE INDEX held_entries_by_url ON held_entries(feed_id, (entry::json ->> 'url'), position);

CREATE TABLE events (
  id               TEXT COLLATE "C" PRIMARY KEY,
  application_id   TEXT COLLATE "C" NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  endpoint_id      TEXT COLLATE "C" NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
  subscription_id  TEXT COLLATE "C" REFERENCES subscriptions(id) ON DELETE CASCADE,
  type             TEXT COLLATE "C" NOT NULL,
  sequence         BIGINT,
  status           TEXT COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'dead')),
  attempt_count    BIGINT NOT NULL DEFAULT 0,
  next_attempt_at  TEXT COLLATE "C" NOT NULL,
  lease_until      TEXT COLLATE "C",
  last_status_code BIGINT,
  last_error       TEXT COLLATE "C",
  created_at       TEXT COLLATE "C" NOT NULL,
  delivered_at     TEXT COLLATE "C",
  updated_at       TEXT COLLATE "C" NOT NULL,
  stored_bytes     BIGINT NOT NULL DEFAULT 0,
  rowid            BIGINT GENERATED BY DEFAULT AS IDENTITY UNIQUE,
  lease_node       TEXT COLLATE "C"
);
CREATE INDEX events_due ON events(next_attempt_at) WHERE status IN ('pending', 'failed');
CREATE INDEX events_leased ON events(lease_node) WHERE lease_until IS NOT NULL;
CREATE INDEX events_by_subscription ON events(subscription_id, id);
CREATE INDEX events_by_application ON events(application_id, id);
CREATE INDEX events_by_endpoint ON events(endpoint_id, id);
CREATE INDEX events_by_application_status ON events(application_id, status, id);
CREATE INDEX events_delivered ON events(delivered_at) WHERE status = 'delivered';
CREATE INDEX events_dead ON events(created_at) WHERE status = 'dead';
CREATE INDEX events_waiting ON events(subscription_id, sequence) WHERE status IN ('pending', 'failed');

CREATE INDEX events_waiting_by_application ON events(application_id, next_attempt_at) WHERE status IN ('pending', 'failed');

CREATE TABLE event_bodies (
  event_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
  body      TEXT COLLATE "C" NOT NULL
);

CREATE TABLE attempts (
  id             BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  event_id       TEXT COLLATE "C" NOT NULL REFERENCES events(id) ON DELETE CASCADE,
  endpoint_id    TEXT COLLATE "C" NOT NULL,
  started_at     TEXT COLLATE "C" NOT NULL,
  status_code    BIGINT,
  duration_ms    BIGINT NOT NULL,
  error          TEXT COLLATE "C",
  response_body  TEXT COLLATE "C"
);
CREATE INDEX attempts_by_event ON attempts(event_id, started_at);
CREATE INDEX attempts_by_endpoint ON attempts(endpoint_id, started_at, status_code, duration_ms);

CREATE TABLE event_entries (
  subscription_id  TEXT COLLATE "C" NOT NULL,
  key              TEXT COLLATE "C" NOT NULL,
  event_id         TEXT COLLATE "C" NOT NULL REFERENCES events(id) ON DELETE CASCADE,
  PRIMARY KEY (subscription_id, key, event_id)
);
CREATE INDEX event_entries_by_event ON event_entries(event_id);

CREATE TABLE application_storage (
  application_id    TEXT COLLATE "C" PRIMARY KEY REFERENCES applications(id) ON DELETE CASCADE,
  feed_bytes        BIGINT NOT NULL DEFAULT 0,
  event_bytes       BIGINT NOT NULL DEFAULT 0,
  feed_walk_at      TEXT COLLATE "C",
  feed_walk_change  BIGINT NOT NULL DEFAULT 0,
  event_walk_at     TEXT COLLATE "C",
  event_walk_change BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE idempotency_keys (
  application_id  TEXT COLLATE "C" NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  key             TEXT COLLATE "C" NOT NULL,
  method          TEXT COLLATE "C" NOT NULL,
  path            TEXT COLLATE "C" NOT NULL,
  request_hash    TEXT COLLATE "C" NOT NULL,
  status          BIGINT NOT NULL,
  response        TEXT COLLATE "C" NOT NULL,
  created_at      TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (application_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys(created_at);

CREATE TABLE sessions (
  id_hash         TEXT COLLATE "C" PRIMARY KEY,
  application_id  TEXT COLLATE "C" NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  api_key_id      TEXT COLLATE "C" NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
  csrf_token      TEXT COLLATE "C" NOT NULL,
  created_at      TEXT COLLATE "C" NOT NULL,
  last_seen_at    TEXT COLLATE "C" NOT NULL
);
CREATE INDEX sessions_by_key ON sessions(api_key_id, last_seen_at);

CREATE TABLE quota_usage (
  application_id  TEXT COLLATE "C" NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  quota           TEXT COLLATE "C" NOT NULL,
  subject         TEXT COLLATE "C",
  used_at         TEXT COLLATE "C" NOT NULL,
  amount          BIGINT NOT NULL DEFAULT 1
);
CREATE INDEX quota_usage_window ON quota_usage(application_id, quota, used_at);

CREATE TABLE feed_poll_hours (
  hour         TEXT COLLATE "C" NOT NULL,
  feed_id      TEXT COLLATE "C" NOT NULL,
  ok           BIGINT NOT NULL DEFAULT 0,
  failed       BIGINT NOT NULL DEFAULT 0,
  throttled    BIGINT NOT NULL DEFAULT 0,
  new_entries  BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (hour, feed_id)
);

CREATE TABLE websub_subscriptions (
  feed_id           TEXT COLLATE "C" PRIMARY KEY,
  hub_url           TEXT COLLATE "C" NOT NULL,
  topic_url         TEXT COLLATE "C" NOT NULL,
  secret            TEXT COLLATE "C",
  callback_token    TEXT COLLATE "C" NOT NULL,
  previous_token    TEXT COLLATE "C",
  status            TEXT COLLATE "C" NOT NULL
                    CHECK (status IN ('subscribing', 'active', 'expired', 'denied', 'failed', 'unsubscribing')),
  pending           TEXT COLLATE "C" CHECK (pending IN ('subscribe', 'unsubscribe')),
  lease_expires_at  TEXT COLLATE "C",
  next_action_at    TEXT COLLATE "C" NOT NULL,
  attempts          BIGINT NOT NULL DEFAULT 0,
  last_push_at      TEXT COLLATE "C",
  last_error        TEXT COLLATE "C",
  created_at        TEXT COLLATE "C" NOT NULL,
  updated_at        TEXT COLLATE "C" NOT NULL
);
CREATE INDEX websub_subscriptions_due ON websub_subscriptions(next_action_at);

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
