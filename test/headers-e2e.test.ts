// An endpoint's extra headers end to end through the real `feedsub serve`: a header named __proto__, as JSON.parse
// reads it from the request body, is refused with a 400 naming it (never dropped); the headers that pass reach the
// receiver with the test event.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startServed, type Served } from './support/served.ts';

describe('end to end: extra headers through feedsub serve', () => {
  let w: Served;

  before(async () => {
    w = await startServed('headers', { FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true' });
  });
  after(async () => {
    await w?.close();
  });

  it('refuses a header named __proto__ with a 400 naming it, and sends the headers that pass', async () => {
    const url = `${w.receiver.url}/hook`;
    const refused = await w.call(
      'POST',
      '/v1/endpoints',
      `{"title": "Hook", "url": ${JSON.stringify(url)}, "headers": {"X-Tenant": "acme", "__proto__": "x"}}`,
    );
    assert.equal(refused.status, 400);
    assert.deepEqual(
      refused.body.errors.map((e: { path: string }) => e.path),
      ['headers.__proto__'],
    );
    const listed = await w.call('GET', '/v1/endpoints');
    assert.deepEqual(listed.body.data, [], 'nothing created');

    const made = await w.call('POST', '/v1/endpoints', {
      title: 'Hook',
      url,
      headers: { 'X-Tenant': 'acme' },
    });
    assert.equal(made.status, 201);
    const test = await w.call('POST', `/v1/endpoints/${made.body.id}/test`);
    assert.equal(test.status, 200, JSON.stringify(test.body));
    const [delivery] = await w.receiver.waitFor(1, 10_000);
    assert.equal(delivery!.headers['x-tenant'], 'acme');
  });
});
