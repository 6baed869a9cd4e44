// The dashboard's overview shows the service's live nodes, each with what it was working on and when it was last seen,
// and leaves out a node whose heartbeat stopped.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { soloNode, type Ctx } from '../../../src/context.ts';
import { silentLogger } from '../../../src/log.ts';
import { createHeartbeat } from '../../../src/worker/nodes.ts';
import { makeWorld } from '../../support/world.ts';
import { Client } from './client.ts';

describe('dashboard overview', () => {
  it('lists the live nodes with what each holds, escaped, and drops one unseen for a node timeout', async () => {
    const w = makeWorld();
    try {
      const heartbeat = (name: string, polls: number) =>
        createHeartbeat({ ...w.ctx, node: soloNode() } satisfies Ctx, {
          name,
          holds: () => ({ polls, deliveries: 1 }),
          logger: silentLogger,
        });
      const [web, worker] = [heartbeat('web-1', 3), heartbeat('<b>worker</b>', 0)];
      await worker.beat();
      w.clock.advance(w.ctx.config.cluster.node_timeout_seconds * 1000 + 1);
      await web.beat();
      const { key } = await w.key();
      const c = await new Client(w).signedIn(key);
      const page = await c.get('/dashboard');
      assert.equal(page.status, 200);
      assert.match(page.text, /<h2>Service<\/h2>/);
      assert.match(page.text, /web-1<\/td>/);
      assert.match(page.text, /3 feeds<\/td>/);
      assert.ok(!page.text.includes('worker'), 'the node unseen for a node timeout is gone');
      await worker.beat();
      const again = await c.get('/dashboard');
      assert.match(again.text, /&lt;b&gt;worker&lt;\/b&gt;<\/td>/, 'its name escaped');
    } finally {
      await w.close();
    }
  });
});
