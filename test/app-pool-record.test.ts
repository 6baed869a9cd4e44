// The daemon in this process, through its HTTP API: a poll or an attempt whose outcome could not be written runs again as
// soon as the database takes writes again. Each test starts its own app on its own data directory, origin and receiver:
// they run at once.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { startApp } from '../src/app.ts';
import { sqliteConnection } from '../src/db/sqlite-engine.ts';
import { until, within } from './support/deadline.ts';
import { startGatedOrigin } from './support/gated-origin.ts';
import { recordingLogger } from './support/log.ts';
import { rss, startOrigin, startReceiver } from './support/servers.ts';
import { appConfig, tenant } from './support/tenant.ts';

describe('the daemon when an outcome could not be recorded', { concurrency: true }, () => {
  const dirs: string[] = [];
  const configFor = (patch: Parameters<typeof appConfig>[1] = {}) => appConfig(dirs, patch);
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('polls a feed again within seconds of the database taking writes again when its poll could not be recorded', async () => {
    const origin = await startGatedOrigin();
    origin.set('/feed.xml', rss([{ guid: 'g1' }]));
    const { logger, lines } = recordingLogger();
    const app = await startApp(configFor(), logger);
    try {
      const gate = origin.hold('/feed.xml');
      const a = await tenant(app, 'a', 'https://hooks.example/a');
      await a.subscribe(`${origin.url}/feed.xml`);
      await gate.arrived;
      sqliteConnection(app.ctx.store)!.pragma('query_only = 1');
      const second = origin.hold('/feed.xml');
      gate.release();
      await until(
        () => lines.some((l) => l.msg === 'poll: unable to record outcomes'),
        5000,
        'the failed record logged',
      );
      sqliteConnection(app.ctx.store)!.pragma('query_only = 0');
      // Before: the claimed feed kept its lease (poll.timeout_seconds x 5 + 10 s = 160 s) after the database recovered.
      await within(second.arrived, 8000, 'the feed polled again after writes work again');
      second.release();
      await until(
        () => lines.some((l) => l.msg === 'poll: recording outcomes again'),
        5000,
        'the recovery logged',
      );
      assert.equal(lines.filter((l) => l.msg === 'poll: unable to record outcomes').length, 1);
    } finally {
      sqliteConnection(app.ctx.store)!.pragma('query_only = 0');
      await app.stop();
      await origin.close();
    }
  });

  it('sends an event again within seconds of the database taking writes again when its attempt could not be recorded', async () => {
    const origin = await startOrigin();
    const receiver = await startReceiver();
    const { logger, lines } = recordingLogger();
    let failNext = false;
    receiver.respond(() => {
      if (failNext) {
        failNext = false;
        sqliteConnection(app.ctx.store)!.pragma('query_only = 1'); // the answer arrives, and its outcome cannot be written
      }
      return { status: 204 };
    });
    const app = await startApp(
      configFor({
        poll: { interval_seconds: 1, min_interval_seconds: 1, max_interval_seconds: 1 },
      }),
      logger,
    );
    try {
      origin.set('/feed.xml', { body: rss([{ guid: 'g1' }]) });
      const a = await tenant(app, 'a', `${receiver.url}/hook`);
      const sub = await a.subscribe(`${origin.url}/feed.xml`);
      await until(
        async () => (await a.get(`/v1/feeds/${sub.feed}`)).last_success_at !== null,
        5000,
        'the baseline recorded',
      );
      failNext = true;
      origin.set('/feed.xml', { body: rss([{ guid: 'g2' }, { guid: 'g1' }]) });
      await until(() => receiver.deliveries.length === 1, 5000, 'the first attempt');
      await until(
        () => lines.some((l) => l.msg === 'deliver: unable to record outcomes'),
        5000,
        'the failed record logged',
      );
      sqliteConnection(app.ctx.store)!.pragma('query_only = 0');
      // Before: the event kept its lease (delivery.timeout_seconds + 10 s = 25 s).
      await until(() => receiver.deliveries.length === 2, 8000, 'the event sent again');
      assert.equal(receiver.deliveries[1]!.id, receiver.deliveries[0]!.id, 'the same webhook-id');
      assert.equal(lines.filter((l) => l.msg === 'deliver: unable to record outcomes').length, 1);
    } finally {
      sqliteConnection(app.ctx.store)!.pragma('query_only = 0');
      await app.stop();
      await receiver.close();
      await origin.close();
    }
  });
});
