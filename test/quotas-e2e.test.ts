// End to end against the real `feedsub serve`: loops of requests, bounded in count and time, meet each quota and
// limit — endpoints, new feed URLs, test POSTs to a third party, the request rate, wrong keys — and a
// valid key still signs in from an address behind the proxy that has spent its failures.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { systemClock } from '../src/clock.ts';
import { defaultConfig } from '../src/config.ts';
import { quietCtx } from '../src/context.ts';
import { openDatabase } from '../src/db/open.ts';
import { SqliteEngine } from '../src/db/sqlite-engine.ts';
import { startDaemon, type Daemon } from './support/daemon.ts';
import { until, within } from './support/deadline.ts';
import { rss, startOrigin, startReceiver, type Origin, type Receiver } from './support/servers.ts';

const ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  // The test itself plays the reverse proxy: it connects from 127.0.0.1 and names clients in X-Forwarded-For.
  FEEDSUB_SERVER_TRUSTED_PROXIES: '127.0.0.1',
  FEEDSUB_QUOTAS_ENDPOINTS_PER_APPLICATION: '25',
  // above new_feed_urls_per_hour, which the feeds test meets first
  FEEDSUB_QUOTAS_SUBSCRIPTIONS_PER_APPLICATION: '20',
  FEEDSUB_QUOTAS_NEW_FEED_URLS_PER_HOUR: '15',
  FEEDSUB_QUOTAS_TEST_EVENTS_PER_MINUTE: '10',
  FEEDSUB_QUOTAS_API_REQUESTS_PER_SECOND: '5',
  FEEDSUB_QUOTAS_API_BURST: '200',
};

type Answer = { status: number; retryAfter: string | null; body: Record<string, unknown> };

/** Runs `count` calls, at most `width` at a time; the answers in call order. */
async function loop<T>(
  count: number,
  width: number,
  call: (i: number) => Promise<T>,
): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      out[i] = await call(i);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return out;
}

const tally = (answers: Answer[]) =>
  answers.reduce<Record<number, number>>(
    (t, a) => ({ ...t, [a.status]: (t[a.status] ?? 0) + 1 }),
    {},
  );

describe('end to end: quotas and request limits of the real server', () => {
  let dir: string;
  let daemon: Daemon;
  let origin: Origin;
  let receiver: Receiver;
  const keys: Record<string, string> = {};

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'feedsub-quotas-'));
    const store = new SqliteEngine(openDatabase(join(dir, 'feedsub.db')));
    const ctx = quietCtx(store, systemClock, defaultConfig());
    for (const app of ['endpoints', 'subscriptions', 'feeds', 'tests', 'rate', 'signin'])
      keys[app] = (await createKey(ctx, app, null)).key;
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

  const call = async (
    method: string,
    path: string,
    opts: { key?: string; body?: unknown; client?: string } = {},
  ): Promise<Answer> => {
    const res = await fetch(`${daemon.url}${path}`, {
      method,
      headers: {
        ...(opts.key ? { authorization: opts.key } : {}),
        ...(opts.body ? { 'content-type': 'application/json' } : {}),
        ...(opts.client ? { 'x-forwarded-for': opts.client } : {}),
      },
      ...(opts.body ? { body: JSON.stringify(opts.body) } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    };
  };
  const endpoint = async (key: string, url: string) =>
    (await call('POST', '/v1/endpoints', { key, body: { title: 'e', url } })).body.id as string;

  it('stops one key making endpoints at quotas.endpoints_per_application', async () => {
    const key = keys.endpoints!;
    const answers = await within(
      loop(150, 8, (i) =>
        call('POST', '/v1/endpoints', {
          key,
          body: { title: `e${i}`, url: `https://hooks.example.com/${i}` },
        }),
      ),
      30_000,
      '150 endpoint POSTs',
    );
    assert.deepEqual(tally(answers), { 201: 25, 429: 125 });
    const refused = answers.find((a) => a.status === 429)!;
    assert.equal(refused.body.quota, 'endpoints_per_application');
    assert.equal(refused.retryAfter, '3600');
    const listed = await call('GET', '/v1/endpoints?limit=200', { key });
    assert.equal((listed.body.data as unknown[]).length, 25);
  });

  it('stops one key making subscriptions at quotas.subscriptions_per_application, whatever the URLs', async () => {
    const key = keys.subscriptions!;
    // Three feed URLs (under new_feed_urls_per_hour) to eight endpoints: 24 subscriptions, none a duplicate.
    for (let i = 0; i < 3; i++) origin.set(`/s${i}.xml`, { body: rss([{ guid: `s${i}` }]) });
    const targets: string[] = [];
    for (let i = 0; i < 8; i++)
      targets.push(await endpoint(key, `https://hooks.example.com/s${i}`));
    const answers = await within(
      loop(24, 4, (i) =>
        call('POST', '/v1/subscriptions', {
          key,
          body: { endpoint: targets[i % 8], url: `${origin.url}/s${Math.floor(i / 8)}.xml` },
        }),
      ),
      30_000,
      '24 subscription POSTs',
    );
    assert.deepEqual(tally(answers), { 201: 20, 429: 4 });
    const refused = answers.find((a) => a.status === 429)!;
    assert.equal(refused.body.quota, 'subscriptions_per_application');
    assert.ok(refused.retryAfter !== null, 'with Retry-After');
    const listed = await call('GET', '/v1/subscriptions?limit=200', { key });
    assert.equal((listed.body.data as unknown[]).length, 20);
  });

  it('fetches no more new feed URLs an hour than quotas.new_feed_urls_per_hour', async () => {
    const key = keys.feeds!;
    for (let i = 0; i < 60; i++) origin.set(`/f${i}.xml`, { body: rss([{ guid: `g${i}` }]) });
    const target = await endpoint(key, 'https://hooks.example.com/feeds');
    const answers = await within(
      loop(60, 8, (i) =>
        call('POST', '/v1/subscriptions', {
          key,
          body: { endpoint: target, url: `${origin.url}/f${i}.xml` },
        }),
      ),
      30_000,
      '60 subscription POSTs',
    );
    assert.deepEqual(tally(answers), { 201: 15, 429: 45 });
    assert.equal(answers.find((a) => a.status === 429)!.body.quota, 'new_feed_urls_per_hour');
    const accepted = new Set(answers.flatMap((a, i) => (a.status === 201 ? [`/f${i}.xml`] : [])));
    const fetched = () =>
      new Set(origin.requests.map((r) => r.path).filter((p) => p.startsWith('/f')));
    await until(() => fetched().size >= 15, 15_000, 'the 15 accepted feeds fetched');
    assert.deepEqual(
      [...fetched()].filter((p) => !accepted.has(p)),
      [],
      'nothing else fetched',
    );
  });

  it('sends a third party no more test POSTs a minute than quotas.test_events_per_minute', async () => {
    const key = keys.tests!;
    const target = await endpoint(key, receiver.url);
    const answers = await within(
      loop(80, 8, () => call('POST', `/v1/endpoints/${target}/test`, { key })),
      30_000,
      '80 test POSTs',
    );
    assert.deepEqual(tally(answers), { 200: 10, 429: 70 });
    assert.equal(answers.find((a) => a.status === 429)!.body.quota, 'test_events_per_minute');
    assert.equal(receiver.deliveries.length, 10);
  });

  it('holds an application to quotas.api_burst and then quotas.api_requests_per_second', async () => {
    const key = keys.rate!;
    const started = Date.now();
    const answers = await within(
      loop(400, 16, () => call('GET', '/v1/endpoints', { key })),
      30_000,
      '400 GETs',
    );
    const seconds = (Date.now() - started) / 1000;
    const ok = answers.filter((a) => a.status === 200).length;
    assert.ok(ok >= 200, `the whole burst is usable: ${ok}`);
    assert.ok(ok <= 200 + 5 * seconds + 1, `${ok} answered in ${seconds} s`);
    const refused = answers.filter((a) => a.status !== 200);
    assert.ok(refused.length > 0);
    for (const a of refused) {
      assert.equal(a.status, 429);
      assert.equal(a.retryAfter, '1');
      assert.equal(a.body.quota, 'api_requests_per_second');
    }
  });

  it('answers a flood of wrong keys 429 per client behind the proxy, and a valid key from that client 200', async () => {
    const answers = await loop(30, 4, (i) =>
      call('GET', '/v1/endpoints', { key: `fsk_guess${i}`, client: '198.51.100.1' }),
    );
    assert.deepEqual(tally(answers), { 401: 10, 429: 20 });
    const valid = await call('GET', '/v1/endpoints', {
      key: keys.endpoints!,
      client: '198.51.100.1',
    });
    assert.equal(valid.status, 200);
    const other = await call('GET', '/v1/endpoints', { key: 'fsk_guess', client: '198.51.100.2' });
    assert.equal(other.status, 401, 'another client behind the same proxy');
  });

  it('signs in with a valid key from a client whose wrong keys are limited', async () => {
    const signIn = async (key: string, client: string) => {
      const headers = { 'x-forwarded-for': client };
      const form = await fetch(`${daemon.url}/dashboard`, { headers });
      const cookie = form.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const login = /name="_login" value="([^"]+)"/.exec(await form.text())![1]!;
      const res = await fetch(`${daemon.url}/dashboard`, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...headers, cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _action: 'signin', _login: login, key, next: '/dashboard' }),
      });
      await res.text();
      return { status: res.status, retryAfter: res.headers.get('retry-after') };
    };
    const client = '198.51.100.3';
    const wrong = await loop(12, 1, (i) => signIn(`fsk_wrong${i}`, client));
    assert.deepEqual(
      wrong.map((a) => a.status),
      [...Array(10).fill(401), 429, 429],
    );
    // At most the window's minute; a loaded machine may have spent a second or two of it on the twelve attempts.
    const retryAfter = Number(wrong[11]!.retryAfter);
    assert.ok(retryAfter > 50 && retryAfter <= 60, `Retry-After ${wrong[11]!.retryAfter}`);
    assert.equal((await signIn(keys.signin!, client)).status, 303);
    assert.equal((await signIn('fsk_wrong', '198.51.100.4')).status, 401);
  });
});
