// Per-application quotas through the API: endpoints and subscriptions held, new feed URLs per hour, test events per
// minute, backfill entries per hour — each a 429 problem naming the quota, with Retry-After, that leaves nothing behind.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startReceiver, type Receiver } from '../../support/servers.ts';
import { makeWorld, type World } from '../../support/world.ts';

type Answer = Awaited<ReturnType<World['call']>>;

/** Asserts a 429 problem+json naming `quota` and `limit`, whose Retry-After equals its retry_after_seconds. */
function assertQuota(res: Answer, quota: string, limit: number, retryAfter: number): void {
  assert.equal(res.status, 429, res.text);
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  assert.equal(res.body.title, 'Too many requests');
  assert.equal(res.body.quota, quota);
  assert.equal(res.body.limit, limit);
  assert.equal(res.body.retry_after_seconds, retryAfter);
  assert.equal(res.headers.get('retry-after'), String(retryAfter));
  assert.match(res.body.detail, new RegExp(`quotas\\.${quota}`));
}

const count = async (w: World, table: string) =>
  (await w.ctx.db.column(`SELECT count(*) FROM ${table}`))[0] as number;

describe('quotas.endpoints_per_application', () => {
  let w: World;
  before(() => {
    w = makeWorld({ quotas: { endpoints_per_application: 3 } });
  });
  after(() => w.close());

  it('answers 429 past the limit, creates nothing, and frees a place when one is deleted', async () => {
    const { key } = await w.key();
    const make = (i: number) =>
      w.call('POST', '/v1/endpoints', {
        key,
        body: { title: `e${i}`, url: `http://127.0.0.1:9/${i}` },
      });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await make(i)).body.id);
    const refused = await make(3);
    assertQuota(refused, 'endpoints_per_application', 3, 3600);
    assert.match(refused.body.detail, /Delete endpoints/);
    assert.equal(await count(w, 'endpoints'), 3);
    assert.equal(
      (
        await w.call('POST', '/v1/endpoints', {
          key: (await w.key()).key,
          body: { title: 'other', url: 'http://127.0.0.1:9/o' },
        })
      ).status,
      201,
      'another application has its own',
    );
    assert.equal((await w.call('DELETE', `/v1/endpoints/${ids[0]}`, { key })).status, 204);
    assert.equal((await make(4)).status, 201);
  });
});

describe('quotas.subscriptions_per_application and quotas.new_feed_urls_per_hour', () => {
  let w: World;
  before(() => {
    w = makeWorld({
      quotas: { subscriptions_per_application: 9, new_feed_urls_per_hour: 3 },
    });
  });
  after(() => w.close());

  const endpointOf = async (key: string, n: number) =>
    (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: `e${n}`, url: `http://127.0.0.1:9/${n}` },
      })
    ).body.id as string;
  const subscribe = (key: string, endpoint: string, url: string) =>
    w.call('POST', '/v1/subscriptions', { key, body: { endpoint, url } });

  it('counts feed URLs the application did not have, over the last hour, and leaves no feed behind a refusal', async () => {
    const { key } = await w.key();
    const [a, b, c] = [
      await endpointOf(key, 1),
      await endpointOf(key, 2),
      await endpointOf(key, 3),
    ];
    const feed = (n: number) => `http://127.0.0.1:9/feed${n}`;
    for (const n of [1, 2, 3]) assert.equal((await subscribe(key, a, feed(n))).status, 201);
    const feeds = await count(w, 'feeds');
    w.clock.advance(600_000);
    assertQuota(await subscribe(key, a, feed(4)), 'new_feed_urls_per_hour', 3, 3000);
    assert.equal(await count(w, 'feeds'), feeds, 'the refused URL made no feed record');
    assert.equal(
      (await subscribe(key, b, feed(1))).status,
      201,
      'a feed URL the application already has is not new',
    );
    w.clock.advance(3000_000);
    assert.equal((await subscribe(key, a, feed(4))).status, 201, 'free again after Retry-After');
    for (const n of [5, 6]) assert.equal((await subscribe(key, a, feed(n))).status, 201);
    assert.equal(
      (await subscribe(key, c, feed(2))).status,
      201,
      'a feed URL the application has had for more than the hour is not new either',
    );
    assertQuota(await subscribe(key, c, feed(7)), 'new_feed_urls_per_hour', 3, 3600);
  });

  it('does not count a URL again when it is unsubscribed and subscribed again within the hour', async () => {
    const { key } = await w.key();
    const a = await endpointOf(key, 1);
    const first = await subscribe(key, a, 'http://127.0.0.1:9/again');
    assert.equal(first.status, 201);
    for (let i = 0; i < 3; i++) {
      assert.equal(
        (await w.call('DELETE', `/v1/subscriptions/${first.body.id}`, { key })).status,
        204,
      );
      const again = await subscribe(key, a, 'http://127.0.0.1:9/again');
      assert.equal(again.status, 201);
      first.body.id = again.body.id;
    }
    for (const n of [1, 2])
      assert.equal((await subscribe(key, a, `http://127.0.0.1:9/x${n}`)).status, 201);
    assertQuota(
      await subscribe(key, a, 'http://127.0.0.1:9/x3'),
      'new_feed_urls_per_hour',
      3,
      3600,
    );
  });

  it('answers 429 past the subscriptions an application may have, whatever the URLs', async () => {
    const { key } = await w.key();
    for (const n of [1, 2, 3, 4]) {
      const e = await endpointOf(key, n);
      for (const url of ['http://127.0.0.1:9/shared1', 'http://127.0.0.1:9/shared2'])
        assert.equal((await subscribe(key, e, url)).status, 201);
    }
    const fifth = await endpointOf(key, 5);
    assert.equal((await subscribe(key, fifth, 'http://127.0.0.1:9/shared1')).status, 201);
    const refused = await subscribe(key, fifth, 'http://127.0.0.1:9/shared2');
    assertQuota(refused, 'subscriptions_per_application', 9, 3600);
    assert.match(refused.body.detail, /Delete subscriptions/);
  });

  it('still answers 409 for a duplicate, not 429', async () => {
    const { key } = await w.key();
    const a = await endpointOf(key, 1);
    for (const n of [1, 2, 3]) await subscribe(key, a, `http://127.0.0.1:9/d${n}`);
    assert.equal((await subscribe(key, a, 'http://127.0.0.1:9/d1')).status, 409);
  });
});

describe('quotas.backfill_entries_per_hour', () => {
  let w: World;
  before(() => {
    w = makeWorld({ quotas: { backfill_entries_per_hour: 250 } });
  });
  after(() => w.close());

  const subscribe = (key: string, endpoint: string, backfill?: number) =>
    w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint, url: 'http://127.0.0.1:9/backfilled', backfill },
    });

  it('counts the entries asked for across creates and deletes, and says how many are left this hour', async () => {
    const { key, applicationId } = await w.key();
    const endpoint = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'b', url: 'http://127.0.0.1:9/' },
      })
    ).body.id as string;
    for (let i = 0; i < 2; i++) {
      const made = await subscribe(key, endpoint, 100);
      assert.equal(made.status, 201, made.text);
      assert.equal(
        (await w.call('DELETE', `/v1/subscriptions/${made.body.id}`, { key })).status,
        204,
      );
      w.clock.advance(600_000);
    }
    const refused = await subscribe(key, endpoint, 100);
    // 200 asked, 50 left: 100 more fit once the first create's 100 leave the hour, 40 minutes from now.
    assertQuota(refused, 'backfill_entries_per_hour', 250, 2400);
    assert.match(refused.body.detail, /50 are left this hour/);
    assert.equal(await count(w, 'subscriptions'), 0, 'the refusal created nothing');
    const fits = await subscribe(key, endpoint, 50);
    assert.equal(fits.status, 201, 'what is left fits');
    await w.call('DELETE', `/v1/subscriptions/${fits.body.id}`, { key });
    assert.equal((await subscribe(key, endpoint, 0)).status, 201, 'no backfill costs nothing');
    const rows = (
      await w.ctx.db.column(
        "SELECT count(*) FROM quota_usage WHERE application_id = ? AND quota = 'backfill_entries_per_hour'",
        [applicationId],
      )
    )[0] as number;
    assert.equal(rows, 3, 'one row per backfill, each with its amount');
    const other = (await w.key()).key;
    const elsewhere = (
      await w.call('POST', '/v1/endpoints', {
        key: other,
        body: { title: 'o', url: 'http://127.0.0.1:9/' },
      })
    ).body.id as string;
    assert.equal(
      (await subscribe(other, elsewhere, 100)).status,
      201,
      'another application has its own',
    );
  });

  it('refuses a backfill larger than the whole hour allows for an hour, saying so', async () => {
    const small = makeWorld({ quotas: { backfill_entries_per_hour: 50 } });
    try {
      const { key } = await small.key();
      const endpoint = (
        await small.call('POST', '/v1/endpoints', {
          key,
          body: { title: 'b', url: 'http://127.0.0.1:9/' },
        })
      ).body.id as string;
      const refused = await small.call('POST', '/v1/subscriptions', {
        key,
        body: { endpoint, url: 'http://127.0.0.1:9/big', backfill: 60 },
      });
      assertQuota(refused, 'backfill_entries_per_hour', 50, 3600);
      assert.match(refused.body.detail, /ask for at most 50/);
    } finally {
      await small.close();
    }
  });
});

describe('quotas.test_events_per_minute', () => {
  let w: World;
  let receiver: Receiver;
  before(async () => {
    w = makeWorld({ quotas: { test_events_per_minute: 3 } });
    receiver = await startReceiver();
  });
  after(async () => {
    await w.close();
    await receiver.close();
  });

  it('sends at most the limit even when the requests arrive together, and counts before sending', async () => {
    const { key } = await w.key();
    const endpoint = (
      await w.call('POST', '/v1/endpoints', { key, body: { title: 't', url: receiver.url } })
    ).body.id as string;
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => w.call('POST', `/v1/endpoints/${endpoint}/test`, { key })),
    );
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 429, 429, 429, 429, 429]);
    assertQuota(
      answers.find((a) => a.status === 429)!,
      'test_events_per_minute',
      3,
      60,
    );
    assert.equal(receiver.deliveries.length, 3, 'the receiver got exactly the allowed tests');
    w.clock.advance(45_000);
    assertQuota(
      await w.call('POST', `/v1/endpoints/${endpoint}/test`, { key }),
      'test_events_per_minute',
      3,
      15,
    );
    w.clock.advance(15_000);
    assert.equal((await w.call('POST', `/v1/endpoints/${endpoint}/test`, { key })).status, 200);
    assert.equal(receiver.deliveries.length, 4);
  });

  it('keeps at most the limit of rows per application, however many minutes pass', async () => {
    const { key, applicationId } = await w.key();
    const endpoint = (
      await w.call('POST', '/v1/endpoints', { key, body: { title: 't', url: receiver.url } })
    ).body.id as string;
    for (let minute = 0; minute < 5; minute++) {
      for (let i = 0; i < 4; i++) await w.call('POST', `/v1/endpoints/${endpoint}/test`, { key });
      w.clock.advance(61_000);
    }
    const rows = (
      await w.ctx.db.column('SELECT count(*) FROM quota_usage WHERE application_id = ?', [
        applicationId,
      ])
    )[0] as number;
    assert.ok(rows <= 3, `${rows} rows`);
  });
});

describe('a quota set to 0', () => {
  it('does not limit and records nothing', async () => {
    const w = makeWorld({
      quotas: {
        endpoints_per_application: 0,
        subscriptions_per_application: 0,
        new_feed_urls_per_hour: 0,
        test_events_per_minute: 0,
        backfill_entries_per_hour: 0,
      },
    });
    try {
      const { key } = await w.key();
      const endpoint = (
        await w.call('POST', '/v1/endpoints', {
          key,
          body: { title: 't', url: 'http://127.0.0.1:9/' },
        })
      ).body.id as string;
      for (let n = 0; n < 5; n++) {
        const body = { endpoint, url: `http://127.0.0.1:9/f${n}`, backfill: 100 };
        assert.equal((await w.call('POST', '/v1/subscriptions', { key, body })).status, 201);
        assert.equal((await w.call('POST', `/v1/endpoints/${endpoint}/test`, { key })).status, 200);
      }
      assert.equal(await count(w, 'quota_usage'), 0);
    } finally {
      await w.close();
    }
  });
});
