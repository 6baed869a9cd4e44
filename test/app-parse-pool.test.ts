// The daemon in this process, through its HTTP API: the parse threads refuse a body that is no feed from its head, fail
// a feed past their heap as a parse error, and go on reading with a new thread.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { startApp } from '../src/app.ts';
import { until } from './support/deadline.ts';
import { recordingLogger } from './support/log.ts';
import { rss, startOrigin } from './support/servers.ts';
import { appConfig, tenant } from './support/tenant.ts';

describe('the daemon on its parse threads', () => {
  const dirs: string[] = [];
  const configFor = (patch: Parameters<typeof appConfig>[1] = {}) => appConfig(dirs, patch);
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('refuses a 10 MiB garbage body from its head, fails a feed past the parse heap as a parse error, and goes on', async () => {
    const origin = await startOrigin();
    origin.set('/garbage.xml', { body: randomBytes(10 * 1024 * 1024) });
    // An 11 MB feed of 20,000 items: its text, XML tree and entries need more than the 32 MiB parse heap.
    const item = (i: number) =>
      `<item><guid>id-${i}</guid><title>Item ${i}</title><description>${'lorem ipsum '.repeat(40)}</description></item>`;
    const huge = `<?xml version="1.0"?><rss version="2.0"><channel><title>Huge</title>${Array.from({ length: 20_000 }, (_, i) => item(i)).join('')}</channel></rss>`;
    origin.set('/huge.xml', { body: huge });
    origin.set('/feed.xml', { body: rss([{ guid: 'g1' }]) });
    const app = await startApp(
      configFor({ poll: { parse_heap_mb: 32 } }),
      recordingLogger().logger,
    );
    try {
      const a = await tenant(app, 'a', 'https://hooks.example/a');
      const failed = async (url: string) => {
        const sub = await a.subscribe(url);
        let feed: Record<string, unknown> = {};
        await until(
          async () => (feed = await a.get(`/v1/feeds/${sub.feed}`)).last_error !== null,
          20_000,
          `${url} polled`,
        );
        return String(feed.last_error);
      };
      // A garbage body is refused from its head; a huge one fills the parse thread's heap and fails alone.
      assert.match(await failed(`${origin.url}/garbage.xml`), /^parse: not a feed/);
      assert.match(await failed(`${origin.url}/huge.xml`), /needs more than 32 MiB to read/);
      const next = await a.subscribe(`${origin.url}/feed.xml`);
      await until(
        async () => (await a.get(`/v1/feeds/${next.feed}`)).last_success_at !== null,
        10_000,
        'a feed read after the worker was replaced',
      );
    } finally {
      await app.stop();
      await origin.close();
    }
  });
});
