// /v1/events and the endpoint delivery routes (test, recover, rotate-secret) through app.request(), with a real receiver.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { verifySignature } from '../../../src/webhook/sign.ts';
import { within } from '../../support/deadline.ts';
import { deliveryWorld, type DeliveryWorld } from '../../worker/deliver/fixtures.ts';

describe('/v1/events', () => {
  let d: DeliveryWorld;
  let ep: { id: string; secret: string };
  let subA: string;
  let subB: string;
  let idsA: string[];
  let idsB: string[];
  before(async () => {
    d = await deliveryWorld({ delivery: { retry_schedule_seconds: [5] } });
    ep = await d.endpoint();
    subA = await d.subscription(ep.id);
    subB = await d.subscription(ep.id);
    idsA = await d.queue(subA, 3);
    d.w.clock.advance(1000);
    idsB = await d.queue(subB, 2);
    d.receiver.respond((delivery) => ({
      status: delivery.id === idsB[0] ? 500 : 200,
      body: 'thanks',
    }));
    for (let i = 0; i < 5; i++) await d.tick(); // A: three delivered; B: first fails (retry in 5 s), second waits
  });
  after(() => d.close());

  const get = (path: string) => d.w.call('GET', path, { key: d.key });

  it("lists the application's events newest first in cursor pages", async () => {
    const first = await get('/v1/events?limit=3');
    assert.equal(first.status, 200);
    assert.equal(first.body.data.length, 3);
    assert.ok(first.body.next);
    const second = await get(`/v1/events?limit=3&after=${first.body.next}`);
    assert.equal(second.body.next, null);
    const all = [...first.body.data, ...second.body.data].map((e: { id: string }) => e.id);
    assert.deepEqual(new Set(all), new Set([...idsA, ...idsB]));
    assert.deepEqual(all, [...all].sort().reverse());
    assert.deepEqual(Object.keys(first.body.data[0]).sort(), [
      'attempt_count',
      'created_at',
      'delivered_at',
      'endpoint',
      'id',
      'last_error',
      'last_status_code',
      'next_attempt_at',
      'sequence',
      'status',
      'subscription',
      'type',
      'updated_at',
    ]);
  });

  const filters: [string, (t: { subA: string; subB: string; ep: string }) => string, number][] = [
    ['subscription', (t) => `subscription=${t.subA}`, 3],
    ['endpoint', (t) => `endpoint=${t.ep}`, 5],
    ['status delivered', () => 'status=delivered', 3],
    ['status failed', () => 'status=failed', 1],
    ['status pending', () => 'status=pending', 1],
    ['status dead', () => 'status=dead', 0],
    ['subscription and status', (t) => `subscription=${t.subB}&status=pending`, 1],
  ];
  for (const [name, query, count] of filters) {
    it(`filters by ${name}`, async () => {
      const res = await get(`/v1/events?${query({ subA, subB, ep: ep.id })}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.data.length, count);
    });
  }

  it('answers 400 naming an unknown status or a malformed id filter', async () => {
    const bad = await get('/v1/events?status=lost');
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.errors, [
      { path: 'status', message: 'must be pending, delivered, failed or dead' },
    ]);
    assert.equal((await get('/v1/events?endpoint=nope')).status, 400);
  });

  it('shows one event with its exact payload and every attempt', async () => {
    const res = await get(`/v1/events/${idsB[0]}`);
    assert.equal(res.status, 200);
    const body = (await d.event(idsB[0]!)).body;
    assert.ok(
      res.text.includes(`"payload":${body}`),
      'the payload is the stored body, byte for byte',
    );
    assert.equal(res.body.payload.data.sequence, 1);
    assert.equal(res.body.status, 'failed');
    assert.equal(res.body.attempts.length, 1);
    const [attempt] = res.body.attempts;
    assert.deepEqual(Object.keys(attempt).sort(), [
      'duration_ms',
      'error',
      'response_body',
      'started_at',
      'status_code',
    ]);
    assert.deepEqual(
      [attempt.status_code, attempt.error, attempt.response_body],
      [500, 'webhook: receiver answered 500', 'thanks'],
    );
    assert.equal(
      res.body.next_attempt_at,
      new Date(Date.parse(attempt.started_at) + 5000).toISOString(),
    );
  });

  it('resends a delivered event with the same webhook-id and byte-identical body', async () => {
    const before = d.receiver.deliveries.filter((x) => x.id === idsA[0]);
    const res = await d.w.call('POST', `/v1/events/${idsA[0]}/resend`, { key: d.key });
    assert.equal(res.status, 200);
    assert.deepEqual([res.body.status, res.body.attempt_count], ['pending', 0]);
    await d.tick();
    const again = d.receiver.deliveries.filter((x) => x.id === idsA[0]);
    assert.equal(again.length, before.length + 1);
    assert.equal(again.at(-1)!.body, before[0]!.body);
    assert.equal((await d.event(idsA[0]!)).status, 'delivered');
    assert.equal((await get(`/v1/events/${idsA[0]}`)).body.attempts.length, 2);
  });

  it('answers 409 to resending an event that was never tried', async () => {
    const res = await d.w.call('POST', `/v1/events/${idsB[1]}/resend`, { key: d.key });
    assert.equal(res.status, 409);
    assert.match(res.body.detail, /not been tried yet/);
  });
});

describe('/v1/endpoints/:id/test, /recover and /rotate-secret', () => {
  let d: DeliveryWorld;
  before(async () => {
    d = await deliveryWorld({ delivery: { retry_schedule_seconds: [5] } });
  });
  after(() => d.close());

  it('sends a signed endpoint.test event now and returns the attempt', async () => {
    const ep = await d.endpoint();
    d.receiver.respond([202]);
    const res = await d.w.call('POST', `/v1/endpoints/${ep.id}/test`, { key: d.key });
    assert.equal(res.status, 200);
    assert.equal(res.body.delivered, true);
    assert.equal(res.body.attempt.status_code, 202);
    const got = d.receiver.deliveries.at(-1)!;
    assert.equal(got.id, res.body.event);
    assert.equal(JSON.parse(got.body).type, 'endpoint.test');
    assert.ok(verifySignature(ep.secret, got.id, Number(got.timestamp), got.body, got.signature));
    const event = (await d.w.call('GET', `/v1/events/${res.body.event}`, { key: d.key })).body;
    assert.deepEqual(
      [event.type, event.status, event.subscription, event.sequence, event.attempts.length],
      ['endpoint.test', 'delivered', null, null, 1],
    );
  });

  it('reports a failed test without retrying it', async () => {
    const ep = await d.endpoint();
    d.receiver.respond([503]);
    const res = await d.w.call('POST', `/v1/endpoints/${ep.id}/test`, { key: d.key });
    assert.deepEqual(
      [res.status, res.body.delivered, res.body.attempt.status_code],
      [200, false, 503],
    );
    assert.equal((await d.event(res.body.event)).status, 'dead');
    d.w.clock.advance(60_000);
    assert.equal((await d.tick()).summary.attempted, 0);
  });

  it('recovers the dead and failed events created since a time, and they are delivered again', async () => {
    const ep = await d.endpoint();
    const sub = await d.subscription(ep.id);
    const [old] = await d.queue(sub, 1);
    d.receiver.respond(() => ({ status: 500 }));
    await d.tick();
    await d.toNextDue();
    await d.tick();
    assert.equal((await d.event(old!)).status, 'dead');
    d.w.clock.advance(3600_000);
    const since = d.w.clock.now().toISOString();
    const recent = await d.queue(sub, 2);
    const statuses = async (ids: string[]) => {
      const found: string[] = [];
      for (const id of ids) found.push((await d.event(id)).status);
      return found;
    };
    await d.tick();
    await d.toNextDue();
    await d.tick();
    await d.tick();
    await d.toNextDue();
    await d.tick();
    assert.deepEqual(await statuses(recent), ['dead', 'dead']);
    d.receiver.respond(() => ({ status: 200 }));
    const res = await d.w.call('POST', `/v1/endpoints/${ep.id}/recover`, {
      key: d.key,
      body: { since },
    });
    assert.deepEqual([res.status, res.body], [200, { count: 2 }]);
    assert.ok(d.w.nudges.deliverer > 0);
    const sent = d.receiver.deliveries.length;
    await d.tick();
    await d.tick();
    assert.deepEqual(await statuses(recent), ['delivered', 'delivered']);
    assert.deepEqual(
      d.receiver.deliveries.slice(sent).map((x) => x.id),
      recent,
      'in sequence order',
    );
    assert.equal((await d.event(old!)).status, 'dead', 'events before `since` stay dead');
  });

  it('answers 400 to recover without a valid since', async () => {
    const ep = await d.endpoint();
    for (const body of [{}, { since: 'yesterday' }, { since: '2026-01-01T00:00:00Z', extra: 1 }]) {
      const res = await d.w.call('POST', `/v1/endpoints/${ep.id}/recover`, { key: d.key, body });
      assert.equal(res.status, 400, JSON.stringify(body));
    }
  });

  it('rotates the secret, keeping the previous one for the grace period', async () => {
    const ep = await d.endpoint();
    const res = await d.w.call('POST', `/v1/endpoints/${ep.id}/rotate-secret`, { key: d.key });
    assert.equal(res.status, 200);
    assert.match(res.body.secret, /^whsec_/);
    assert.notEqual(res.body.secret, ep.secret);
    assert.equal(res.body.previous_secret, ep.secret);
    assert.equal(
      res.body.previous_secret_expires_at,
      new Date(d.w.clock.now().getTime() + 86_400_000).toISOString(),
    );
    assert.deepEqual(
      (await d.w.call('GET', `/v1/endpoints/${ep.id}/secret`, { key: d.key })).body,
      res.body,
    );
  });
});

describe('events isolation between applications', () => {
  let d: DeliveryWorld;
  let theirs: { event: string; endpoint: string; subscription: string };
  let mine: string;
  before(async () => {
    d = await deliveryWorld();
    const ep = await d.endpoint();
    const sub = await d.subscription(ep.id);
    const [event] = await d.queue(sub, 1);
    await d.tick();
    theirs = { event: event!, endpoint: ep.id, subscription: sub };
    mine = (await d.w.key('intruder')).key;
  });
  after(() => d.close());

  it("never lists another application's events, whatever the filters", async () => {
    for (const q of [
      '',
      `?endpoint=${theirs.endpoint}`,
      `?subscription=${theirs.subscription}`,
      '?status=delivered',
    ]) {
      const res = await d.w.call('GET', `/v1/events${q}`, { key: mine });
      assert.deepEqual([res.status, res.body.data], [200, []], q);
    }
  });

  const routes: [string, (t: typeof theirs) => string, unknown?][] = [
    ['GET', (t) => `/v1/events/${t.event}`],
    ['POST', (t) => `/v1/events/${t.event}/resend`],
    ['POST', (t) => `/v1/endpoints/${t.endpoint}/test`],
    ['POST', (t) => `/v1/endpoints/${t.endpoint}/recover`, { since: '2020-01-01T00:00:00Z' }],
    ['POST', (t) => `/v1/endpoints/${t.endpoint}/rotate-secret`],
  ];
  for (const [method, path, body] of routes) {
    it(`answers 404 to ${method} ${path({ event: ':id', endpoint: ':id', subscription: ':id' })} for another application's id, as for an unknown one`, async () => {
      const sent = d.receiver.deliveries.length;
      const res = await d.w.call(method, path(theirs), { key: mine, ...(body ? { body } : {}) });
      const unknown = await d.w.call(
        method,
        path({ event: 'f'.repeat(24), endpoint: 'f'.repeat(24), subscription: 'f'.repeat(24) }),
        { key: mine, ...(body ? { body } : {}) },
      );
      assert.deepEqual([res.status, unknown.status], [404, 404]);
      assert.equal(res.body.detail, unknown.body.detail);
      assert.equal(d.receiver.deliveries.length, sent, 'nothing was sent');
    });
  }

  it("left the owner's event and secret untouched", async () => {
    const got = await d.w.call('GET', `/v1/events/${theirs.event}`, { key: d.key });
    assert.deepEqual([got.body.status, got.body.attempts.length], ['delivered', 1]);
    assert.equal(
      (await d.w.call('GET', `/v1/endpoints/${theirs.endpoint}/secret`, { key: d.key })).body
        .previous_secret,
      null,
    );
  });
});

describe('/v1/endpoints/:id/test against a receiver that drips its answer', () => {
  it('answers within delivery.timeout_seconds, with the status that arrived and why the attempt ended', async () => {
    const d = await deliveryWorld({ delivery: { timeout_seconds: 1 } });
    // The status line and headers at once, then one byte every 200 ms for as long as the connection stays open.
    const drip = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('.'), 200);
      res.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((resolve) => drip.listen(0, '127.0.0.1', resolve));
    try {
      const ep = await d.endpoint(`http://127.0.0.1:${(drip.address() as AddressInfo).port}/hook`);
      const res = await within(
        d.w.call('POST', `/v1/endpoints/${ep.id}/test`, { key: d.key }),
        4000,
        'the test answered',
      );
      assert.equal(res.status, 200);
      assert.equal(res.body.attempt.status_code, 200);
      assert.match(res.body.attempt.error, /did not end within 1000 ms/);
    } finally {
      drip.closeAllConnections();
      await new Promise<void>((resolve) => drip.close(() => resolve()));
      await d.close();
    }
  });
});
