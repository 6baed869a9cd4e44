// A subscription's filter through the API: given on create, shown by get and list, replaced or removed by PATCH, and
// every bad rule refused with a 400 naming it, never a 500.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeWorld, type World } from '../../support/world.ts';

const FILTER = {
  keep: [
    { field: 'title', contains: 'security' },
    { field: 'category', matches: '^cve-' },
  ],
  block: [{ field: 'author', contains: 'bot' }],
};

describe('/v1/subscriptions filter', () => {
  let w: World;
  let key: string;
  let endpoint: string;
  let n = 0;
  before(async () => {
    w = makeWorld({ quotas: { api_requests_per_second: 0 } });
    ({ key } = await w.key('acme'));
    endpoint = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'Prod', url: 'https://hooks.example.com/' },
      })
    ).body.id;
  });
  after(() => w.close());

  const create = (body: Record<string, unknown>) =>
    w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint, url: `https://blog.example.com/feed-${++n}.xml`, ...body },
    });

  it('stores the filter given on create and shows it on create, get and list, with no entry filtered yet', async () => {
    const res = await create({ filter: FILTER });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body.filter, FILTER);
    assert.equal(res.body.entries_filtered, 0);
    const got = await w.call('GET', `/v1/subscriptions/${res.body.id}`, { key });
    assert.deepEqual(got.body.filter, FILTER);
    const list = await w.call('GET', '/v1/subscriptions', { key });
    assert.deepEqual(
      list.body.data.find((s: { id: string }) => s.id === res.body.id).filter,
      FILTER,
    );
  });

  it('shows null for a subscription without a filter, and for one whose filter has no rule', async () => {
    assert.equal((await create({})).body.filter, null);
    assert.equal((await create({ filter: null })).body.filter, null);
    assert.equal((await create({ filter: { keep: [], block: [] } })).body.filter, null);
  });

  it('fills in a missing list: a filter of keep rules alone has no block rule', async () => {
    const res = await create({ filter: { keep: [{ field: 'url', contains: '/jobs/' }] } });
    assert.deepEqual(res.body.filter, { keep: [{ field: 'url', contains: '/jobs/' }], block: [] });
  });

  it('replaces the filter on PATCH, keeps it when PATCH does not name it, and removes it with null', async () => {
    const id = (await create({ filter: FILTER })).body.id;
    const block = { keep: [], block: [{ field: 'title', matches: 'sponsored' }] };
    const replaced = await w.call('PATCH', `/v1/subscriptions/${id}`, {
      key,
      body: { filter: block },
    });
    assert.equal(replaced.status, 200);
    assert.deepEqual(replaced.body.filter, block);
    const kept = await w.call('PATCH', `/v1/subscriptions/${id}`, { key, body: { updates: true } });
    assert.deepEqual(kept.body.filter, block);
    const removed = await w.call('PATCH', `/v1/subscriptions/${id}`, {
      key,
      body: { filter: null },
    });
    assert.equal(removed.body.filter, null);
  });

  const refusals: [string, unknown, string, RegExp][] = [
    [
      'a pattern RE2 cannot compile',
      {
        keep: [
          { field: 'title', contains: 'a' },
          { field: 'title', matches: '(a' },
        ],
      },
      'filter.keep[1].matches',
      /^is not a valid RE2 pattern: /,
    ],
    [
      'a backreference (not RE2)',
      { block: [{ field: 'text', matches: '(a)\\1' }] },
      'filter.block[0].matches',
      /^is not a valid RE2 pattern: /,
    ],
    [
      'a pattern past the program bound',
      { keep: [{ field: 'text', matches: '\\w{1000}' }] },
      'filter.keep[0].matches',
      /^is too complex: it compiles to \d+ RE2 instructions, at most 1000$/,
    ],
    [
      'a pattern of more than 256 characters',
      { keep: [{ field: 'title', matches: 'a'.repeat(257) }] },
      'filter.keep[0].matches',
      /^must be a string of 1 to 256 characters$/,
    ],
    [
      'an empty phrase',
      { block: [{ field: 'title', contains: '' }] },
      'filter.block[0].contains',
      /^must be a string of 1 to 256 characters$/,
    ],
    [
      'an unknown field',
      { keep: [{ field: 'body', contains: 'x' }] },
      'filter.keep[0].field',
      /^must be one of title, text, author, category, url, enclosure_type$/,
    ],
    [
      'a rule with both tests',
      { keep: [{ field: 'title', contains: 'x', matches: 'y' }] },
      'filter.keep[0]',
      /^must have either "contains" or "matches"$/,
    ],
    [
      'a rule with neither test',
      { keep: [{ field: 'title' }] },
      'filter.keep[0]',
      /^must have either "contains" or "matches"$/,
    ],
    [
      'a rule with a member of its own',
      { keep: [{ field: 'title', contains: 'x', regex: 'y' }] },
      'filter.keep[0].regex',
      /^is not a known field$/,
    ],
    [
      '21 rules in one list',
      { block: Array.from({ length: 21 }, () => ({ field: 'title', contains: 'x' })) },
      'filter.block',
      /^must be a list of at most 20 rules$/,
    ],
    ['a list that is not one', { keep: 'security' }, 'filter.keep', /^must be a list/],
    ['an array for the filter', [], 'filter', /^must be a JSON object/],
    ['a member of its own', { drop: [] }, 'filter.drop', /^is not a known field$/],
  ];
  for (const [name, filter, path, message] of refusals)
    it(`refuses ${name} with a 400 naming ${path}, on create and on PATCH`, async () => {
      const created = await create({ filter });
      assert.equal(created.status, 400, JSON.stringify(created.body));
      assert.equal(created.headers.get('content-type'), 'application/problem+json');
      const issue = created.body.errors.find((e: { path: string }) => e.path === path);
      assert.ok(issue, JSON.stringify(created.body.errors));
      assert.match(issue.message, message);
      const id = (await create({})).body.id;
      const patched = await w.call('PATCH', `/v1/subscriptions/${id}`, { key, body: { filter } });
      assert.equal(patched.status, 400);
      assert.ok(patched.body.errors.some((e: { path: string }) => e.path === path));
    });
});
