// Backfills end to end through the real `feedsub serve`: quotas.backfill_entries_per_hour answers 429 across create and
// delete cycles; a backfill of 100 entries of ~60 KiB reaches the receiver whole, in order; backfills waiting for a new
// feed's baseline are delivered when it comes, and finished after a SIGKILL in the middle of queueing them, with no
// entry twice and none missing; deleting a subscription in the middle of its backfill stops it.
import Database from 'better-sqlite3';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Agent, fetch } from 'undici';
import { createKey } from '../src/actions/keys.ts';
import { systemClock } from '../src/clock.ts';
import { defaultConfig } from '../src/config.ts';
import { quietCtx } from '../src/context.ts';
import { openDatabase } from '../src/db/open.ts';
import { SqliteEngine } from '../src/db/sqlite-engine.ts';
import { startDaemon, type Daemon } from './support/daemon.ts';
import { until } from './support/deadline.ts';
import { startOrigin, startReceiver, type Origin, type Receiver } from './support/servers.ts';

const ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  FEEDSUB_POLL_INTERVAL_SECONDS: '3600',
  // A history of 100 entries of ~60 KiB (6 MiB): past the default 2 MiB, as an operator may allow.
  FEEDSUB_RETENTION_ENTRY_HISTORY_BYTES_PER_FEED: '8388608',
  FEEDSUB_QUOTAS_BACKFILL_ENTRIES_PER_HOUR: '400',
  FEEDSUB_QUOTAS_NEW_FEED_URLS_PER_HOUR: '0',
  FEEDSUB_QUOTAS_API_REQUESTS_PER_SECOND: '0',
};
// Every wait below is bounded by this, far from the loops' fallback timers (the backfill loop's is a minute).
const WAIT_MS = 45_000;
const APPS = ['quota', 'large', 'baseline', 'kill', 'delete', 'besideA', 'besideB'] as const;

/** What the API answered: an id and a feed, a list, or a problem. */
type Answer = {
  id: string;
  feed: string;
  data: unknown[];
  quota: string;
  limit: number;
  retry_after_seconds: number;
  detail: string;
};
type Payload = {
  type: string;
  data: {
    sequence: number;
    backfill?: boolean;
    subscription: { id: string };
    entries: { guid: string }[];
  };
};

/** An RSS document of `count` items, `prefix`1 the oldest (last), each with a description of `kib` KiB (an entry's
 *  JSON carries it twice, as summary and summary_html). */
function feed(prefix: string, count: number, kib: number): string {
  const text = 'Lorem ipsum dolor sit amet. '.repeat(Math.ceil((kib * 1024) / 28));
  const items = Array.from(
    { length: count },
    (_, i) =>
      `<item><guid>${prefix}${count - i}</guid><title>${prefix}${count - i}</title><link>http://example.com/${prefix}/${count - i}</link><description>${text}</description></item>`,
  ).join('');
  return `<?xml version="1.0"?><rss version="2.0"><channel><title>B</title><link>http://example.com/</link>${items}</channel></rss>`;
}
/** `prefix`1 … `prefix``count`: a backfill of the whole feed, in the order events carry it (oldest first). */
const oldestFirst = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}${i + 1}`);

// A connection per request: these tests wait seconds between requests, and a kept-alive connection reused just as the
// daemon closes it for idleness (5 s) fails the request with "other side closed" on a loaded machine.
const freshConnections = new Agent({ pipelining: 0 });

describe('end to end: backfills through feedsub serve', () => {
  let dir: string;
  let daemon: Daemon;
  let origin: Origin;
  let receiver: Receiver;
  const keys = {} as Record<(typeof APPS)[number], string>;
  let n = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'feedsub-backfill-'));
    const store = new SqliteEngine(openDatabase(join(dir, 'feedsub.db')));
    const ctx = quietCtx(store, systemClock, defaultConfig());
    for (const app of APPS) keys[app] = (await createKey(ctx, app, null)).key;
    await store.close();
    origin = await startOrigin();
    receiver = await startReceiver();
    daemon = await startDaemon({ dataDir: dir, env: ENV });
  });
  after(async () => {
    await daemon?.stop();
    await origin?.close();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(daemon.url + path, {
      dispatcher: freshConnections,
      method,
      headers: { authorization: key, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: (text ? JSON.parse(text) : null) as Answer,
    };
  };
  const ok = async (key: string, method: string, path: string, body?: unknown) => {
    const res = await call(key, method, path, body);
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const endpoint = (key: string) =>
    ok(key, 'POST', '/v1/endpoints', { title: 'b', url: `${receiver.url}/${++n}` });
  const subscribe = async (key: string, url: string, backfill?: number) =>
    ok(key, 'POST', '/v1/subscriptions', { endpoint: (await endpoint(key)).id, url, backfill });
  /** What the subscription received, once per webhook-id (a delivery cut short by a kill is sent again). */
  const received = (sub: { id: string }): Payload[] => {
    const seen = new Set<string>();
    return receiver.deliveries.flatMap((d) => {
      const body = JSON.parse(d.body) as Payload;
      if (body.data.subscription?.id !== sub.id || seen.has(d.id)) return [];
      seen.add(d.id);
      return [body];
    });
  };
  const guidsOf = (payloads: Payload[]) =>
    payloads.flatMap((p) => p.data.entries.map((e) => e.guid));
  /** Waits until the subscription received `count` entries. */
  const receivedEntries = (sub: { id: string }, count: number, what: string) =>
    until(() => guidsOf(received(sub)).length >= count, WAIT_MS, what, 50);
  /** Asserts the subscription received exactly `guids` as a backfill: each once, in order, in events numbered from 1
   *  without a gap, each marked backfill. */
  const assertBackfill = (sub: { id: string }, guids: string[]) => {
    const events = received(sub).sort((a, b) => a.data.sequence - b.data.sequence);
    assert.deepEqual(
      events.map((e) => e.data.sequence),
      events.map((_, i) => i + 1),
      'sequences 1, 2, 3… without a gap',
    );
    assert.ok(events.every((e) => e.data.backfill === true && e.type === 'subscription.entries'));
    assert.deepEqual(guidsOf(events), guids, 'every entry once, oldest first');
  };
  /** The daemon's database, read beside it (WAL: a reader never blocks its writes). */
  const peek = <T>(read: (db: Database.Database) => T): T => {
    const db = new Database(join(dir, 'feedsub.db'), { readonly: true, fileMustExist: true });
    try {
      return read(db);
    } finally {
      db.close();
    }
  };
  const backfillsLeft = (db: Database.Database) =>
    db
      .prepare('SELECT count(*) FROM subscriptions WHERE backfill > 0 OR backfill_at IS NOT NULL')
      .pluck()
      .get() as number;
  const eventsOf = (db: Database.Database, subs: { id: string }[]) =>
    db
      .prepare(
        `SELECT count(*) FROM events WHERE subscription_id IN (${subs.map(() => '?').join(',')})`,
      )
      .pluck()
      .get(...subs.map((s) => s.id)) as number;

  it('answers 429 past quotas.backfill_entries_per_hour, counting across create and delete cycles', async () => {
    const key = keys.quota;
    origin.set('/quota.xml', { body: feed('q', 3, 1) });
    const target = (await endpoint(key)).id;
    const create = (backfill: number) =>
      call(key, 'POST', '/v1/subscriptions', {
        endpoint: target,
        url: `${origin.url}/quota.xml`,
        backfill,
      });
    for (let i = 0; i < 4; i++) {
      const made = await create(100);
      assert.equal(made.status, 201, JSON.stringify(made.body));
      assert.equal((await call(key, 'DELETE', `/v1/subscriptions/${made.body.id}`)).status, 204);
    }
    const refused = await create(100);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.quota, 'backfill_entries_per_hour');
    assert.equal(refused.body.limit, 400);
    assert.ok(refused.body.retry_after_seconds > 3000, String(refused.body.retry_after_seconds));
    assert.equal(refused.retryAfter, String(refused.body.retry_after_seconds));
    assert.match(refused.body.detail, /0 are left this hour/);
    assert.equal((await create(0)).status, 201, 'a subscription without a backfill costs nothing');
  });

  it('delivers a backfill of 100 entries of ~60 KiB whole: every entry once, in sequence order, marked', async () => {
    const key = keys.large;
    origin.set('/large.xml', { body: feed('l', 100, 30) });
    const watcher = await subscribe(key, `${origin.url}/large.xml`);
    await until(
      async () =>
        (await ok(key, 'GET', `/v1/subscriptions/${watcher.id}/entries?limit=200`)).data.length ===
        100,
      WAIT_MS,
      'the history stored',
    );
    const late = await subscribe(key, `${origin.url}/large.xml`, 100);
    await receivedEntries(late, 100, 'the backfill delivered');
    assertBackfill(late, oldestFirst('l', 100));
    assert.ok(
      received(late).length >= 20,
      `split into events of ≤ 256 KiB: ${received(late).length}`,
    );
    const arrival = received(late).map((p) => p.data.sequence);
    assert.deepEqual(
      arrival,
      [...arrival].sort((a, b) => a - b),
      'delivered in sequence order',
    );
  });

  it('delivers a backfill waiting for a new feed when its baseline comes, and nothing else of the baseline', async () => {
    const key = keys.baseline;
    origin.set('/baseline.xml', { body: feed('b', 8, 1) });
    const held = origin.hold('/baseline.xml');
    const waiting = await subscribe(key, `${origin.url}/baseline.xml`, 5);
    const plain = await subscribe(key, `${origin.url}/baseline.xml`);
    await held.arrived;
    assert.equal(
      peek((db) => eventsOf(db, [waiting, plain])),
      0,
      'nothing before the baseline',
    );
    held.release();
    await receivedEntries(waiting, 5, 'the backfill delivered after the baseline');
    assertBackfill(waiting, ['b4', 'b5', 'b6', 'b7', 'b8']);
    assert.deepEqual(received(plain), [], 'the baseline sends the others nothing');
  });

  it('finishes backfills a SIGKILL cut short while they were queued, after the restart: no entry twice, none missing', async () => {
    const key = keys.kill;
    origin.set('/kill.xml', { body: feed('k', 100, 30) });
    const held = origin.hold('/kill.xml');
    const subs: Answer[] = [];
    for (let i = 0; i < 4; i++) subs.push(await subscribe(key, `${origin.url}/kill.xml`, 100));
    await held.arrived;
    held.release(); // the baseline makes the four backfills ready at once: about 100 events to queue
    await until(
      () => peek((db) => eventsOf(db, subs) > 0 && backfillsLeft(db) > 0),
      WAIT_MS,
      'the backfills begun',
      2,
    );
    await daemon.kill();
    const cut = peek((db) => ({ events: eventsOf(db, subs), left: backfillsLeft(db) }));
    assert.ok(cut.events > 0 && cut.left > 0, `killed in the middle: ${JSON.stringify(cut)}`);
    daemon = await startDaemon({ dataDir: dir, env: ENV });
    for (const sub of subs)
      await receivedEntries(sub, 100, 'the backfills finished after the restart');
    for (const sub of subs) assertBackfill(sub, oldestFirst('k', 100));
    assert.equal(peek(backfillsLeft), 0);
    const queued = peek(
      (db) =>
        db
          .prepare(
            `SELECT count(*) AS events, count(DISTINCT subscription_id || '/' || sequence) AS sequences
             FROM events WHERE subscription_id IN (${subs.map(() => '?').join(',')})`,
          )
          .get(...subs.map((s) => s.id)) as { events: number; sequences: number },
    );
    assert.equal(queued.events, queued.sequences, 'no event queued twice');
    assert.equal(
      queued.events,
      subs.reduce((sum, sub) => sum + received(sub).length, 0),
    );
  });

  it('stops the backfill of a subscription deleted while it is queued', async () => {
    const key = keys.delete;
    origin.set('/delete.xml', { body: feed('d', 100, 30) });
    const held = origin.hold('/delete.xml');
    const doomed = await subscribe(key, `${origin.url}/delete.xml`, 100);
    const kept = await subscribe(key, `${origin.url}/delete.xml`, 100);
    // Two other applications' backfills of the same feed: the loop takes one chunk of each application's in turn, so
    // the window in which the doomed backfill has begun and not finished is three times as long for this test to see
    // (with two suites on the machine, all the chunks of a lone backfill once went by between two looks).
    const beside = [
      await subscribe(keys.besideA, `${origin.url}/delete.xml`, 100),
      await subscribe(keys.besideB, `${origin.url}/delete.xml`, 100),
    ];
    await held.arrived;
    held.release();
    const rowsOf = (db: Database.Database, sub: Answer) =>
      db
        .prepare('SELECT count(*) FROM backfill_entries WHERE subscription_id = ?')
        .pluck()
        .get(sub.id) as number;
    await until(
      () => peek((db) => eventsOf(db, [doomed]) > 0 && rowsOf(db, doomed) > 0),
      WAIT_MS,
      'its backfill begun, not finished',
      2,
    );
    await ok(key, 'DELETE', `/v1/subscriptions/${doomed.id}`);
    await receivedEntries(kept, 100, 'the other backfill finished');
    assertBackfill(kept, oldestFirst('d', 100));
    for (const sub of beside) {
      await receivedEntries(sub, 100, "another application's backfill finished");
      assertBackfill(sub, oldestFirst('d', 100));
    }
    const got = guidsOf(received(doomed));
    assert.ok(got.length < 100, `cut short: ${got.length} entries received`);
    assert.deepEqual(got, oldestFirst('d', got.length), 'what it had was in order');
    assert.equal(
      peek((db) => eventsOf(db, [doomed])),
      0,
      'its events went with it',
    );
    assert.equal(
      peek((db) => db.prepare('SELECT count(*) FROM backfill_entries').pluck().get()),
      0,
      'nothing left to queue',
    );
    const failed = daemon
      .output()
      .split('\n')
      .filter((line) => line.includes('tick failed'));
    assert.deepEqual(failed, [], 'no loop tripped over the deletion');
  });
});
