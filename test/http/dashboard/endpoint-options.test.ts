// The endpoint page's delivery options: extra headers shown escaped and the rate limit, edited through the
// CSRF-checked form.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeWorld, type World } from '../../support/world.ts';
import { Client, errorBeside, idFrom, inputValue, textareaValue } from './client.ts';

let w: World;
before(() => {
  w = makeWorld();
});
after(() => w.close());

async function withEndpoint(): Promise<{ c: Client; id: string; key: string }> {
  const { key } = await w.key();
  const c = await new Client(w).signedIn(key);
  const res = await c.post('/dashboard/endpoints', {
    _action: 'create',
    title: 'Hook',
    url: 'https://hooks.example.com/in',
  });
  return { c, id: idFrom(res.location, 'endpoints'), key };
}

describe('dashboard endpoint headers', () => {
  it('edits the headers one per line, shows them escaped, and clears them with a blank field', async () => {
    const { c, id, key } = await withEndpoint();
    const here = `/dashboard/endpoints/${id}`;
    const form = { _action: 'update', title: 'Hook', url: 'https://hooks.example.com/in' };
    const saved = await c.post(here, {
      ...form,
      headers: 'X-Tenant: acme\r\n\r\nX-Note:   <b>"hi"</b>  \n',
    });
    assert.equal(saved.status, 303);
    assert.deepEqual((await w.call('GET', `/v1/endpoints/${id}`, { key })).body.headers, {
      'X-Tenant': 'acme',
      'X-Note': '<b>"hi"</b>',
    });
    const page = await c.get(here);
    assert.doesNotMatch(page.text, /<b>"hi"<\/b>/);
    assert.match(page.text, /X-Note: &lt;b&gt;&quot;hi&quot;&lt;\/b&gt;/);
    assert.equal(textareaValue(page.text, 'edit-headers'), 'X-Tenant: acme\nX-Note: <b>"hi"</b>');
    const unchanged = await c.post(here, { ...form, title: 'Renamed' });
    assert.equal(unchanged.status, 303, 'a form without the field leaves the headers');
    assert.equal(
      Object.keys((await w.call('GET', `/v1/endpoints/${id}`, { key })).body.headers).length,
      2,
    );
    await c.post(here, { ...form, headers: '  \r\n' });
    assert.equal((await w.call('GET', `/v1/endpoints/${id}`, { key })).body.headers, null);
    assert.match((await c.get(here)).text, /<dt>Extra headers<\/dt><dd class="mono">none<\/dd>/);
  });

  it('refuses a reserved header or a line without a colon beside the field, keeping what was typed', async () => {
    const { c, id, key } = await withEndpoint();
    const here = `/dashboard/endpoints/${id}`;
    const form = { _action: 'update', title: 'Hook', url: 'https://hooks.example.com/in' };
    const reserved = await c.post(here, { ...form, headers: 'X-Ok: 1\nWebhook-Id: forged' });
    assert.equal(reserved.status, 400);
    assert.match(errorBeside(reserved.text, 'edit-headers')!, /^Webhook-Id is set by feedsub/);
    assert.equal(textareaValue(reserved.text, 'edit-headers'), 'X-Ok: 1\nWebhook-Id: forged');
    const colonless = await c.post(here, { ...form, headers: 'X-Ok: 1\nno colon here' });
    assert.equal(colonless.status, 400);
    assert.equal(
      errorBeside(colonless.text, 'edit-headers'),
      'line 2 has no colon: write Name: value',
    );
    assert.equal((await w.call('GET', `/v1/endpoints/${id}`, { key })).body.headers, null);
  });

  it('refuses a header named __proto__ or constructor beside the field, keeping what was typed and the headers', async () => {
    const { c, id, key } = await withEndpoint();
    const here = `/dashboard/endpoints/${id}`;
    const form = { _action: 'update', title: 'Hook', url: 'https://hooks.example.com/in' };
    await c.post(here, { ...form, headers: 'X-Keep: 1' });
    for (const name of ['__proto__', 'Constructor']) {
      const typed = `X-Ok: 1\n${name}: x`;
      const res = await c.post(here, { ...form, headers: typed });
      assert.equal(res.status, 400);
      assert.match(errorBeside(res.text, 'edit-headers')!, new RegExp(`^${name} cannot be set`));
      assert.equal(textareaValue(res.text, 'edit-headers'), typed);
      assert.deepEqual((await w.call('GET', `/v1/endpoints/${id}`, { key })).body.headers, {
        'X-Keep': '1',
      });
    }
  });

  it('refuses the headers form without its CSRF token', async () => {
    const { c, id, key } = await withEndpoint();
    const res = await c.post(
      `/dashboard/endpoints/${id}`,
      { _action: 'update', title: 'Hook', url: 'https://hooks.example.com/in', headers: 'X-A: 1' },
      { csrf: null },
    );
    assert.equal(res.status, 403);
    assert.equal((await w.call('GET', `/v1/endpoints/${id}`, { key })).body.headers, null);
  });

  it('sets, refuses and removes the rate limit through the edit form', async () => {
    const { c, id, key } = await withEndpoint();
    const here = `/dashboard/endpoints/${id}`;
    const form = { _action: 'update', title: 'Hook', url: 'https://hooks.example.com/in' };
    assert.equal((await c.post(here, { ...form, rate_limit: ' 5 ' })).status, 303);
    assert.equal((await w.call('GET', `/v1/endpoints/${id}`, { key })).body.rate_limit, 5);
    const page = await c.get(here);
    assert.match(page.text, /<dt>Rate limit<\/dt><dd>5 deliveries a second<\/dd>/);
    assert.equal(inputValue(page.text, 'edit-rate_limit'), '5');
    const bad = await c.post(here, { ...form, rate_limit: 'fast' });
    assert.equal(bad.status, 400);
    assert.match(errorBeside(bad.text, 'edit-rate_limit')!, /whole number/);
    assert.equal(inputValue(bad.text, 'edit-rate_limit'), 'fast');
    assert.equal((await c.post(here, { ...form, rate_limit: '' })).status, 303);
    assert.equal((await w.call('GET', `/v1/endpoints/${id}`, { key })).body.rate_limit, null);
  });
});
