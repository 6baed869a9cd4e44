// /v1/endpoints delivery options: extra headers and the rate limit, as stored, shown and refused.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeWorld, type World } from '../../support/world.ts';

const hook = { title: 'Hook', url: 'https://hooks.example.com/in' };

describe('/v1/endpoints headers', () => {
  let w: World;
  let key: string;
  before(async () => {
    w = makeWorld();
    key = (await w.key('acme')).key;
  });
  after(() => w.close());

  it('has no headers (null) by default, keeps them as given, shows them in full, and clears them with null', async () => {
    const plain = await w.call('POST', '/v1/endpoints', { key, body: hook });
    assert.equal(plain.body.headers, null);
    const made = await w.call('POST', '/v1/endpoints', {
      key,
      body: { ...hook, headers: { 'X-Tenant': 'acme 42', Authorization: 'Bearer t0k3n' } },
    });
    assert.equal(made.status, 201);
    assert.deepEqual(made.body.headers, { 'X-Tenant': 'acme 42', Authorization: 'Bearer t0k3n' });
    const read = await w.call('GET', `/v1/endpoints/${made.body.id}`, { key });
    assert.deepEqual(read.body.headers, made.body.headers);
    const renamed = await w.call('PATCH', `/v1/endpoints/${made.body.id}`, {
      key,
      body: { title: 'Renamed' },
    });
    assert.deepEqual(renamed.body.headers, made.body.headers, 'left as it was');
    const replaced = await w.call('PATCH', `/v1/endpoints/${made.body.id}`, {
      key,
      body: { headers: { 'x-only': '1' } },
    });
    assert.deepEqual(replaced.body.headers, { 'x-only': '1' }, 'replaced whole, not merged');
    const cleared = await w.call('PATCH', `/v1/endpoints/${made.body.id}`, {
      key,
      body: { headers: null },
    });
    assert.equal(cleared.body.headers, null);
    const emptied = await w.call('PATCH', `/v1/endpoints/${made.body.id}`, {
      key,
      body: { headers: {} },
    });
    assert.equal(emptied.body.headers, null, 'an empty object is no headers');
  });

  const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v']));
  const big = { 'x-a': 'a'.repeat(2045), 'x-b': 'b'.repeat(2045) };
  const invalid: [string, unknown, string[]][] = [
    ['a name that is not a token', { 'X Tenant': '1' }, ['headers.X Tenant']],
    ['a name with a colon', { 'x-a:': '1' }, ['headers.x-a:']],
    ['a value with a line break', { 'x-a': 'one\r\nx-b: two' }, ['headers.x-a']],
    ['a value with a non-ASCII character', { 'x-a': 'café' }, ['headers.x-a']],
    ['an empty value', { 'x-a': '' }, ['headers.x-a']],
    ['a value with a trailing space', { 'x-a': 'v ' }, ['headers.x-a']],
    ['a value that is not a string', { 'x-a': 5 }, ['headers.x-a']],
    [
      'a signing header, in any case',
      { 'Webhook-Signature': 'v1,forged' },
      ['headers.Webhook-Signature'],
    ],
    ['another webhook-* name', { 'webhook-version': '2' }, ['headers.webhook-version']],
    [
      'transport headers',
      {
        Host: 'evil.example',
        'Content-Length': '1',
        'transfer-encoding': 'chunked',
        connection: 'close',
        'User-Agent': 'me',
        'content-type': 'text/plain',
      },
      [
        'headers.Host',
        'headers.Content-Length',
        'headers.transfer-encoding',
        'headers.connection',
        'headers.User-Agent',
        'headers.content-type',
      ],
    ],
    ['a name given twice in two cases', { 'X-A': '1', 'x-a': '2' }, ['headers.x-a']],
    ['21 headers', many, ['headers']],
    ['over 4 KiB in all', big, ['headers']],
    ['a list', [['x-a', '1']], ['headers']],
    ['a string', 'x-a: 1', ['headers']],
  ];
  for (const [name, headers, paths] of invalid) {
    it(`answers 400 naming each bad header for ${name}`, async () => {
      const res = await w.call('POST', '/v1/endpoints', { key, body: { ...hook, headers } });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(
        res.body.errors.map((e: { path: string }) => e.path).sort(),
        [...paths].sort(),
      );
      const made = (await w.call('POST', '/v1/endpoints', { key, body: hook })).body;
      const patched = await w.call('PATCH', `/v1/endpoints/${made.id}`, { key, body: { headers } });
      assert.equal(patched.status, 400, 'PATCH refuses it too');
    });
  }

  // Each body is JSON text as a client sends it: JSON.parse makes `__proto__` an own name of the headers object (in a
  // JavaScript object literal it would set the prototype instead, and never be sent).
  const reserved = [
    '__proto__',
    'constructor',
    'prototype',
    '__PROTO__',
    'Constructor',
    'ProtoType',
  ];
  for (const name of reserved) {
    it(`answers 400 naming headers.${name} on create and on update, and stores nothing`, async () => {
      const headers = `{"X-Ok": "1", ${JSON.stringify(name)}: "x"}`;
      const res = await w.call('POST', '/v1/endpoints', {
        key,
        body: `{"title": "Hook", "url": "https://hooks.example.com/in", "headers": ${headers}}`,
      });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(res.body.errors, [
        {
          path: `headers.${name}`,
          message:
            'cannot be set: __proto__, constructor and prototype are names JavaScript objects reserve (in any case)',
        },
      ]);
      const made = (
        await w.call('POST', '/v1/endpoints', {
          key,
          body: { ...hook, headers: { 'X-Keep': '1' } },
        })
      ).body;
      const patched = await w.call('PATCH', `/v1/endpoints/${made.id}`, {
        key,
        body: `{"headers": ${headers}}`,
      });
      assert.equal(patched.status, 400);
      assert.deepEqual(
        patched.body.errors.map((e: { path: string }) => e.path),
        [`headers.${name}`],
      );
      const read = await w.call('GET', `/v1/endpoints/${made.id}`, { key });
      assert.deepEqual(read.body.headers, { 'X-Keep': '1' }, 'left as it was');
    });
  }

  it('lists a reserved object name beside the other bad headers, each at its own path', async () => {
    const res = await w.call('POST', '/v1/endpoints', {
      key,
      body: `{"title": "Hook", "url": "https://hooks.example.com/in",
              "headers": {"constructor": "x", "X A": "1", "x-b": "line\\nbreak", "__proto__": 5}}`,
    });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body.errors.map((e: { path: string }) => e.path).sort(), [
      'headers.X A',
      'headers.__proto__',
      'headers.constructor',
      'headers.x-b',
    ]);
  });

  it('accepts names that only contain those words', async () => {
    const headers = { 'X-Constructor': 'a', 'Prototype-Id': 'b', 'X-Proto': 'c' };
    const res = await w.call('POST', '/v1/endpoints', { key, body: { ...hook, headers } });
    assert.equal(res.status, 201);
    assert.deepEqual(res.body.headers, headers);
  });

  it('accepts exactly 20 headers and 4 KiB in all', async () => {
    const twenty = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`x-h${i}`, 'v']));
    assert.equal(
      (await w.call('POST', '/v1/endpoints', { key, body: { ...hook, headers: twenty } })).status,
      201,
    );
    const full = { 'x-a': 'a'.repeat(4096 - 'x-a'.length - 4) };
    assert.equal(
      (await w.call('POST', '/v1/endpoints', { key, body: { ...hook, headers: full } })).status,
      201,
    );
  });
});

describe('/v1/endpoints rate_limit', () => {
  let w: World;
  let key: string;
  before(async () => {
    w = makeWorld();
    key = (await w.key('acme')).key;
  });
  after(() => w.close());

  it('has no limit (null) by default, keeps one when given, and removes it with null, waking the deliverer', async () => {
    assert.equal(
      (await w.call('POST', '/v1/endpoints', { key, body: hook })).body.rate_limit,
      null,
    );
    const made = await w.call('POST', '/v1/endpoints', { key, body: { ...hook, rate_limit: 5 } });
    assert.equal(made.status, 201);
    assert.equal(made.body.rate_limit, 5);
    const renamed = await w.call('PATCH', `/v1/endpoints/${made.body.id}`, {
      key,
      body: { title: 'Renamed' },
    });
    assert.equal(renamed.body.rate_limit, 5, 'left as it was');
    const before = w.nudges.deliverer;
    const cleared = await w.call('PATCH', `/v1/endpoints/${made.body.id}`, {
      key,
      body: { rate_limit: null },
    });
    assert.equal(cleared.body.rate_limit, null);
    assert.equal(w.nudges.deliverer, before + 1, 'waiting events may go now');
  });

  for (const bad of [0, -1, 1.5, 1001, '5', true]) {
    it(`answers 400 naming rate_limit for ${JSON.stringify(bad)}`, async () => {
      const res = await w.call('POST', '/v1/endpoints', {
        key,
        body: { ...hook, rate_limit: bad },
      });
      assert.equal(res.status, 400);
      assert.deepEqual(
        res.body.errors.map((e: { path: string }) => e.path),
        ['rate_limit'],
      );
    });
  }
});
