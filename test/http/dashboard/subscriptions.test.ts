// The subscriptions pages through app.request(): list, create with JSON metadata, feed health, edit, pause/resume, delete.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { insertHistory } from '../../../src/store/entry-history.ts';
import { recordPollFailure } from '../../../src/store/feeds-record.ts';
import { makeWorld, type World } from '../../support/world.ts';
import {
  assertLabelled,
  Client,
  errorBeside,
  idFrom,
  inputValue,
  textareaValue,
} from './client.ts';

let w: World;
before(() => {
  w = makeWorld();
});
after(() => w.close());

async function setup(): Promise<{ c: Client; key: string; endpoint: string }> {
  const { key } = await w.key();
  const c = await new Client(w).signedIn(key);
  const endpoint = (
    await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'Receiver', url: 'http://127.0.0.1:9/hook' },
    })
  ).body.id as string;
  return { c, key, endpoint };
}

async function subscribe(
  c: Client,
  endpoint: string,
  url = 'http://127.0.0.1:9/feed.xml',
  metadata = '',
): Promise<string> {
  const res = await c.post('/dashboard/subscriptions', {
    _action: 'create',
    endpoint,
    url,
    metadata,
  });
  assert.equal(res.status, 303, res.text);
  return idFrom(res.location, 'subscriptions');
}

describe('dashboard subscriptions list', () => {
  it('sends a new user to create an endpoint first', async () => {
    const c = await new Client(w).signedIn((await w.key()).key);
    const page = await c.get('/dashboard/subscriptions');
    assert.match(page.text, /First <a href="\/dashboard\/endpoints">create an endpoint<\/a>/);
    assert.doesNotMatch(page.text, /<form method="post" action="\/dashboard\/subscriptions"/);
  });

  it("offers a labelled create form listing only this application's endpoints", async () => {
    const { c, endpoint } = await setup();
    const foreign = await setup();
    const page = await c.get('/dashboard/subscriptions');
    assertLabelled(page.text);
    assert.match(page.text, new RegExp(`<option value="${endpoint}">`));
    assert.doesNotMatch(page.text, new RegExp(foreign.endpoint));
  });

  it('creates a subscription whose metadata is stored exactly as typed, then shows it with its feed status', async () => {
    const { c, key, endpoint } = await setup();
    const metadata = '{"user": 42, "price": 1.50, "tags": ["a", "b"]}';
    const id = await subscribe(c, endpoint, 'http://127.0.0.1:9/feed.xml', metadata);
    const api = await w.call('GET', `/v1/subscriptions/${id}`, { key });
    assert.match(api.text, /"metadata":\{"user":42,"price":1.50,"tags":\["a","b"\]\}/);
    const list = await c.get('/dashboard/subscriptions');
    assert.match(
      list.text,
      new RegExp(`href="/dashboard/subscriptions/${id}">http://127.0.0.1:9/feed.xml</a>`),
    );
    assert.match(list.text, /<span class="badge pending">pending<\/span>/);
  });

  it('shows every invalid field at once with the typed values kept, including metadata that is not JSON', async () => {
    const { c } = await setup();
    const res = await c.post('/dashboard/subscriptions', {
      _action: 'create',
      endpoint: '',
      url: 'feed.xml',
      metadata: '{"a": ',
    });
    assert.equal(res.status, 400);
    assert.equal(errorBeside(res.text, 'new-endpoint'), 'choose an endpoint');
    assert.equal(errorBeside(res.text, 'new-url'), 'must be an absolute http or https URL');
    assert.match(errorBeside(res.text, 'new-metadata')!, /^must be valid JSON/);
    assert.equal(inputValue(res.text, 'new-url'), 'feed.xml');
    assert.equal(textareaValue(res.text, 'new-metadata'), '{"a": ');
  });

  it("puts the action's metadata rules beside the field (an array is not an object)", async () => {
    const { c, endpoint } = await setup();
    const res = await c.post('/dashboard/subscriptions', {
      _action: 'create',
      endpoint,
      url: 'http://127.0.0.1:9/x.xml',
      metadata: '[1, 2]',
    });
    assert.equal(res.status, 400);
    assert.equal(errorBeside(res.text, 'new-metadata'), 'must be a JSON object');
    assert.equal(textareaValue(res.text, 'new-metadata'), '[1, 2]');
  });

  it('explains a duplicate subscription (409) with the values kept', async () => {
    const { c, endpoint } = await setup();
    await subscribe(c, endpoint, 'http://127.0.0.1:9/dup.xml');
    const res = await c.post('/dashboard/subscriptions', {
      _action: 'create',
      endpoint,
      url: 'http://127.0.0.1:9/dup.xml',
      metadata: '',
    });
    assert.equal(res.status, 409);
    assert.match(res.text, /already exists/);
    assert.equal(inputValue(res.text, 'new-url'), 'http://127.0.0.1:9/dup.xml');
  });

  it("answers 404 when the form names another application's endpoint", async () => {
    const { c } = await setup();
    const foreign = await setup();
    const res = await c.post('/dashboard/subscriptions', {
      _action: 'create',
      endpoint: foreign.endpoint,
      url: 'http://127.0.0.1:9/f.xml',
      metadata: '',
    });
    assert.equal(res.status, 404);
  });

  it('rejects a create without the CSRF token', async () => {
    const { c, endpoint, key } = await setup();
    const res = await c.post(
      '/dashboard/subscriptions',
      { _action: 'create', endpoint, url: 'http://127.0.0.1:9/f.xml' },
      { csrf: null },
    );
    assert.equal(res.status, 403);
    assert.deepEqual((await w.call('GET', '/v1/subscriptions', { key })).body.data, []);
  });
});

describe('dashboard subscription page', () => {
  it('shows the feed health: last poll, next poll, last error, HTTP status, entry count, discovered URL', async () => {
    const { c, endpoint, key } = await setup();
    const id = await subscribe(c, endpoint, 'http://127.0.0.1:9/health.xml');
    const feed = (await w.call('GET', `/v1/subscriptions/${id}`, { key })).body.feed as string;
    await recordPollFailure(
      w.ctx.db,
      feed,
      {
        errorClass: 'http',
        message: 'fetch: the server answered 503 <Service Unavailable>',
        httpStatus: 503,
        nextPollAt: '2026-01-01T00:05:00.000Z',
      },
      w.clock.now(),
    );
    const page = await c.get(`/dashboard/subscriptions/${id}`);
    assert.equal(page.status, 200);
    for (const label of [
      'Last poll',
      'Next poll',
      'Last error',
      'HTTP status',
      'Entries seen',
      'Discovered URL',
    ])
      assert.match(page.text, new RegExp(`<dt>${label}</dt>`));
    assert.match(page.text, /<span class="badge error">error<\/span>/);
    assert.match(page.text, /<dd>503<\/dd>/);
    assert.match(page.text, /the server answered 503 &lt;Service Unavailable&gt;/);
    assert.match(
      page.text,
      /<time datetime="2026-01-01T00:05:00.000Z" title="2026-01-01 00:05:00 UTC">2026-01-01 00:05:00 UTC<\/time>/,
    );
    assert.match(page.text, /No events yet/);
    assertLabelled(page.text);
  });

  it("answers 404 for another application's subscription on GET and POST", async () => {
    const { c, endpoint } = await setup();
    const id = await subscribe(c, endpoint);
    const stranger = await new Client(w).signedIn((await w.key()).key);
    assert.equal((await stranger.get(`/dashboard/subscriptions/${id}`)).status, 404);
    assert.equal(
      (await stranger.post(`/dashboard/subscriptions/${id}`, { _action: 'pause' })).status,
      404,
    );
    assert.equal((await c.get(`/dashboard/subscriptions/${id}`)).status, 200);
  });

  it('pauses and resumes', async () => {
    const { c, endpoint, key } = await setup();
    const id = await subscribe(c, endpoint);
    const paused = await c.post(`/dashboard/subscriptions/${id}`, { _action: 'pause' });
    assert.equal(paused.location, `/dashboard/subscriptions/${id}?notice=subscription-paused`);
    assert.equal((await w.call('GET', `/v1/subscriptions/${id}`, { key })).body.status, 'paused');
    assert.match((await c.get(paused.location!)).text, /name="_action" value="resume"/);
    await c.post(`/dashboard/subscriptions/${id}`, { _action: 'resume' });
    assert.equal((await w.call('GET', `/v1/subscriptions/${id}`, { key })).body.status, 'active');
  });

  it('edits the metadata exactly as typed, keeps bad JSON beside the field, and clears it when emptied', async () => {
    const { c, endpoint, key } = await setup();
    const id = await subscribe(c, endpoint, 'http://127.0.0.1:9/m.xml', '{"v": 1}');
    const page = await c.get(`/dashboard/subscriptions/${id}`);
    assert.equal(textareaValue(page.text, 'edit-metadata'), '{"v":1}');
    const bad = await c.post(`/dashboard/subscriptions/${id}`, {
      _action: 'update',
      endpoint,
      metadata: '{v: 2}',
    });
    assert.equal(bad.status, 400);
    assert.match(errorBeside(bad.text, 'edit-metadata')!, /must be valid JSON/);
    assert.equal(textareaValue(bad.text, 'edit-metadata'), '{v: 2}');
    await c.post(`/dashboard/subscriptions/${id}`, {
      _action: 'update',
      endpoint,
      metadata: '{"v": 2.0}',
    });
    assert.match(
      (await w.call('GET', `/v1/subscriptions/${id}`, { key })).text,
      /"metadata":\{"v":2.0\}/,
    );
    await c.post(`/dashboard/subscriptions/${id}`, { _action: 'update', endpoint, metadata: '' });
    assert.equal((await w.call('GET', `/v1/subscriptions/${id}`, { key })).body.metadata, null);
  });

  it("moves to another of the application's endpoints", async () => {
    const { c, endpoint, key } = await setup();
    const second = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'Second', url: 'http://127.0.0.1:9/two' },
      })
    ).body.id as string;
    const id = await subscribe(c, endpoint);
    const res = await c.post(`/dashboard/subscriptions/${id}`, {
      _action: 'update',
      endpoint: second,
      metadata: '',
    });
    assert.equal(res.status, 303);
    assert.equal((await w.call('GET', `/v1/subscriptions/${id}`, { key })).body.endpoint, second);
  });

  it('deletes only when confirmed', async () => {
    const { c, endpoint } = await setup();
    const id = await subscribe(c, endpoint);
    assert.equal(
      (await c.post(`/dashboard/subscriptions/${id}`, { _action: 'delete' })).status,
      400,
    );
    const res = await c.post(`/dashboard/subscriptions/${id}`, {
      _action: 'delete',
      confirm: 'yes',
    });
    assert.equal(res.location, '/dashboard/subscriptions?notice=subscription-deleted');
    assert.equal((await c.get(`/dashboard/subscriptions/${id}`)).status, 404);
  });
});

describe('dashboard subscription history', () => {
  it("lists the feed's entries and answers the Why? form with the trace", async () => {
    const { c, endpoint } = await setup();
    const id = await subscribe(c, endpoint, 'http://127.0.0.1:9/history.xml');
    const sub = (await w.ctx.db.get('SELECT feed_id FROM subscriptions WHERE id = ?', [id])) as {
      feed_id: string;
    };
    const key = 'a'.repeat(32);
    const entry = {
      id: key,
      guid: 'urn:g1',
      url: 'javascript:alert(1)',
      title: 'Hello <history>',
      published_at: '2026-01-01T00:00:00.000Z',
    };
    await insertHistory(w.ctx.db, sub.feed_id, [
      {
        key,
        key_source: 'guid',
        entry: JSON.stringify(entry),
        content_hash: 'h',
        first_seen_at: '2025-12-31T00:00:00.000Z',
        via: 'poll',
        fate: 'baseline',
      },
    ]);
    const page = await c.get(`/dashboard/subscriptions/${id}`);
    assert.equal(page.status, 200);
    assert.match(page.text, /<td>Hello &lt;history&gt;<\/td>/, 'escaped, and no javascript: link');
    assert.ok(page.text.includes(`href="/dashboard/subscriptions/${id}?entry=${key}#why"`));
    assertLabelled(page.text);
    const traced = await c.get(`/dashboard/subscriptions/${id}?entry=urn%3Ag1`);
    assert.equal(traced.status, 200);
    assert.match(
      traced.text,
      /<span class="badge before_subscription">before subscription<\/span>/,
    );
    assert.equal(inputValue(traced.text, 'why-entry'), 'urn:g1');
    const empty = await c.get(`/dashboard/subscriptions/${id}?entry=`);
    assert.match(empty.text, /must be an entry&#39;s id, guid or URL/);
  });

  it('turns updated entries on and off', async () => {
    const { c, endpoint, key } = await setup();
    const id = await subscribe(c, endpoint, 'http://127.0.0.1:9/updates.xml');
    await c.get(`/dashboard/subscriptions/${id}`);
    const on = await c.post(`/dashboard/subscriptions/${id}`, { _action: 'updates-on' });
    assert.equal(on.status, 303, on.text);
    assert.equal((await w.call('GET', `/v1/subscriptions/${id}`, { key })).body.updates, true);
    const off = await c.post(`/dashboard/subscriptions/${id}`, { _action: 'updates-off' });
    assert.equal(off.status, 303, off.text);
    assert.equal((await w.call('GET', `/v1/subscriptions/${id}`, { key })).body.updates, false);
  });
});
