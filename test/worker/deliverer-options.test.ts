// The endpoint's delivery options at the receiver (issue 15): its extra headers on every attempt and on the test event.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sendTestEvent } from '../../src/actions/events.ts';
import { verifySignature } from '../../src/webhook/sign.ts';
import { deliveryWorld } from './deliverer-fixtures.ts';

describe('deliverer endpoint headers', () => {
  it('sends the endpoint headers on every attempt, as they stand when it starts, beside intact signing headers', async () => {
    const d = await deliveryWorld({ delivery: { retry_schedule_seconds: [5] } });
    try {
      const ep = await d.endpoint();
      await d.w.call('PATCH', `/v1/endpoints/${ep.id}`, {
        key: d.key,
        body: { headers: { 'X-Tenant': 'acme 42', Authorization: 'Bearer t0k3n' } },
      });
      const [id] = d.queue(await d.subscription(ep.id), 1);
      d.receiver.respond([500, 200]);
      await d.tick();
      await d.w.call('PATCH', `/v1/endpoints/${ep.id}`, {
        key: d.key,
        body: { headers: { 'X-Tenant': 'acme 43' } },
      });
      d.toNextDue();
      await d.tick();
      const [first, retry] = d.receiver.deliveries;
      assert.equal(d.event(id!).status, 'delivered');
      assert.equal(first!.headers['x-tenant'], 'acme 42');
      assert.equal(first!.headers.authorization, 'Bearer t0k3n');
      assert.equal(
        retry!.headers['x-tenant'],
        'acme 43',
        'the retry carries the headers as changed',
      );
      assert.equal(retry!.headers.authorization, undefined);
      for (const x of [first!, retry!]) {
        assert.equal(x.headers['content-type'], 'application/json');
        assert.equal(x.headers['user-agent'], 'feedsub-test');
        assert.ok(verifySignature(ep.secret, x.id, Number(x.timestamp), x.body, x.signature));
      }
    } finally {
      await d.close();
    }
  });

  it('sends the endpoint headers with the test event', async () => {
    const d = await deliveryWorld();
    try {
      const ep = await d.endpoint();
      await d.w.call('PATCH', `/v1/endpoints/${ep.id}`, {
        key: d.key,
        body: { headers: { 'X-Api-Key': 'k-1' } },
      });
      const sent = await sendTestEvent(d.w.ctx, d.applicationId, ep.id, { agent: d.agent });
      assert.equal(sent.delivered, true);
      assert.equal(d.receiver.deliveries[0]!.headers['x-api-key'], 'k-1');
    } finally {
      await d.close();
    }
  });
});
