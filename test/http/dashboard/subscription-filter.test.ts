// The subscription page's filter through app.request(): a filter tested against the feed's recent entries (what it
// would send and why, nothing saved), saved, removed, refused with its bad rule named beside the field; a filter given
// on the create form; the count of entries filtered out shown among the facts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { insertHistory } from '../../../src/store/entry-history.ts';
import { countFiltered, getSubscription } from '../../../src/store/subscriptions.ts';
import { makeWorld, type World } from '../../support/world.ts';
import { assertLabelled, Client, errorBeside, idFrom, textareaValue } from './client.ts';

let w: World;
before(() => {
  w = makeWorld();
});
after(() => w.close());

const FILTER =
  '{"keep": [{"field": "title", "contains": "security"}], "block": [{"field": "author", "contains": "bot"}]}';

/** A signed-in client, and a subscription whose feed stores three entries. */
async function setup(filter = ''): Promise<{ c: Client; key: string; id: string; here: string }> {
  const { key, applicationId } = await w.key();
  const c = await new Client(w).signedIn(key);
  const endpoint = (
    await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'Receiver', url: 'http://127.0.0.1:9/hook' },
    })
  ).body.id as string;
  const made = await c.post('/dashboard/subscriptions', {
    _action: 'create',
    endpoint,
    url: `http://127.0.0.1:9/feed-${Math.random()}.xml`,
    metadata: '',
    filter,
  });
  assert.equal(made.status, 303, made.text);
  const id = idFrom(made.location, 'subscriptions');
  const sub = (await getSubscription(w.ctx.db, applicationId, id))!;
  const entry = (n: number, title: string, authors: string[]) => ({
    key: `${n}`.padStart(32, '0'),
    key_source: 'guid',
    entry: JSON.stringify({
      id: `${n}`.padStart(32, '0'),
      guid: `g${n}`,
      title,
      authors,
      url: null,
    }),
    content_hash: 'h',
    first_seen_at: `2026-01-0${n}T00:00:00.000Z`,
    via: 'poll' as const,
    fate: 'new' as const,
  });
  await insertHistory(w.ctx.db, sub.feed_id, [
    entry(1, 'Security advisory', ['Alice']),
    entry(2, 'Release notes', ['Bob']),
    entry(3, 'Security bump', ['dependabot']),
  ]);
  return { c, key, id, here: `/dashboard/subscriptions/${id}` };
}

describe('dashboard subscription filter', () => {
  it('tests a filter against the feed\u2019s recent entries, saying what it sends and why, and saves nothing', async () => {
    const { c, key, id, here } = await setup();
    const page = await c.post(here, { _action: 'filter-preview', filter: FILTER });
    assert.equal(page.status, 200, page.text);
    assertLabelled(page.text);
    assert.match(page.text, /this filter sends 1 and keeps back 2/);
    assert.match(
      page.text,
      /<td>Security advisory<\/td>[\s\S]*?<td>sent: a keep rule matched<\/td>/,
    );
    assert.match(
      page.text,
      /<td>Release notes<\/td>[\s\S]*?<td>not sent: no keep rule matched<\/td>/,
    );
    assert.match(
      page.text,
      /<td>Security bump<\/td>[\s\S]*?<td>blocked by rule filter\.block\[0\] \(author contains &quot;bot&quot;\)<\/td>/,
    );
    assert.equal(textareaValue(page.text, 'filter-filter'), FILTER, 'the filter typed stays');
    assert.equal((await w.call('GET', `/v1/subscriptions/${id}`, { key })).body.filter, null);
  });

  it('saves a filter, shows it and its count, and removes it when emptied', async () => {
    const { c, key, id, here } = await setup();
    const saved = await c.post(here, { _action: 'filter', filter: FILTER });
    assert.equal(saved.status, 303);
    assert.equal(saved.location, `${here}?notice=filter-saved#filter`);
    assert.deepEqual(
      (await w.call('GET', `/v1/subscriptions/${id}`, { key })).body.filter,
      JSON.parse(FILTER),
    );
    await countFiltered(w.ctx.db, id, 1234);
    const page = await c.get(here);
    assert.match(page.text, /<a href="#filter">1 keep, 1 block rules<\/a>/);
    assert.match(page.text, /<dt>Entries filtered out<\/dt><dd>1,234<\/dd>/);
    assert.deepEqual(JSON.parse(textareaValue(page.text, 'filter-filter')!), JSON.parse(FILTER));
    const removed = await c.post(here, { _action: 'filter', filter: '  ' });
    assert.equal(removed.status, 303);
    assert.equal((await w.call('GET', `/v1/subscriptions/${id}`, { key })).body.filter, null);
    assert.match((await c.get(here)).text, /none: every entry is sent/);
  });

  it('refuses a bad rule beside the field, naming it, on test and on save; and JSON that is not JSON', async () => {
    const { c, here } = await setup();
    const bad = '{"keep": [{"field": "title", "matches": "(a"}]}';
    for (const _action of ['filter-preview', 'filter']) {
      const page = await c.post(here, { _action, filter: bad });
      assert.equal(page.status, 400);
      assert.match(
        errorBeside(page.text, 'filter-filter')!,
        /^filter\.keep\[0\]\.matches: is not a valid RE2 pattern/,
      );
      assert.equal(textareaValue(page.text, 'filter-filter'), bad);
    }
    const notJson = await c.post(here, { _action: 'filter', filter: '{keep' });
    assert.equal(notJson.status, 400);
    assert.match(errorBeside(notJson.text, 'filter-filter')!, /^must be valid JSON/);
  });

  it('takes a filter on the create form, and refuses a bad one there', async () => {
    const { c, key, id } = await setup(FILTER);
    assert.deepEqual(
      (await w.call('GET', `/v1/subscriptions/${id}`, { key })).body.filter,
      JSON.parse(FILTER),
    );
    const endpoint = (await w.call('GET', '/v1/endpoints', { key })).body.data[0].id;
    const refused = await c.post('/dashboard/subscriptions', {
      _action: 'create',
      endpoint,
      url: 'http://127.0.0.1:9/other.xml',
      metadata: '',
      filter: '{"block": [{"field": "nope", "contains": "x"}]}',
    });
    assert.equal(refused.status, 400);
    assert.match(
      errorBeside(refused.text, 'new-filter')!,
      /^filter\.block\[0\]\.field: must be one of/,
    );
  });
});
