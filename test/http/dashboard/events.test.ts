// The events page through app.request(): filter by status, attempts with response snippets, resend, isolation.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startReceiver, type Receiver } from '../../support/servers.ts';
import { makeWorld, type World } from '../../support/world.ts';
import { assertLabelled, Client } from './client.ts';

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

/** A signed-in client with an endpoint and one test event the receiver answered with `status` and `body`. */
async function withTestEvent(
  status: number,
  body: string,
): Promise<{ c: Client; key: string; endpoint: string; event: string }> {
  const { key } = await w.key();
  const c = await new Client(w).signedIn(key);
  const endpoint = (
    await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'R', url: `${receiver.url}/hook` },
    })
  ).body.id as string;
  receiver.respond(() => ({ status, body }));
  const res = await c.post(`/dashboard/endpoints/${endpoint}`, { _action: 'test' });
  const event = /event=([0-9a-f]{24})/.exec(res.location ?? '')![1]!;
  return { c, key, endpoint, event };
}

describe('dashboard events', () => {
  it('says where events come from when there are none', async () => {
    const c = await new Client(w).signedIn((await w.key()).key);
    const page = await c.get('/dashboard/events');
    assert.equal(page.status, 200);
    assert.match(
      page.text,
      /No events yet\. Events appear when a subscribed feed gets new entries or changes health/,
    );
    assert.match((await c.get('/dashboard/events?kind=tests')).text, /No test pings yet/);
    assertLabelled(page.text);
  });

  it("lists events with their attempts and the receiver's response snippet, escaped", async () => {
    const { c, event } = await withTestEvent(500, '<b>boom</b>');
    const page = await c.get('/dashboard/events?kind=tests');
    assert.match(page.text, new RegExp(`id="event-${event}"`));
    assert.match(page.text, /<span class="badge dead">dead<\/span>/);
    assert.match(page.text, /<summary>Attempts \(1\)<\/summary>/);
    assert.match(page.text, /HTTP 500/);
    assert.match(page.text, /<pre>&lt;b&gt;boom&lt;\/b&gt;<\/pre>/);
  });

  it('filters by status, keeping the choice selected', async () => {
    const { c, event } = await withTestEvent(500, 'no');
    const dead = await c.get('/dashboard/events?status=dead&kind=tests');
    assert.match(dead.text, new RegExp(`id="event-${event}"`));
    assert.match(dead.text, /<option value="dead" selected="">dead<\/option>/);
    assert.match(
      dead.text,
      /<input type="hidden" name="kind" value="tests"\/>/,
      'the filter keeps the tab',
    );
    const delivered = await c.get('/dashboard/events?status=delivered&kind=tests');
    assert.doesNotMatch(delivered.text, new RegExp(`id="event-${event}"`));
    assert.match(delivered.text, /No test pings with status delivered yet/);
    assert.equal(
      (await c.get('/dashboard/events?status=bogus')).status,
      200,
      'an unknown status shows every event',
    );
  });

  it('shows one event with its payload and open attempts', async () => {
    const { c, event } = await withTestEvent(200, 'ok');
    const page = await c.get(`/dashboard/events?event=${event}`);
    assert.match(page.text, /<details open="">/);
    assert.match(page.text, /Payload \(the body of every attempt, indented for reading\)/);
    assert.match(
      page.text,
      /<pre>\{\n  &quot;type&quot;: &quot;endpoint.test&quot;,\n  &quot;schema_version&quot;: 2,/,
    );
    assert.match(
      page.text,
      /As sent, byte for byte<\/summary><pre>\{&quot;type&quot;:&quot;endpoint.test&quot;,/,
    );
  });

  it('resends an event (303 back to the same filter) and explains a resend of an event not tried yet', async () => {
    const { c, key, event } = await withTestEvent(503, 'down');
    const res = await c.post('/dashboard/events', { _action: 'resend', id: event, status: 'dead' });
    assert.equal(res.status, 303);
    assert.equal(res.location, '/dashboard/events?status=dead&notice=event-resent');
    assert.equal((await w.call('GET', `/v1/events/${event}`, { key })).body.status, 'pending');
    const again = await c.post('/dashboard/events', { _action: 'resend', id: event });
    assert.equal(again.status, 409);
    assert.match(again.text, /already queued and has not been tried yet/);
  });

  it("never shows or resends another application's events", async () => {
    const { event } = await withTestEvent(200, 'ok');
    const stranger = await new Client(w).signedIn((await w.key()).key);
    assert.doesNotMatch(
      (await stranger.get('/dashboard/events?kind=tests')).text,
      new RegExp(event),
    );
    assert.equal((await stranger.get(`/dashboard/events?event=${event}`)).status, 404);
    assert.equal(
      (await stranger.post('/dashboard/events', { _action: 'resend', id: event })).status,
      404,
    );
  });

  it('rejects a resend without the CSRF token', async () => {
    const { c, key, event } = await withTestEvent(500, 'x');
    assert.equal(
      (await c.post('/dashboard/events', { _action: 'resend', id: event }, { csrf: 'nope' }))
        .status,
      403,
    );
    assert.equal((await w.call('GET', `/v1/events/${event}`, { key })).body.status, 'dead');
  });
});
