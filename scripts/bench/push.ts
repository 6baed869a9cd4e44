// The push phase: WebSub latency from a hub's publication to the webhook at the receiver, through a running app whose
// polling is an hour apart (so every entry measured came by push), with the test suite's hub, origin and receiver.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createEndpoint } from '../../src/actions/endpoints.ts';
import { createKey } from '../../src/actions/keys.ts';
import { createSubscription } from '../../src/actions/subscriptions.ts';
import { startApp } from '../../src/app.ts';
import { defaultConfig, withConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/log.ts';
import { getWebSub } from '../../src/store/websub-subscriptions.ts';
import { freePort } from '../../test/support/daemon.ts';
import { until } from '../../test/support/deadline.ts';
import { startOrigin, startReceiver } from '../../test/support/servers.ts';
import { startHub } from '../../test/support/websub-hub.ts';
import { median } from './table.ts';
import type { Row } from './table.ts';

/** Publications timed, one after the other, a little over a second apart: the callback takes a burst of 10 per feed,
 *  then one a second (http/websub.ts), and a hub spreads a feed's publications anyway. */
const PUBLICATIONS = 20;
const SPACING_MS = 1100;

/** Adds the p50 and p95 of publication → webhook over PUBLICATIONS pushes of one new entry each. */
export async function measurePushLatency(row: Row): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-bench-push-'));
  const [origin, receiver, hub, port] = await Promise.all([
    startOrigin(),
    startReceiver(),
    startHub(),
    freePort(),
  ]);
  const config = withConfig(defaultConfig(), {
    server: { port, public_url: `http://127.0.0.1:${port}` },
    storage: { data_dir: dir },
    network: { allow_private: true },
    poll: { interval_seconds: 3600, min_interval_seconds: 3600 },
  });
  const app = await startApp(config, silentLogger);
  try {
    const self = `${origin.url}/push.xml`;
    const doc = (n: number) => atom(n, hub.url, self);
    origin.set('/push.xml', { body: doc(1), contentType: 'application/atom+xml' });
    const { application } = await createKey(app.ctx, 'bench-push', null);
    const endpoint = await createEndpoint(app.ctx, application.id, {
      title: 'R',
      url: receiver.url,
    });
    const sub = await createSubscription(app.ctx, application.id, {
      endpoint: endpoint.id,
      url: self,
    });
    app.ctx.nudgePoller();
    await until(
      async () =>
        hub.subscriptions.size === 1 &&
        (await getWebSub(app.ctx.db, sub.feed))?.status === 'active',
      30_000,
      'subscribed',
    );
    const ms: number[] = [];
    for (let n = 2; n < PUBLICATIONS + 2; n++) {
      origin.set('/push.xml', { body: doc(n), contentType: 'application/atom+xml' });
      const t = performance.now();
      await hub.publish(self, doc(n));
      await receiver.waitFor(n - 1, 30_000);
      ms.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, SPACING_MS));
    }
    ms.sort((a, b) => a - b);
    const note = `${PUBLICATIONS} pushes of one new entry, 1.1 s apart, polling an hour apart; hub POST → receiver`;
    row('WebSub publication → webhook, p50', `${median(ms).toFixed(0)} ms`, note);
    row(
      'WebSub publication → webhook, p95',
      `${ms[Math.floor(ms.length * 0.95)]!.toFixed(0)} ms`,
      '',
    );
  } finally {
    await app.stop();
    await Promise.all([origin.close(), receiver.close(), hub.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An Atom feed advertising `hub`, with entries 1 to `n` (newest last). */
function atom(n: number, hub: string, self: string): string {
  let entries = '';
  for (let i = 1; i <= n; i++)
    entries += `<entry><id>urn:bench:${i}</id><title>E${i}</title><updated>2026-01-01T00:00:00Z</updated></entry>`;
  return `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>T</title><id>urn:t</id><updated>2026-01-01T00:00:00Z</updated><link rel="hub" href="${hub}"/><link rel="self" href="${self}"/>${entries}</feed>`;
}

// `tsx scripts/bench/push.ts` measures this phase alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  const rows: string[] = [];
  await measurePushLatency((what, value, note = '') => rows.push(`| ${what} | ${value} | ${note}`));
  console.log(rows.join('\n'));
}
