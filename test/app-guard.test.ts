// The daemon in this process, against a database that stops taking writes: its loops back off and recover within
// seconds once writes work again; key uses noted by requests are written off the request path; loose data dirs are
// reported.
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { startApp } from '../src/app.ts';
import { defaultConfig, withConfig } from '../src/config.ts';
import { sqliteConnection } from '../src/db/sqlite-engine.ts';
import { until } from './support/deadline.ts';
import { recordingLogger } from './support/log.ts';
import { rss, startOrigin } from './support/servers.ts';

const configFor = (dir: string) =>
  withConfig(defaultConfig(), {
    storage: { data_dir: dir },
    server: { port: 0 },
    network: { allow_private: true },
    poll: { interval_seconds: 1, min_interval_seconds: 1, max_interval_seconds: 1 },
  });

/** POSTs `body` as JSON with `key`; the created resource's id. */
async function post(
  url: string,
  key: string,
  path: string,
  body: unknown,
): Promise<{ id: string }> {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { authorization: key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await res.json()) as { id: string };
}

// Each test has its own data directory, servers and daemon: they run at once.
describe('the daemon when writes fail', { concurrency: true }, () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'feedsub-guard-'));
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('polls again within seconds once the database takes writes again, logging the failure and the recovery once', async () => {
    const origin = await startOrigin();
    origin.set('/feed.xml', { body: rss([{ guid: 'g1' }]) });
    let failWrites = false;
    // Writes start failing right after a poll was recorded, as a full disk would: no poll is then between its claim
    // and its record (a claimed feed whose record failed would wait for its lease, which is not what is tested here).
    const { logger, lines } = recordingLogger((line) => {
      if (failWrites && line.msg === 'poll: feed polled') {
        sqliteConnection(app.ctx.store)!.pragma('query_only = 1');
        failWrites = false;
      }
    });
    const app = await startApp(configFor(tempDir()), logger);
    try {
      const key = (await createKey(app.ctx, 'guard', null)).key;
      const call = (path: string, body: unknown) => post(app.url, key, path, body);
      const endpoint = await call('/v1/endpoints', { title: 'E', url: 'https://hooks.example/' });
      await call('/v1/subscriptions', { endpoint: endpoint.id, url: `${origin.url}/feed.xml` });
      await until(() => origin.requests.length >= 2, 10_000, 'the feed polled every second');

      failWrites = true;
      const failed = () =>
        lines.filter((l) => l.msg === 'loop: tick failed' && l.fields.loop === 'poller');
      await until(() => failed().length > 0, 5000, 'a failed poller tick');
      await new Promise((r) => setTimeout(r, 2500)); // a few retries: 1 s, then 2 s after the last
      sqliteConnection(app.ctx.store)!.pragma('query_only = 0');
      const polls = origin.requests.length;
      // Before: a failed tick slept for the poller's idle 60 s. Now the next retry is at most 4 s away.
      await until(() => origin.requests.length > polls, 8000, 'a poll after writes work again');
      assert.equal(failed().length, 1, 'the repeated failure is logged once');
      assert.match(String(failed()[0]!.fields.error), /readonly/);
      assert.equal(failed()[0]!.fields.delay_ms, 1000);
      await until(
        () => lines.some((l) => l.msg === 'loop: tick recovered' && l.fields.loop === 'poller'),
        2000,
        'the recovery logged',
      );
    } finally {
      sqliteConnection(app.ctx.store)!.pragma('query_only = 0');
      await app.stop();
      await origin.close();
    }
  });

  it("answers a key's GETs while writes fail, and /healthz 503 with the reason while no page can be added, then 200", async () => {
    const app = await startApp(configFor(tempDir()), recordingLogger().logger);
    const db = sqliteConnection(app.ctx.store)!;
    try {
      const key = (await createKey(app.ctx, 'reads', null)).key;
      const endpoint = await post(app.url, key, '/v1/endpoints', {
        title: 'E',
        url: 'https://hooks.example/',
      });
      const get = async (path: string) => {
        const res = await fetch(app.url + path, { headers: { authorization: key } });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      // Every write fails, as on a full disk. Before, authenticating wrote the key's last use: every GET answered 500.
      db.pragma('query_only = 1');
      assert.equal((await get('/v1/endpoints')).status, 200);
      assert.equal((await get(`/v1/endpoints/${endpoint.id}`)).body.id, endpoint.id);
      assert.equal((await get('/v1/subscriptions')).status, 200);
      db.pragma('query_only = 0');
      // No page can be added: /healthz says so (it said 200 before, whatever the database could take).
      await app.ctx.store.exec('VACUUM'); // no free page left to reuse
      const pages = db.pragma('page_count', { simple: true }) as number;
      db.pragma(`max_page_count = ${pages}`);
      const full = await get('/healthz');
      assert.equal(full.status, 503);
      assert.match(String(full.body.detail), /^database is full/);
      assert.equal((await get('/v1/endpoints')).status, 200, 'reads still answer');
      db.pragma(`max_page_count = ${pages * 4}`);
      assert.equal((await get('/healthz')).status, 200);
    } finally {
      db.pragma('query_only = 0');
      await app.stop();
    }
  });

  it('writes the last use of a key noted by requests when it stops, not during the request', async () => {
    const dir = tempDir();
    const app = await startApp(configFor(dir), recordingLogger().logger);
    let keyId = '';
    try {
      const made = await createKey(app.ctx, 'uses', null);
      keyId = made.id;
      const res = await fetch(`${app.url}/v1/endpoints`, { headers: { authorization: made.key } });
      assert.equal(res.status, 200);
      const stored = (
        await app.ctx.db.column('SELECT last_used_at FROM api_keys WHERE id = ?', [keyId])
      )[0];
      assert.equal(stored, null, 'not written by the request');
    } finally {
      await app.stop();
    }
    const db = new Database(join(dir, 'feedsub.db'), { readonly: true });
    try {
      const stored = db
        .prepare('SELECT last_used_at FROM api_keys WHERE id = ?')
        .pluck()
        .get(keyId);
      assert.match(String(stored), /^\d{4}-\d\d-\d\dT/);
    } finally {
      db.close();
    }
  });

  it("writes the chart's poll counts by the minute and when it stops, not with each poll", async () => {
    const dir = tempDir();
    const origin = await startOrigin();
    origin.set('/feed.xml', { body: rss([{ guid: 'g1' }]) });
    const app = await startApp(configFor(dir), recordingLogger().logger);
    const chartRows = async () =>
      (await app.ctx.db.column('SELECT count(*) FROM feed_poll_hours'))[0] as number;
    let polls = 0;
    try {
      const key = (await createKey(app.ctx, 'chart', null)).key;
      const call = (path: string, body: unknown) => post(app.url, key, path, body);
      const endpoint = await call('/v1/endpoints', { title: 'E', url: 'https://hooks.example/' });
      await call('/v1/subscriptions', { endpoint: endpoint.id, url: `${origin.url}/feed.xml` });
      await until(() => origin.requests.length >= 3, 10_000, 'the feed polled every second');
      assert.equal(await chartRows(), 0, 'no poll wrote its count');
    } finally {
      await app.stop();
      polls = origin.requests.length;
      await origin.close();
    }
    const db = new Database(join(dir, 'feedsub.db'), { readonly: true });
    try {
      const ok = db.prepare('SELECT sum(ok) FROM feed_poll_hours').pluck().get() as number;
      assert.ok(ok >= 3 && ok <= polls, `every recorded poll counted at stop (${ok} of ${polls})`);
    } finally {
      db.close();
    }
  });

  it('warns at start when an existing data directory is open to other users', async () => {
    const dir = join(tempDir(), 'shared');
    mkdirSync(dir);
    chmodSync(dir, 0o755);
    const { logger, lines } = recordingLogger();
    const app = await startApp(configFor(dir), logger);
    await app.stop();
    const warned = lines.filter(
      (l) => l.level === 'warn' && l.msg.includes('data directory is open to other users'),
    );
    assert.equal(warned.length, 1);
    assert.equal(warned[0]!.fields.mode, '0755');
  });
});
