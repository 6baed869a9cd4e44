// The endpoints pages through app.request(): list, create, edit, enable/disable, secret, test event, recover, delete, isolation.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startReceiver, type Receiver } from '../../support/servers.ts';
import { makeWorld, type World } from '../../support/world.ts';
import { assertLabelled, Client, errorBeside, idFrom, inputValue } from './client.ts';

let w: World;
let receiver: Receiver;
before(async () => {
  w = makeWorld();
  receiver = await startReceiver();
});
after(async () => {
  await w.close();
  await receiver.close();
});

async function withEndpoint(
  title = 'Orders hook',
): Promise<{ c: Client; id: string; key: string }> {
  const { key } = await w.key();
  const c = await new Client(w).signedIn(key);
  const res = await c.post('/dashboard/endpoints', {
    _action: 'create',
    title,
    url: `${receiver.url}/hook`,
  });
  return { c, id: idFrom(res.location, 'endpoints'), key };
}

describe('dashboard endpoints list', () => {
  it('says what to do when there are none, and labels every field of the create form', async () => {
    const c = await new Client(w).signedIn((await w.key()).key);
    const page = await c.get('/dashboard/endpoints');
    assert.equal(page.status, 200);
    assert.match(page.text, /No endpoints yet\. Create one below/);
    assertLabelled(page.text);
  });

  it('creates an endpoint and redirects (303) to it with its secret revealed', async () => {
    const { key } = await w.key();
    const c = await new Client(w).signedIn(key);
    const res = await c.post('/dashboard/endpoints', {
      _action: 'create',
      title: 'Hook',
      url: `${receiver.url}/a`,
    });
    assert.equal(res.status, 303);
    const id = idFrom(res.location, 'endpoints');
    assert.match(res.location!, /\?reveal=1&notice=endpoint-created$/);
    const page = await c.get(res.location!);
    assert.match(page.text, /<p class="secret" id="secret">whsec_[A-Za-z0-9+/=]+<\/p>/);
    const api = await w.call('GET', `/v1/endpoints/${id}`, { key });
    assert.equal(api.body.title, 'Hook');
    assert.match(
      (await c.get('/dashboard/endpoints')).text,
      new RegExp(`href="/dashboard/endpoints/${id}">Hook</a>`),
    );
  });

  it('re-renders invalid input with the values typed and each error beside its field', async () => {
    const c = await new Client(w).signedIn((await w.key()).key);
    const res = await c.post('/dashboard/endpoints', {
      _action: 'create',
      title: '   ',
      url: 'ftp://nope "x"',
    });
    assert.equal(res.status, 400);
    assert.equal(errorBeside(res.text, 'new-title'), 'is required');
    assert.equal(errorBeside(res.text, 'new-url'), 'must be an absolute http or https URL');
    assert.equal(inputValue(res.text, 'new-url'), 'ftp://nope "x"');
    assert.match(res.text, /aria-invalid="true"/);
  });

  it('refuses a private address unless network.allow_private, beside the URL field', async () => {
    const strict = makeWorld({ network: { allow_private: false } });
    try {
      const c = await new Client(strict).signedIn((await strict.key()).key);
      const res = await c.post('/dashboard/endpoints', {
        _action: 'create',
        title: 'x',
        url: 'http://127.0.0.1/hook',
      });
      assert.equal(res.status, 400);
      assert.match(errorBeside(res.text, 'new-url')!, /private, loopback or reserved/);
    } finally {
      await strict.close();
    }
  });

  it("rejects a POST without the CSRF token or with another session's token, creating nothing", async () => {
    const { key } = await w.key();
    const c = await new Client(w).signedIn(key);
    const other = await new Client(w).signedIn((await w.key()).key);
    for (const csrf of [null, '', other.csrf]) {
      const res = await c.post(
        '/dashboard/endpoints',
        { _action: 'create', title: 'Sneaky', url: `${receiver.url}/x` },
        { csrf },
      );
      assert.equal(res.status, 403);
      assert.match(res.text, /This form has expired/);
    }
    assert.deepEqual((await w.call('GET', '/v1/endpoints', { key })).body.data, []);
  });

  it('renders a hostile title escaped everywhere', async () => {
    const { c, id } = await withEndpoint('<script>alert("x")</script>');
    for (const path of ['/dashboard/endpoints', `/dashboard/endpoints/${id}`]) {
      const page = await c.get(path);
      assert.doesNotMatch(page.text, /<script>alert/);
      assert.match(page.text, /&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt;/);
    }
  });
});

describe('dashboard endpoint page', () => {
  it("answers 404 for another application's endpoint, on GET and POST, and for a malformed id", async () => {
    const { id } = await withEndpoint();
    const stranger = await new Client(w).signedIn((await w.key()).key);
    assert.equal((await stranger.get(`/dashboard/endpoints/${id}`)).status, 404);
    assert.equal((await stranger.get(`/dashboard/endpoints/${id}?reveal=1`)).status, 404);
    const post = await stranger.post(`/dashboard/endpoints/${id}`, {
      _action: 'delete',
      confirm: 'yes',
    });
    assert.equal(post.status, 404);
    assert.match(post.text, /Not found/);
    assert.equal((await stranger.get('/dashboard/endpoints/not-an-id')).status, 404);
  });

  it('hides the secret until asked', async () => {
    const { c, id } = await withEndpoint();
    const page = await c.get(`/dashboard/endpoints/${id}`);
    assert.doesNotMatch(page.text, /whsec_/);
    assert.match(
      page.text,
      new RegExp(`href="/dashboard/endpoints/${id}\\?reveal=1">Reveal secret`),
    );
  });

  it('edits title and URL, keeping typed values when invalid', async () => {
    const { c, id, key } = await withEndpoint();
    const bad = await c.post(`/dashboard/endpoints/${id}`, {
      _action: 'update',
      title: 'New',
      url: 'not a url',
    });
    assert.equal(bad.status, 400);
    assert.equal(inputValue(bad.text, 'edit-title'), 'New');
    assert.equal(errorBeside(bad.text, 'edit-url'), 'must be an absolute http or https URL');
    const ok = await c.post(`/dashboard/endpoints/${id}`, {
      _action: 'update',
      title: 'New',
      url: `${receiver.url}/new`,
    });
    assert.equal(ok.status, 303);
    assert.equal(ok.location, `/dashboard/endpoints/${id}?notice=endpoint-updated`);
    assert.equal(
      (await w.call('GET', `/v1/endpoints/${id}`, { key })).body.url,
      `${receiver.url}/new`,
    );
  });

  it('creates an endpoint that receives only the ticked event types, shows them, and edits them back to every type', async () => {
    const { key } = await w.key();
    const c = await new Client(w).signedIn(key);
    const form = await c.get('/dashboard/endpoints');
    assert.match(form.text, /<legend>Event types<\/legend>/);
    assert.match(form.text, /id="new-filter-all" name="filter" value="all" checked/);
    const res = await c.post('/dashboard/endpoints', {
      _action: 'create',
      title: 'Health',
      url: `${receiver.url}/health`,
      filter: 'some',
      'type.feed.gone': 'on',
      'type.feed.failing': 'on',
    });
    assert.equal(res.status, 303);
    const id = idFrom(res.location, 'endpoints');
    const api = await w.call('GET', `/v1/endpoints/${id}`, { key });
    assert.deepEqual(api.body.filter_types, ['feed.failing', 'feed.gone']);
    const page = await c.get(`/dashboard/endpoints/${id}`);
    assert.match(page.text, /<dt>Receives<\/dt><dd>feed\.failing, feed\.gone<\/dd>/);
    assert.match(page.text, /id="edit-filter-some" name="filter" value="some" checked/);
    assert.match(page.text, /id="edit-type-feed\.gone" name="type\.feed\.gone" value="on" checked/);
    assert.doesNotMatch(page.text, /id="edit-type-feed\.moved"[^>]*checked/);
    const edited = await c.post(`/dashboard/endpoints/${id}`, {
      _action: 'update',
      title: 'Health',
      url: `${receiver.url}/health`,
      filter: 'all',
      'type.feed.gone': 'on',
    });
    assert.equal(edited.status, 303);
    assert.equal((await w.call('GET', `/v1/endpoints/${id}`, { key })).body.filter_types, null);
    assert.match(
      (await c.get(`/dashboard/endpoints/${id}`)).text,
      /<dt>Receives<\/dt><dd>every event type<\/dd>/,
    );
  });

  it('refuses "only these" with no type ticked, beside the event types, keeping what was chosen', async () => {
    const c = await new Client(w).signedIn((await w.key()).key);
    const res = await c.post('/dashboard/endpoints', {
      _action: 'create',
      title: 'Nothing',
      url: `${receiver.url}/nothing`,
      filter: 'some',
    });
    assert.equal(res.status, 400);
    assert.match(res.text, /<fieldset class="field choices invalid">/);
    assert.match(res.text, /must list at least one event type/);
    assert.match(res.text, /id="new-filter-some" name="filter" value="some" checked/);
    assert.equal(inputValue(res.text, 'new-title'), 'Nothing');
  });

  it('disables with the reason shown, and enables again', async () => {
    const { c, id } = await withEndpoint();
    assert.equal((await c.post(`/dashboard/endpoints/${id}`, { _action: 'disable' })).status, 303);
    const page = await c.get(`/dashboard/endpoints/${id}`);
    assert.match(
      page.text,
      /<span class="badge disabled">disabled<\/span> <span>— disabled by the application<\/span>/,
    );
    assert.match(
      (await c.get('/dashboard')).text,
      /disabled by the application/,
      'the overview lists it under needs attention',
    );
    assert.equal((await c.post(`/dashboard/endpoints/${id}`, { _action: 'enable' })).status, 303);
    assert.match(
      (await c.get(`/dashboard/endpoints/${id}`)).text,
      /<span class="badge active">active<\/span>/,
    );
  });

  it('rotates the secret and shows the previous one with its expiry', async () => {
    const { c, id } = await withEndpoint();
    const first = /id="secret">([^<]+)</.exec(
      (await c.get(`/dashboard/endpoints/${id}?reveal=1`)).text,
    )![1]!;
    const res = await c.post(`/dashboard/endpoints/${id}`, { _action: 'rotate' });
    assert.equal(res.location, `/dashboard/endpoints/${id}?reveal=1&notice=secret-rotated`);
    const page = await c.get(res.location!);
    assert.notEqual(/id="secret">([^<]+)</.exec(page.text)![1], first);
    assert.match(
      page.text,
      new RegExp(`Previous secret, still signing until .*${first.replace(/[+/=]/g, '\\$&')}`),
    );
  });

  it('sends a test event to the receiver and shows its attempt', async () => {
    const { c, id } = await withEndpoint();
    receiver.respond(() => ({ status: 200, body: 'pong from receiver' }));
    const res = await c.post(`/dashboard/endpoints/${id}`, { _action: 'test' });
    assert.equal(res.status, 303);
    assert.match(res.location!, /^\/dashboard\/events\?event=[0-9a-f]{24}&notice=test-delivered$/);
    const delivery = receiver.deliveries.at(-1)!;
    assert.match(delivery.body, /"type":"endpoint.test"/);
    const page = await c.get(res.location!);
    assert.match(page.text, /Test event delivered/);
    assert.match(page.text, /<pre>pong from receiver<\/pre>/);
    assert.match(
      (await c.get(`/dashboard/endpoints/${id}`)).text,
      /endpoint\.test/,
      'the endpoint lists it among recent events',
    );
  });

  it('recovers failed events since a time, and puts a bad time beside the field', async () => {
    const { c, id } = await withEndpoint();
    const bad = await c.post(`/dashboard/endpoints/${id}`, {
      _action: 'recover',
      since: 'yesterday',
    });
    assert.equal(bad.status, 400);
    assert.equal(errorBeside(bad.text, 'recover-since'), 'must be an ISO 8601 date-time');
    assert.equal(inputValue(bad.text, 'recover-since'), 'yesterday');
    const ok = await c.post(`/dashboard/endpoints/${id}`, {
      _action: 'recover',
      since: '2020-01-01T00:00:00Z',
    });
    assert.equal(ok.status, 303);
    assert.equal(ok.location, `/dashboard/endpoints/${id}?notice=nothing-to-recover`);
  });

  it('deletes only when confirmed, and explains a 409 while subscriptions use it', async () => {
    const { c, id, key } = await withEndpoint();
    const unconfirmed = await c.post(`/dashboard/endpoints/${id}`, { _action: 'delete' });
    assert.equal(unconfirmed.status, 400);
    assert.match(unconfirmed.text, /tick this box to confirm/);
    await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint: id, url: 'http://127.0.0.1:9/feed.xml' },
    });
    const busy = await c.post(`/dashboard/endpoints/${id}`, { _action: 'delete', confirm: 'yes' });
    assert.equal(busy.status, 409);
    assert.match(busy.text, /used by 1 subscription/);
    const sub = (await w.call('GET', '/v1/subscriptions', { key })).body.data[0].id as string;
    await w.call('DELETE', `/v1/subscriptions/${sub}`, { key });
    const done = await c.post(`/dashboard/endpoints/${id}`, { _action: 'delete', confirm: 'yes' });
    assert.equal(done.location, '/dashboard/endpoints?notice=endpoint-deleted');
    assert.equal((await c.get(`/dashboard/endpoints/${id}`)).status, 404);
  });

  it('answers 400 for an action the page does not have', async () => {
    const { c, id } = await withEndpoint();
    const res = await c.post(`/dashboard/endpoints/${id}`, { _action: 'explode' });
    assert.equal(res.status, 400);
    assert.match(res.text, /does not have/);
  });
});
