// Authenticated reads never write: a key's and a session's last use are noted in memory and written by a flush off the
// request path, so a database that refuses writes (a full disk, a lock held elsewhere) cannot fail a read.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sqliteConnection } from '../../src/db/sqlite-engine.ts';
import { makeWorld, type World, sqliteOnly } from '../support/world.ts';
import { Client } from './dashboard/client.ts';

describe('authenticated reads while the database refuses writes', sqliteOnly, () => {
  let w: World;
  let key: string;
  let ids: { endpoint: string; subscription: string; feed: string };
  let browser: Client;
  before(async () => {
    w = makeWorld();
    key = (await w.key('reader')).key;
    const endpoint = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'E', url: 'https://hooks.example.com/' },
      })
    ).body.id as string;
    const sub = (
      await w.call('POST', '/v1/subscriptions', {
        key,
        body: { endpoint, url: 'https://blog.example.com/feed.xml' },
      })
    ).body as { id: string; feed: string };
    ids = { endpoint, subscription: sub.id, feed: sub.feed };
    browser = await new Client(w).signedIn((await w.key('viewer')).key);
    // Nothing noted so far may be waiting: the requests below must not need to write anything of their own.
    await w.ctx.db.exec('UPDATE api_keys SET last_used_at = NULL');
    await w.ctx.db.exec("UPDATE sessions SET last_seen_at = '2025-12-31T23:00:00.000Z'");
    w.ctx.lastUses.keys.clear();
    w.ctx.lastUses.sessions.clear();
    w.clock.advance(10 * 60_000); // past the old once-a-minute write of a key's last use
    sqliteConnection(w.ctx.store)!.pragma('query_only = 1'); // every write now fails, as on a full disk
  });
  after(async () => {
    sqliteConnection(w.ctx.store)!.pragma('query_only = 0');
    await w.close();
  });

  it('refuses writes (the test is real)', async () => {
    await assert.rejects(() => w.ctx.db.exec('DELETE FROM sessions'), /readonly/);
    const created = await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'F', url: 'https://hooks.example.com/2' },
    });
    assert.ok(created.status >= 500, 'a write fails');
  });

  for (const path of [
    '/v1/endpoints',
    '/v1/endpoints/:endpoint',
    '/v1/subscriptions',
    '/v1/subscriptions/:subscription',
    '/v1/feeds/:feed',
    '/v1/events',
  ])
    it(`answers GET ${path} with 200`, async () => {
      const res = await w.call(
        'GET',
        path.replace(/:(\w+)/, (_, name: keyof typeof ids) => ids[name]),
        { key },
      );
      assert.equal(res.status, 200, res.text);
    });

  for (const path of ['/dashboard', '/dashboard/endpoints', '/dashboard/events'])
    it(`serves the signed-in dashboard page ${path}`, async () => {
      const page = await browser.get(path);
      assert.equal(page.status, 200, page.text.slice(0, 500));
    });

  it('noted each use in memory, for the next flush', () => {
    assert.equal(w.ctx.lastUses.keys.size, 1);
    assert.equal(w.ctx.lastUses.sessions.size, 1);
  });
});
