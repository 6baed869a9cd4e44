// The poller delivers typed entry text: payload schema_version 2, and delivery.sanitize_html reaching the parser.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../../src/log.ts';
import { createWorkers } from '../../../src/worker/index.ts';
import { pollTick } from '../../../src/worker/poll/round.ts';
import { startOrigin, type Origin } from '../../support/servers.ts';
import { makeWorld } from '../../support/world.ts';

type Body = {
  schema_version: number;
  data: { entries: { title: string; summary_html: string; content_text: string | null }[] };
};

const feed = (items: string) =>
  `<?xml version="1.0"?><rss version="2.0"><channel><title>T</title><link>/</link>${items}</channel></rss>`;
const first = '<item><guid>1</guid><title>One</title></item>';
const second =
  '<item><guid>2</guid><title>Two &lt;b&gt;bold&lt;/b&gt;</title><description><![CDATA[<p onclick="x()"><a href="/post/2">read</a></p>]]></description></item>';

describe('poller entry text', () => {
  let origin: Origin;
  before(async () => {
    origin = await startOrigin();
  });
  after(() => origin.close());

  // Subscribes, takes the baseline, publishes a second item and returns the body of the one event it makes.
  async function deliveredBody(sanitize: boolean | undefined, path: string): Promise<Body> {
    const w = makeWorld(sanitize === undefined ? {} : { delivery: { sanitize_html: sanitize } });
    const workers = createWorkers(w.ctx, silentLogger);
    try {
      const key = (await w.key()).key;
      const endpoint = (
        await w.call('POST', '/v1/endpoints', {
          key,
          body: { title: 'E', url: 'https://hooks.example.com/' },
        })
      ).body.id as string;
      origin.set(path, { body: feed(first) });
      await w.call('POST', '/v1/subscriptions', {
        key,
        body: { endpoint, url: origin.url + path },
      });
      await pollTick(w.ctx, workers.pollerDeps);
      origin.set(path, { body: feed(second + first) });
      w.clock.advance(2 * 3600 * 1000);
      await pollTick(w.ctx, workers.pollerDeps);
      const rows = (await w.ctx.db.all('SELECT body FROM event_bodies')) as { body: string }[];
      assert.equal(rows.length, 1);
      return JSON.parse(rows[0]!.body) as Body;
    } finally {
      await w.close();
      await workers.close();
    }
  }

  it('sends schema_version 2 with a plain title and sanitized HTML with absolute URLs by default', async () => {
    const body = await deliveredBody(undefined, '/default.xml');
    assert.equal(body.schema_version, 2);
    const [e] = body.data.entries;
    assert.equal(e!.title, 'Two bold');
    assert.equal(e!.summary_html, `<p><a href="${origin.url}/post/2">read</a></p>`);
  });

  it('passes markup through when delivery.sanitize_html is false, URLs still absolute', async () => {
    const [e] = (await deliveredBody(false, '/raw.xml')).data.entries;
    assert.equal(e!.summary_html, `<p onclick="x()"><a href="${origin.url}/post/2">read</a></p>`);
  });
});
