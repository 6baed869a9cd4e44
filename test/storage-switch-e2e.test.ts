// Moving a live installation to PostgreSQL loses nothing: an installation on SQLite subscribes, polls and delivers, is
// copied with `storage copy` (runStorageCopy), and goes on on the copy. The next poll on PostgreSQL sends exactly the
// entries published since, once each; the event still waiting at the copy is delivered once; no entry delivered before
// the copy is sent again; subscriptions, metadata and sequences are as they were.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { manualClock } from '../src/clock.ts';
import { defaultConfig, withConfig, type Config } from '../src/config.ts';
import { quietCtx, type Ctx } from '../src/context.ts';
import type { Engine } from '../src/db/engine.ts';
import { openDatabase } from '../src/db/open.ts';
import { SqliteEngine } from '../src/db/sqlite-engine.ts';
import { createHttpApp } from '../src/http/server.ts';
import { silentLogger } from '../src/log.ts';
import { runStorageCopy } from '../src/storage-copy.ts';
import { deliverTick } from '../src/worker/deliver/deliverer.ts';
import { createWorkers } from '../src/worker/index.ts';
import { pollTick } from '../src/worker/poll/round.ts';
import { sharedPostgres, testEngine } from './support/postgres.ts';
import { rss, startOrigin, startReceiver, type Origin, type Receiver } from './support/servers.ts';

/** Metadata whose key order and number spelling a JSON round trip would change. */
const METADATA = '{"zeta":1,"alpha":{"b":2,"a":1},"price":1.50,"big":12345678901234567890}';

type Payload = {
  type: string;
  data: { sequence: number; subscription: { id: string }; entries: { guid: string }[] };
};

/** The API of `ctx` (the HTTP app in process), with `key`. */
function apiOn(ctx: Ctx, key: string) {
  const app = createHttpApp(ctx, silentLogger);
  return async (method: string, path: string, body?: string) => {
    const res = await app.request(path, {
      method,
      headers: { authorization: key, 'content-type': 'application/json' },
      ...(body !== undefined ? { body } : {}),
    });
    return { status: res.status, text: await res.text() };
  };
}

/** One poll round of the due feeds, then deliveries until none is due; returns the deliveries made. */
async function pollAndDeliver(ctx: Ctx): Promise<number> {
  const workers = createWorkers(ctx, silentLogger);
  try {
    await pollTick(ctx, workers.pollerDeps);
    let delivered = 0;
    for (;;) {
      const { summary, started } = await deliverTick(ctx, workers.delivererDeps);
      if (started === 0) return delivered;
      delivered += summary.delivered;
    }
  } finally {
    await workers.close();
  }
}

describe('switching a live installation from SQLite to PostgreSQL', () => {
  let origin: Origin;
  let receiver: Receiver;
  let dir: string;
  let config: Config;
  const clock = manualClock('2026-01-01T00:00:00.000Z');
  let sqlite: Engine | undefined;
  let postgres: Engine | undefined;

  before(async () => {
    origin = await startOrigin();
    receiver = await startReceiver();
    dir = mkdtempSync(join(tmpdir(), 'feedsub-switch-'));
    config = withConfig(defaultConfig(), {
      network: { allow_private: true },
      storage: { data_dir: dir },
    });
  });
  after(async () => {
    await sqlite?.close();
    await postgres?.close();
    await origin?.close();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const items = (...ids: number[]) => ({ body: rss(ids.map((i) => ({ guid: `g${i}` }))) });
  const entriesEvents = () =>
    receiver.deliveries
      .map((d) => ({ id: d.id, payload: JSON.parse(d.body) as Payload }))
      .filter((d) => d.payload.type === 'subscription.entries');

  let key: string;
  let subscription: { id: string; feed: string };
  /** What the API answered on SQLite just before the copy. */
  let answered: Record<'subscriptions' | 'subscription' | 'feed' | 'events', string>;
  let onPostgres: Ctx;
  let sentBefore: number;

  it('builds an installation on SQLite: a baseline, an entry delivered, one event left waiting', async () => {
    sqlite = new SqliteEngine(openDatabase(join(dir, 'feedsub.db')));
    const onSqlite = quietCtx(sqlite, clock, config);
    key = (await createKey(onSqlite, 'acme', null)).key;
    const api = apiOn(onSqlite, key);
    const endpoint = await api(
      'POST',
      '/v1/endpoints',
      JSON.stringify({ title: 'hooks', url: `${receiver.url}/hook` }),
    );
    assert.equal(endpoint.status, 201, endpoint.text);
    origin.set('/feed.xml', items(2, 1));
    const sub = await api(
      'POST',
      '/v1/subscriptions',
      `{"endpoint":"${JSON.parse(endpoint.text).id}","url":"${origin.url}/feed.xml","metadata":${METADATA}}`,
    );
    assert.equal(sub.status, 201, sub.text);
    subscription = JSON.parse(sub.text);
    assert.equal(await pollAndDeliver(onSqlite), 0, 'the baseline sends nothing');
    origin.set('/feed.xml', items(3, 2, 1));
    clock.advance(24 * 3600_000);
    assert.equal(await pollAndDeliver(onSqlite), 1);
    assert.deepEqual(
      entriesEvents().map((d) => d.payload.data.entries.map((e) => e.guid)),
      [['g3']],
    );
    origin.set('/feed.xml', items(4, 3, 2, 1));
    clock.advance(24 * 3600_000);
    const workers = createWorkers(onSqlite, silentLogger);
    await pollTick(onSqlite, workers.pollerDeps); // g4's event is queued, and serve stops before it is sent
    await workers.close();
    answered = {
      subscriptions: (await api('GET', '/v1/subscriptions')).text,
      subscription: (await api('GET', `/v1/subscriptions/${subscription.id}`)).text,
      feed: (await api('GET', `/v1/feeds/${subscription.feed}`)).text,
      events: (await api('GET', '/v1/events')).text,
    };
    assert.match(
      answered.subscription,
      /"metadata":\{"zeta":1,"alpha":\{"b":2,"a":1\},"price":1\.50/,
    );
    assert.match(answered.events, /"status":"pending"/);
    await sqlite.close();
    sqlite = undefined;
    sentBefore = receiver.deliveries.length;
  });

  it('copies it, and the copy answers the API as SQLite did, byte for byte', async () => {
    const url = await (await sharedPostgres()).newDatabase();
    const lines: string[] = [];
    await runStorageCopy(config, url, { stdout: (l) => lines.push(l), stderr: () => {} });
    assert.match(lines[0]!, /^Copied .* every table's count checked\.$/);
    postgres = testEngine(url);
    onPostgres = quietCtx(postgres, clock, config);
    const api = apiOn(onPostgres, key);
    assert.equal((await api('GET', '/v1/subscriptions')).text, answered.subscriptions);
    assert.equal(
      (await api('GET', `/v1/subscriptions/${subscription.id}`)).text,
      answered.subscription,
    );
    assert.equal((await api('GET', `/v1/feeds/${subscription.feed}`)).text, answered.feed);
    assert.equal((await api('GET', '/v1/events')).text, answered.events);
  });

  it('on PostgreSQL, delivers the waiting event and the entries new since, each once, and no old entry', async () => {
    assert.ok(onPostgres, 'the copy was made');
    origin.set('/feed.xml', items(6, 5, 4, 3, 2, 1));
    clock.advance(24 * 3600_000);
    assert.equal(await pollAndDeliver(onPostgres), 2, "g4's event and the new one");
    assert.equal(receiver.deliveries.length, sentBefore + 2);
    assert.deepEqual(
      entriesEvents().map((d) => d.payload.data.entries.map((e) => e.guid)),
      [['g3'], ['g4'], ['g5', 'g6']],
    );
    assert.deepEqual(
      entriesEvents().map((d) => d.payload.data.sequence),
      [1, 2, 3],
      'the sequence goes on',
    );
    assert.equal(new Set(receiver.deliveries.map((d) => d.id)).size, receiver.deliveries.length);
    const api = apiOn(onPostgres, key);
    assert.equal(
      (await api('GET', `/v1/subscriptions/${subscription.id}`)).text,
      answered.subscription,
    );
    // A poll with nothing new sends nothing more.
    clock.advance(24 * 3600_000);
    assert.equal(await pollAndDeliver(onPostgres), 0);
    assert.equal(receiver.deliveries.length, sentBefore + 2);
  });
});
