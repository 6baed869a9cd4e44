// The daemon on PostgreSQL while its server restarts: requests during the outage get 503 problem+json with Retry-After
// (never a 500, never a hang), /healthz says 503, the process lives through it, and once the server is back the API
// answers again with everything written before the outage (and every write it acknowledged during it) in place.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { startApp, type RunningApp } from '../src/app.ts';
import { defaultConfig, withConfig } from '../src/config.ts';
import { pingDatabase } from '../src/store/maintenance.ts';
import { createLoop } from '../src/worker/loop.ts';
import { within } from './support/deadline.ts';
import { recordingLogger } from './support/log.ts';
import { startPostgres, type Postgres } from './support/postgres.ts';

/** No request may take longer than this, outage or not: the pool's connect timeout (5 s) is below it. */
const REQUEST_DEADLINE_MS = 8_000;
/** How long the server stays down. */
const DOWN_MS = 2_000;
/** The whole outage loop, restart included, and the wait for the API to answer again afterwards. */
const OUTAGE_LOOP_MS = 30_000;
const RECOVERY_MS = 15_000;

type Answer = {
  what: string;
  status: number;
  retryAfter: string | null;
  type: string | null;
  /** A 503's problem detail. */
  detail?: string;
};

describe('the daemon on PostgreSQL while its server restarts', () => {
  let pg: Postgres | undefined;
  let app: RunningApp | undefined;
  const scratch = mkdtempSync(join(tmpdir(), 'feedsub-pg-restart-'));
  before(async () => {
    pg = await startPostgres(); // its own: this file restarts it
  });
  after(async () => {
    await app?.stop();
    await pg?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('answers 503 with Retry-After while the server is down, never 500, and works again with nothing lost', async () => {
    const dataDir = join(scratch, 'never'); // on PostgreSQL no data directory is made or locked
    const { logger, lines } = recordingLogger();
    app = await startApp(
      withConfig(defaultConfig(), {
        storage: { data_dir: dataDir, database_url: await pg!.newDatabase() },
        server: { port: 0, shutdown_timeout_seconds: 5 },
        network: { allow_private: true },
      }),
      logger,
    );
    const running = app;
    assert.equal(running.ctx.store.dialect, 'postgres');
    const key = (await createKey(running.ctx, 'acme', null)).key;
    const call = async (method: string, path: string, body?: unknown): Promise<Response> =>
      fetch(running.url + path, {
        method,
        headers: { authorization: key, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
      });
    const endpointTitles = async (): Promise<string[]> => {
      const res = await call('GET', '/v1/endpoints?limit=100');
      assert.equal(res.status, 200, await res.clone().text());
      return ((await res.json()) as { data: { title: string }[] }).data.map((e) => e.title).sort();
    };

    const made = await call('POST', '/v1/endpoints', {
      title: 'before',
      url: 'https://hooks.example.com/before',
    });
    assert.equal(made.status, 201, await made.clone().text());
    assert.equal((await fetch(`${running.url}/healthz`)).status, 200);
    assert.deepEqual(await endpointTitles(), ['before']);

    // A loop whose every tick writes, as the daemon's loops do: it fails through the outage, backs off and recovers.
    const looped = recordingLogger();
    const loop = createLoop('probe', () => running.ctx.store.write((sql) => pingDatabase(sql)), {
      idleMs: 100,
      logger: looped.logger,
      backoff: { firstMs: 200, maxMs: 400 },
    });
    loop.start();
    try {
      // The outage: requests one after another (each bounded), until the server is back and has answered once more.
      const answers: Answer[] = [];
      const acknowledged: string[] = []; // endpoints created with a 201 during the outage
      let back = false;
      const restarting = pg!.restart(DOWN_MS).then(() => {
        back = true;
      });
      const started = Date.now();
      let n = 0;
      let afterBack = 0;
      while (afterBack < 1) {
        assert.ok(Date.now() - started < OUTAGE_LOOP_MS, 'the outage loop ran past its deadline');
        if (back) afterBack++;
        const title = `during-${++n}`;
        const tries: [string, () => Promise<Response>][] = [
          ['GET /v1/endpoints', () => call('GET', '/v1/endpoints')],
          [
            'POST /v1/endpoints',
            () => call('POST', '/v1/endpoints', { title, url: `https://hooks.example.com/${n}` }),
          ],
          [
            'GET /healthz',
            () =>
              fetch(`${running.url}/healthz`, { signal: AbortSignal.timeout(REQUEST_DEADLINE_MS) }),
          ],
        ];
        for (const [what, send] of tries) {
          const t0 = Date.now();
          const res = await within(send(), REQUEST_DEADLINE_MS + 1_000, what);
          assert.ok(Date.now() - t0 < REQUEST_DEADLINE_MS, `${what} took ${Date.now() - t0} ms`);
          answers.push({
            what,
            status: res.status,
            retryAfter: res.headers.get('retry-after'),
            type: res.headers.get('content-type'),
          });
          if (what === 'POST /v1/endpoints' && res.status === 201) acknowledged.push(title);
          const text = await res.text();
          if (res.status === 503)
            answers.at(-1)!.detail = (JSON.parse(text) as { detail: string }).detail;
        }
        await sleep(100);
      }
      await within(restarting, OUTAGE_LOOP_MS, 'the restart');

      const unexpected = answers.filter((a) => ![200, 201, 503].includes(a.status));
      const unhandled = lines.filter((l) => l.msg === 'http: unhandled error');
      assert.deepEqual(
        unexpected,
        [],
        `only 200, 201 and 503 during the outage: ${JSON.stringify(unhandled)}`,
      );
      const api503 = answers.filter((a) => a.status === 503 && a.what !== 'GET /healthz');
      assert.ok(
        api503.length > 0,
        `the API answered 503 while the server was down: ${JSON.stringify(answers)}`,
      );
      for (const a of api503) {
        assert.equal(a.retryAfter, '5', `${a.what}: Retry-After`);
        assert.equal(a.type, 'application/problem+json', `${a.what}: content type`);
      }
      const unhealthy = answers.filter((a) => a.what === 'GET /healthz' && a.status === 503);
      assert.ok(unhealthy.length > 0, '/healthz answered 503 while the server was down');
      // Its reason is the fault's code alone: a message of the connection would show where the server is.
      for (const a of unhealthy)
        assert.match(a.detail ?? '', /^database is unavailable \([^)]+\)$/);
      assert.deepEqual(
        lines.filter((l) => l.msg === 'http: unhandled error'),
        [],
        'no request was a 500',
      );
      assert.ok(
        lines.some((l) => l.msg === 'http: database unavailable' && l.level === 'warn'),
        'each 503 of the API is logged as the database unavailable',
      );

      // Back: the API answers again, with what was there before and every write it acknowledged meanwhile.
      const deadline = Date.now() + RECOVERY_MS;
      for (;;) {
        const res = await call('GET', '/v1/endpoints?limit=100');
        await res.arrayBuffer();
        if (res.status === 200) break;
        assert.ok(Date.now() < deadline, `the API did not answer again: ${res.status}`);
        await sleep(100);
      }
      const titles = await endpointTitles();
      assert.ok(titles.includes('before'), `written before the outage: ${titles.join(', ')}`);
      for (const title of acknowledged)
        assert.ok(titles.includes(title), `${title} was acknowledged`);
      const again = await call('POST', '/v1/endpoints', {
        title: 'after',
        url: 'https://hooks.example.com/after',
      });
      assert.equal(again.status, 201, await again.clone().text());
      assert.equal((await fetch(`${running.url}/healthz`)).status, 200);
      const recovered = Date.now() + RECOVERY_MS;
      while (!looped.lines.some((l) => l.msg === 'loop: tick recovered')) {
        assert.ok(Date.now() < recovered, 'the loop did not recover');
        await sleep(50);
      }
      const failed = looped.lines.filter((l) => l.msg === 'loop: tick failed');
      assert.ok(failed.length > 0, 'the loop met the outage');
      assert.equal(failed[0]!.fields.loop, 'probe');
    } finally {
      await loop.stop();
    }
    assert.equal(existsSync(dataDir), false, 'the data directory was never made');
  });
});
