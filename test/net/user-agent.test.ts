// Every request feedsub makes names itself with poll.user_agent when set: feed fetches, deliveries and test events.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { defaultConfig, withConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/log.ts';
import { userAgent } from '../../src/net/user-agent.ts';
import { deliverTick } from '../../src/worker/deliver/deliverer.ts';
import { createWorkers, type Workers } from '../../src/worker/index.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import { rss, startOrigin, startReceiver, type Origin, type Receiver } from '../support/servers.ts';
import { makeWorld, type World } from '../support/world.ts';

const CUSTOM = 'ExampleCorp-FeedBot/2.1 (+https://example.com/bot)';

describe('the User-Agent', () => {
  it('is feedsub/<version> with a project link by default, and poll.user_agent when set', () => {
    assert.match(
      userAgent(defaultConfig()),
      /^feedsub\/\d+\.\d+\.\d+\S* \(\+https:\/\/github\.com\/feedsub\/feedsub\)$/,
    );
    assert.equal(userAgent(withConfig(defaultConfig(), { poll: { user_agent: CUSTOM } })), CUSTOM);
  });

  describe('with poll.user_agent set', () => {
    let origin: Origin;
    let receiver: Receiver;
    let w: World;
    let workers: Workers;
    let key: string;
    let endpoint: string;
    before(async () => {
      origin = await startOrigin();
      receiver = await startReceiver();
      w = makeWorld({ poll: { user_agent: CUSTOM } });
      workers = createWorkers(w.ctx, silentLogger);
      key = (await w.key()).key;
      const made = await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'Receiver', url: `${receiver.url}/hook` },
      });
      endpoint = made.body.id;
    });
    after(async () => {
      await workers.close();
      await w.close();
      await origin.close();
      await receiver.close();
    });

    it('sends it with a test event', async () => {
      const res = await w.call('POST', `/v1/endpoints/${endpoint}/test`, { key });
      assert.equal(res.status, 200, res.text);
      assert.equal(receiver.deliveries.at(-1)?.headers['user-agent'], CUSTOM);
    });

    it('sends it with feed fetches and with deliveries', async () => {
      const items = (...ids: number[]) => ids.map((i) => ({ guid: `g${i}`, title: `Item ${i}` }));
      origin.set('/ua.xml', { body: rss(items(1)) });
      const sub = await w.call('POST', '/v1/subscriptions', {
        key,
        body: { endpoint, url: `${origin.url}/ua.xml` },
      });
      assert.equal(sub.status, 201, sub.text);
      await pollTick(w.ctx, workers.pollerDeps); // the baseline
      origin.set('/ua.xml', { body: rss(items(2, 1)) });
      w.clock.advance(24 * 3600 * 1000);
      await pollTick(w.ctx, workers.pollerDeps);
      const fetches = origin.requests.filter((r) => r.path === '/ua.xml');
      assert.equal(fetches.length, 2);
      for (const f of fetches) assert.equal(f.headers['user-agent'], CUSTOM);
      const before = receiver.deliveries.length;
      assert.equal((await deliverTick(w.ctx, workers.delivererDeps)).summary.delivered, 1);
      assert.equal(receiver.deliveries.length, before + 1);
      assert.equal(receiver.deliveries.at(-1)?.headers['user-agent'], CUSTOM);
    });
  });
});
