-- feedsub's database for a new install. Later changes are numbered migrations in src/db/migrations.ts.
-- Times are ISO 8601 UTC strings with milliseconds (they sort as text). Ids are 24 hex chars.

CREATE TABLE applications (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  created_at  TEXT NOT NULL
);

CREATE TABLE api_keys (
  id              TEXT PRIMARY KEY,
  application_id  TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  name            TEXT,
  prefix          TEXT NOT NULL,          -- first characters of the key, for recognising it in lists
  hash            TEXT NOT NULL UNIQUE,   -- SHA-256 hex of the whole key; the key itself is never stored
  created_at      TEXT NOT NULL,
  last_used_at    TEXT,
  revoked_at      TEXT
);

CREATE TABLE endpoints (
  id                    TEXT PRIMARY KEY,
  application_id        TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  title                 TEXT NOT NULL,
  url                   TEXT NOT NULL,
  secret                TEXT NOT NULL,   -- whsec_…; signs every delivery
  previous_secret       TEXT,            -- during rotation deliveries carry both signatures
  previous_secret_until TEXT,
  status                TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  disabled_reason       TEXT,
  failing_since         TEXT,            -- first failure of the current run of failures; NULL after a success
  created_at            TEXT NOT NULL,
  updated_at            TEXT NOT NULL,
  filter_types          TEXT,            -- JSON array of the event types it receives; NULL = every type (schema version 6)
  headers               TEXT,            -- JSON object of extra headers sent with every attempt; NULL = none (schema version 12)
  rate_limit            INTEGER          -- attempts it may start in any one second; NULL = no limit (schema version 12)
);
CREATE INDEX endpoints_by_application ON endpoints(application_id, id);

-- One record per normalized feed URL, shared by every subscription to it, across applications.
CREATE TABLE feeds (
  id                   TEXT PRIMARY KEY,
  url                  TEXT NOT NULL,         -- the normalized subscribed URL, without credentials
  credentials          TEXT,                  -- user:password given in the subscribed URL; sent as Basic auth, never returned
  credential_key       TEXT NOT NULL DEFAULT '',  -- hash of credentials: a private feed is never shared with a subscription that lacks them
  fetch_url            TEXT NOT NULL,         -- what is fetched: url, a discovered feed, or a permanent redirect target
  discovered_url       TEXT,                  -- set when url was an HTML page and a feed link was found in it
  title                TEXT,
  site_url             TEXT,
  format               TEXT,
  status               TEXT NOT NULL DEFAULT 'pending'
                       CHECK (status IN ('pending', 'active', 'error', 'gone', 'identity_changed', 'over_budget')),
  baseline_at          TEXT,                  -- first successful parse; entries seen then are never sent
  etag                 TEXT,
  last_modified        TEXT,
  body_hash            TEXT,
  last_polled_at       TEXT,
  last_success_at      TEXT,
  next_poll_at         TEXT NOT NULL,
  interval_seconds     INTEGER,
  ttl_seconds          INTEGER,
  last_http_status     INTEGER,
  error_count          INTEGER NOT NULL DEFAULT 0,   -- consecutive failures; reset by a success
  network_error_count  INTEGER NOT NULL DEFAULT 0,   -- totals by kind
  http_error_count     INTEGER NOT NULL DEFAULT 0,
  parse_error_count    INTEGER NOT NULL DEFAULT 0,
  last_error           TEXT,
  last_error_at        TEXT,
  degraded             TEXT,                  -- last parse recovered from malformed XML: why
  redirect_url         TEXT,                  -- pending permanent redirect target
  redirect_count       INTEGER NOT NULL DEFAULT 0,
  entry_count          INTEGER NOT NULL DEFAULT 0,
  hub_url              TEXT,
  self_url             TEXT,
  created_at           TEXT NOT NULL,
  updated_at           TEXT NOT NULL,
  -- The source entry keys come from first (then the ones after it): guid, link, enclosure, content. A feed whose keys
  -- keep changing under a churn hold moves to the first later source that is stable (schema version 3).
  identity_key         TEXT NOT NULL DEFAULT 'guid' CHECK (identity_key IN ('guid', 'link', 'enclosure', 'content')),
  identity_rotations   INTEGER NOT NULL DEFAULT 0,  -- times the keys changed again under the current churn hold
  held_dropped         INTEGER NOT NULL DEFAULT 0,  -- unseen entries not held because the hold was full (schema version 4)
  parser_version       INTEGER NOT NULL DEFAULT 1,  -- PARSER_VERSION (feed/parse/parse.ts) of the last parse
                                                    -- (schema version 5)
  -- The feed.failing or feed.gone event sent for the current outage, and when (the fetch that raised it began): each
  -- is sent once, and the first success after it sends feed.recovered and clears both (schema version 6).
  health_alert         TEXT CHECK (health_alert IN ('failing', 'gone')),
  health_alert_at      TEXT,
  -- What the storage budget counts (schema version 22; store/storage.ts): the application every subscription of the feed
  -- belongs to (NULL: none, or several), the entry keys the feed stores, and the bytes of its keys, held entries, history
  -- and identity probe; and since when its application's budget holds its polling (status over_budget; NULL: not held).
  sole_application_id  TEXT,
  stored_keys          INTEGER NOT NULL DEFAULT 0,
  stored_bytes         INTEGER NOT NULL DEFAULT 0,
  budget_held_at       TEXT,
  UNIQUE (url, credential_key)
);
CREATE INDEX feeds_due ON feeds(next_poll_at) WHERE status <> 'gone';
-- /metrics and the dashboard count feeds by status: this narrow index (with the id, to find a feed's active
-- subscriptions) is read instead of the feed rows, which carry validators, errors and identity probes (schema version 9).
-- A 304 poll writes status only when it changes (store/feeds-poll.ts), so it leaves this index alone.
CREATE INDEX feeds_by_status ON feeds(status, id);
-- A new subscription's duplicate check finds the feeds a URL names by where they are fetched or were discovered
-- (store/subscriptions.ts findSubscriptionToSameFeed; schema version 13).
CREATE INDEX feeds_by_fetch_url ON feeds(fetch_url);
CREATE INDEX feeds_by_discovered_url ON feeds(discovered_url) WHERE discovered_url IS NOT NULL;
-- The feeds only one application uses, which its storage budget counts: its walk of them (schema version 22).
CREATE INDEX feeds_by_sole_application ON feeds(sole_application_id, id) WHERE sole_application_id IS NOT NULL;

-- The feeds being polled now, each until its lease ends (the poll's deadline plus a margin), by serve or poll --once
-- (schema version 15). Only polls in flight are here, a few pages, so taking and ending a lease rewrites those pages,
-- not the claimed feed's row (which the poll's outcome rewrites once). Released at serve's start. again_at: the earliest
-- time someone asked for the feed to be polled by while this poll ran (a refresh, push stopping); the poll's record,
-- which sets the next poll from its own answer, keeps it (schema version 18).
CREATE TABLE feed_leases (
  feed_id  TEXT PRIMARY KEY REFERENCES feeds(id) ON DELETE CASCADE,
  until    TEXT NOT NULL,
  again_at TEXT,
  -- The node (nodes.id) whose heartbeat renews the lease (schema version 23); NULL for a process that is not a node
  -- (poll --once), whose lease lasts the poll's deadline and a margin.
  node_id  TEXT
) WITHOUT ROWID;

-- A feed's identity probe (JSON: the keys later sources gave the last good document, feed/identity/switch.ts), apart
-- from its row, which every poll rewrites: tens of KB for a long feed (schema version 17).
CREATE TABLE feed_probes (
  feed_id TEXT PRIMARY KEY REFERENCES feeds(id) ON DELETE CASCADE,
  probe   TEXT NOT NULL
);

CREATE TABLE subscriptions (
  id              TEXT PRIMARY KEY,
  application_id  TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  endpoint_id     TEXT NOT NULL REFERENCES endpoints(id),
  feed_id         TEXT NOT NULL REFERENCES feeds(id),
  url             TEXT NOT NULL,            -- normalized URL as subscribed
  metadata        TEXT,                     -- the client's JSON text exactly as given, NULL when absent
  status          TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
  last_sequence   INTEGER NOT NULL DEFAULT 0,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  -- History (schema version 8): 1 when it receives subscription.entries_updated; the entries a backfill asked for and
  -- not taken yet (0: none); its last 20 pauses as JSON [[paused_at, resumed_at or null], …], for the trace.
  updates         INTEGER NOT NULL DEFAULT 0,
  backfill        INTEGER NOT NULL DEFAULT 0,
  pauses          TEXT,
  -- When its backfill became ready to queue (created on a feed with a baseline, or its feed's baseline came); NULL
  -- while it waits for a baseline, or once it is queued or ended (schema version 21).
  backfill_at     TEXT,
  -- Its filter (schema version 24): keep and block rules as JSON text (NULL: every entry is sent); when the filter was
  -- last set or removed (the trace tells whether an entry met the filter it has now); entries it filtered out.
  entry_filter     TEXT,
  entry_filter_at  TEXT,
  entries_filtered INTEGER NOT NULL DEFAULT 0,
  UNIQUE (endpoint_id, url)
);
CREATE INDEX subscriptions_by_application ON subscriptions(application_id, id);
CREATE INDEX subscriptions_by_feed ON subscriptions(feed_id, status);
-- An application's feeds, in feed id order, a page at a time (GET /v1/feeds, the dashboard's counts): a seek here, not a
-- walk of every feed asking whether the application uses it (schema version 10).
CREATE INDEX subscriptions_by_application_feed ON subscriptions(application_id, feed_id);
-- An endpoint's subscriptions in id order (GET /v1/subscriptions?endpoint=): a seek, not a walk of the application's
-- subscriptions looking for the endpoint's (schema version 14).
CREATE INDEX subscriptions_by_endpoint ON subscriptions(endpoint_id, id);
-- The backfills the backfill loop has to queue, per application in id order: it takes applications turn about
-- (actions/backfills.ts; schema version 21).
CREATE INDEX subscriptions_backfilling ON subscriptions(application_id, id) WHERE backfill_at IS NOT NULL;

-- Every entry key a feed has shown, kept after the entry leaves the feed (a tombstone) so it is not resent; the
-- maintenance pass deletes keys not shown for [retention] entry_key_days, beyond the feed's entry_keys_per_feed newest.
CREATE TABLE entries (
  feed_id        TEXT NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  key            TEXT NOT NULL,
  first_seen_at  TEXT NOT NULL,
  fingerprint    TEXT,   -- for a guid, link or enclosure key: short hashes of link, title, date and enclosure, which
                         -- tell the entry from another one that later shows the same guid (schema version 3)
  seen_at        TEXT,   -- the last document that showed the key, rewritten at most once a day (schema version 4)
  PRIMARY KEY (feed_id, key)
) WITHOUT ROWID;
CREATE INDEX entries_seen ON entries(feed_id, seen_at);

-- The last entries of each feed as events show them ([retention] entry_history_per_feed, entry_history_bytes_per_feed),
-- with the facts the trace reads: the source of the key, when and by which fetch it was first seen, and what was done
-- with it. Only for keys the entries table knows: pruning a key prunes its history (schema version 8).
CREATE TABLE entry_history (
  feed_id        TEXT NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  key            TEXT NOT NULL,
  key_source     TEXT,            -- the identity source of the key: guid, link, enclosure or content (NULL: held before)
  content_hash   TEXT NOT NULL,   -- of its title, summary, content and updated date: a change is an update
  first_seen_at  TEXT NOT NULL,   -- when the fetch that first showed it began (for a held entry, when it was held)
  via            TEXT NOT NULL DEFAULT 'poll' CHECK (via IN ('poll', 'push')),
  fate           TEXT NOT NULL CHECK (fate IN ('baseline', 'new', 'revealed', 'released', 'discarded')),
  changed_at     TEXT,            -- the last time a new version of it was stored
  entry          TEXT NOT NULL,   -- the entry JSON exactly as a webhook carries it (its latest version)
  source_hash    TEXT,            -- of its texts as the feed declared them (NULL: stored before version 25, or JSON Feed)
  UNIQUE (feed_id, key)
);
-- Newest first (first seen, then document order: a document is stored from its last entry up).
CREATE INDEX entry_history_recent ON entry_history(feed_id, first_seen_at);
-- The trace finds an entry by its guid or URL with one seek: among entries sharing one, the newest is read first.
CREATE INDEX entry_history_by_guid ON entry_history(feed_id, entry ->> '$.guid', first_seen_at);
CREATE INDEX entry_history_by_url ON entry_history(feed_id, entry ->> '$.url', first_seen_at);

-- The entries a started backfill has still to send, by key, in the order its events carry them (1 = the oldest): taken
-- from the history when the backfill starts, and each row deleted in the transaction that queues its event, so a
-- backfill cut short by a crash goes on where it stopped (actions/backfills.ts; schema version 21). At most 100 rows
-- per subscription, and only while its backfill is being queued.
CREATE TABLE backfill_entries (
  subscription_id  TEXT NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,
  position         INTEGER NOT NULL,
  key              TEXT NOT NULL,
  PRIMARY KEY (subscription_id, position)
) WITHOUT ROWID;

-- Entries held back by the churn guard until an operator accepts or discards them. A rowid table (schema version 22):
-- a held entry's JSON is often over 1 KB, which a WITHOUT ROWID row would put on a 4 KiB overflow page of its own.
CREATE TABLE held_entries (
  feed_id     TEXT NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  key         TEXT NOT NULL,
  entry       TEXT NOT NULL,      -- normalized entry JSON
  position    INTEGER NOT NULL,
  held_at     TEXT NOT NULL,      -- when the entry was first seen: a subscription created later never receives it
  fingerprint TEXT,               -- stored with the key when the entry is released (schema version 3)
  key_source  TEXT,               -- the identity source of the key, for the entry history (schema version 8)
  PRIMARY KEY (feed_id, key)
);
-- A release walks a hold in document order, a few hundred entries per transaction (schema version 4).
CREATE INDEX held_entries_order ON held_entries(feed_id, position, held_at);
-- The trace finds a held entry by its guid or URL with one seek: among entries sharing one, the first in document order.
CREATE INDEX held_entries_by_guid ON held_entries(feed_id, entry ->> '$.guid', position);
CREATE INDEX held_entries_by_url ON held_entries(feed_id, entry ->> '$.url', position);

CREATE TABLE events (
  id               TEXT PRIMARY KEY,
  application_id   TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  endpoint_id      TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
  subscription_id  TEXT REFERENCES subscriptions(id) ON DELETE CASCADE,   -- NULL for endpoint.test
  type             TEXT NOT NULL,
  sequence         INTEGER,
  status           TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'dead')),
  attempt_count    INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  TEXT NOT NULL,
  lease_until      TEXT,
  last_status_code INTEGER,
  last_error       TEXT,
  created_at       TEXT NOT NULL,
  delivered_at     TEXT,
  updated_at       TEXT NOT NULL,
  -- The bytes the event keeps, as the storage budget counts them: its body, its row and index entries, one row per entry
  -- it carries (event_entries) and its attempts with their responses (schema version 22; store/storage.ts).
  stored_bytes     INTEGER NOT NULL DEFAULT 0,
  -- The node (nodes.id) whose heartbeat renews lease_until while its attempt runs (schema version 23).
  lease_node       TEXT
);
CREATE INDEX events_due ON events(next_attempt_at) WHERE status IN ('pending', 'failed');
-- The events a node is attempting, which its heartbeat renews (schema version 23).
CREATE INDEX events_leased ON events(lease_node) WHERE lease_until IS NOT NULL;
-- A subscription's events newest first (GET /v1/events?subscription=) and deleting them in batches (schema version
-- 10); the FIFO check uses events_waiting.
CREATE INDEX events_by_subscription ON events(subscription_id, id);
CREATE INDEX events_by_application ON events(application_id, id);
CREATE INDEX events_by_endpoint ON events(endpoint_id, id);
-- GET /v1/events?status=: the application's events of one status newest first, a seek (schema version 10).
CREATE INDEX events_by_application_status ON events(application_id, status, id);
CREATE INDEX events_delivered ON events(delivered_at) WHERE status = 'delivered';   -- retention
CREATE INDEX events_dead ON events(created_at) WHERE status = 'dead';
-- The per-subscription FIFO check ("is an earlier event still waiting?") probes only waiting events, whatever the history.
CREATE INDEX events_waiting ON events(subscription_id, sequence) WHERE status IN ('pending', 'failed');

-- A fair claim seeks to each application's earliest waiting event, so one application's backlog never has to be walked
-- to reach another's due events (schema version 7).
CREATE INDEX events_waiting_by_application ON events(application_id, next_attempt_at) WHERE status IN ('pending', 'failed');

-- The exact bytes sent on every attempt, apart from the event's bookkeeping: leasing an event and recording an attempt
-- rewrite a small row, never a body of up to 256 KiB.
CREATE TABLE event_bodies (
  event_id  TEXT PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
  body      TEXT NOT NULL
);

CREATE TABLE attempts (
  id             INTEGER PRIMARY KEY,   -- appended in order: recording an attempt touches no random index page for it
  event_id       TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
  endpoint_id    TEXT NOT NULL,
  started_at     TEXT NOT NULL,
  status_code    INTEGER,
  duration_ms    INTEGER NOT NULL,
  error          TEXT,
  response_body  TEXT
);
CREATE INDEX attempts_by_event ON attempts(event_id, started_at);
-- An endpoint's deliveries over the last 24 h (its dashboard chart), read from this index alone: it carries the result
-- and the duration, never the response (schema version 9).
CREATE INDEX attempts_by_endpoint ON attempts(endpoint_id, started_at, status_code, duration_ms);

-- Which entries each event carries, so the trace finds the events of an entry; goes with its event (schema version 8).
CREATE TABLE event_entries (
  subscription_id  TEXT NOT NULL,
  key              TEXT NOT NULL,
  event_id         TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
  PRIMARY KEY (subscription_id, key, event_id)
) WITHOUT ROWID;
CREATE INDEX event_entries_by_event ON event_entries(event_id);

-- What each application keeps, for its storage budget ([quotas] storage_bytes_per_application; schema version 22): the
-- bytes of the feeds only its subscriptions use and of its events, kept by the writes that add and remove them. The
-- maintenance pass recounts each sum in chunks, walking in id order: *_walk_at is how far the walk has come, and
-- *_walk_change what changed behind it since, which the walk adds to what it counted.
CREATE TABLE application_storage (
  application_id    TEXT PRIMARY KEY REFERENCES applications(id) ON DELETE CASCADE,
  feed_bytes        INTEGER NOT NULL DEFAULT 0,
  event_bytes       INTEGER NOT NULL DEFAULT 0,
  feed_walk_at      TEXT,
  feed_walk_change  INTEGER NOT NULL DEFAULT 0,
  event_walk_at     TEXT,
  event_walk_change INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE idempotency_keys (
  application_id  TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  key             TEXT NOT NULL,
  method          TEXT NOT NULL,
  path            TEXT NOT NULL,
  request_hash    TEXT NOT NULL,
  status          INTEGER NOT NULL,
  response        TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  PRIMARY KEY (application_id, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys(created_at);   -- expired in batches (schema version 4)

CREATE TABLE sessions (
  id_hash         TEXT PRIMARY KEY,        -- SHA-256 of the cookie value
  application_id  TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  api_key_id      TEXT NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
  csrf_token      TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  last_seen_at    TEXT NOT NULL
);
CREATE INDEX sessions_by_key ON sessions(api_key_id, last_seen_at);   -- a key's least recently used sessions (schema version 4)

-- Recent uses of the quotas that count over a window ([quotas] new_feed_urls_per_hour, test_events_per_minute,
-- backfill_entries_per_hour). A use is recorded only under its limit, after the application's older uses of that quota
-- are deleted, and each counts at least 1, so an application holds at most its limit of rows per quota (schema
-- version 2).
CREATE TABLE quota_usage (
  application_id  TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  quota           TEXT NOT NULL,          -- the [quotas] key
  subject         TEXT,                   -- the feed id of a new feed URL (a repeat within the hour is free); else NULL
  used_at         TEXT NOT NULL,
  amount          INTEGER NOT NULL DEFAULT 1   -- 1, or the entries a backfill asked for (schema version 21)
);
CREATE INDEX quota_usage_window ON quota_usage(application_id, quota, used_at);

-- Each feed's polls per UTC hour (hour = 'YYYY-MM-DDTHH'), for the dashboard's 24 h chart: one row per hour and feed,
-- added to by the minute from the counts polls note in memory (actions/poll-counts.ts); the maintenance pass deletes
-- hours older than a day, so it holds at most about feeds × 25 rows (schema version 9; keyed by hour first in 16).
CREATE TABLE feed_poll_hours (
  hour         TEXT NOT NULL,
  feed_id      TEXT NOT NULL,                -- no foreign key: a deleted feed's rows are pruned with their hours
  ok           INTEGER NOT NULL DEFAULT 0,   -- parsed or unchanged
  failed       INTEGER NOT NULL DEFAULT 0,   -- error or gone
  throttled    INTEGER NOT NULL DEFAULT 0,   -- 429/503 with Retry-After
  new_entries  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (hour, feed_id)
) WITHOUT ROWID;

-- A feed's WebSub subscription (W3C WebSub; schema version 11): at most one per feed, made when a poll finds a hub and
-- server.public_url is set. No foreign key on purpose: the row outlives its feed until the hub is told to unsubscribe.
-- Every subscribe request names a new callback (WebSub §5.1.1: changed when subscriptions are renewed); the callback a
-- renewal replaces takes pushes until the renewal is verified, and every other one answers 410 Gone (schema version 19).
CREATE TABLE websub_subscriptions (
  feed_id           TEXT PRIMARY KEY,
  hub_url           TEXT NOT NULL,
  topic_url         TEXT NOT NULL,            -- hub.topic: the feed's self URL (WebSub §4)
  secret            TEXT,                     -- hub.secret, checks X-Hub-Signature; NULL for a plain-http hub (never sent one)
  callback_token    TEXT NOT NULL,            -- the unguessable last segment of the callback URL of the latest request
  previous_token    TEXT,                     -- the verified callback a pending renewal replaces
  status            TEXT NOT NULL
                    CHECK (status IN ('subscribing', 'active', 'expired', 'denied', 'failed', 'unsubscribing')),
  pending           TEXT CHECK (pending IN ('subscribe', 'unsubscribe')),  -- the request awaiting verification of intent
  lease_expires_at  TEXT,
  next_action_at    TEXT NOT NULL,            -- when the WebSub loop looks again: send, retry, renew, lapse or give up
  attempts          INTEGER NOT NULL DEFAULT 0,  -- requests since the last verified one
  last_push_at      TEXT,
  last_error        TEXT,
  created_at        TEXT NOT NULL,
  updated_at        TEXT NOT NULL
);
CREATE INDEX websub_subscriptions_due ON websub_subscriptions(next_action_at);

-- The serve processes (nodes) on this database (schema version 23): each registers itself at start, renews seen_at and
-- what it holds every heartbeat, and removes itself at stop; one unseen for three heartbeats is no longer live, and
-- its row is removed a day later. On SQLite there is one; on PostgreSQL any number share the work.
CREATE TABLE nodes (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,                -- cluster.node_name: the host name and process id by default
  version     TEXT NOT NULL,                -- feedsub's version
  started_at  TEXT NOT NULL,
  seen_at     TEXT NOT NULL,
  polls       INTEGER NOT NULL DEFAULT 0,   -- feeds it was fetching at its last heartbeat
  deliveries  INTEGER NOT NULL DEFAULT 0    -- events it was attempting
);

-- Keys every node signs with, made by the first node that needs one (schema version 23): the dashboard's sign-in
-- tokens, so that a form one node served may be posted to another behind a load balancer.
CREATE TABLE service_keys (
  name  TEXT PRIMARY KEY,
  key   TEXT NOT NULL   -- random, base64url
);

-- Work that one node at a time does (maintenance): held by node_id until `until`, renewed while it runs, taken over
-- by another node once it lapses (schema version 23).
CREATE TABLE node_roles (
  role     TEXT PRIMARY KEY,
  node_id  TEXT NOT NULL,
  until    TEXT NOT NULL
);
