// The error funnel: an unknown error is logged once for the operator and answered with a 500 that leaks nothing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Hono } from 'hono';
import { markPostgres } from '../../src/db/unavailable.ts';
import { dashboardErrorHandler } from '../../src/http/dashboard/errors.tsx';
import type { DashEnv } from '../../src/http/dashboard/session.ts';
import { errorHandler } from '../../src/http/errors.ts';
import { createHttpApp } from '../../src/http/server.ts';
import { createLogger } from '../../src/log.ts';
import { sqliteConnection } from '../../src/db/sqlite-engine.ts';
import { makeWorld, type World, sqliteOnly } from '../support/world.ts';

type Line = Record<string, unknown>;

describe('the HTTP error funnel', () => {
  let w: World;
  let key: string;
  let lines: Line[];
  let app: ReturnType<typeof createHttpApp>;
  before(async () => {
    w = makeWorld();
    key = (await w.key()).key;
    lines = [];
    const logger = createLogger({
      level: 'info',
      format: 'json',
      write: (line) => lines.push(JSON.parse(line) as Line),
    });
    app = createHttpApp(w.ctx, logger);
  });
  after(() => w.close());

  it(
    'answers 503 with Retry-After, not 500, while the database is full, and logs a warning',
    sqliteOnly,
    async () => {
      const full = makeWorld();
      const lines: Line[] = [];
      const logger = createLogger({
        level: 'info',
        format: 'json',
        write: (line) => lines.push(JSON.parse(line) as Line),
      });
      const fullApp = createHttpApp(full.ctx, logger);
      const fullKey = (await full.key()).key;
      try {
        const db = sqliteConnection(full.ctx.store)!;
        const pages = db.pragma('page_count', { simple: true }) as number;
        db.pragma(`max_page_count = ${pages}`); // no page left: the next insert that needs one fails
        let res: Response | undefined;
        for (let i = 0; i < 50; i++) {
          res = await fullApp.request('/v1/endpoints', {
            method: 'POST',
            headers: { authorization: fullKey, 'content-type': 'application/json' },
            body: JSON.stringify({
              title: `E${i} ${'x'.repeat(150)}`,
              url: `https://hooks.example/${i}`,
            }),
          });
          if (res.status !== 201) break;
        }
        assert.equal(res?.status, 503, await res?.clone().text());
        assert.equal(res?.headers.get('retry-after'), '5');
        assert.equal(((await res?.json()) as { title: string }).title, 'Service unavailable');
        assert.equal(lines.filter((l) => l.level === 'error').length, 0);
        const warn = lines.find((l) => l.msg === 'http: database unavailable');
        assert.equal(warn?.code, 'SQLITE_FULL');
      } finally {
        await full.close();
      }
    },
  );

  it('answers a server fault with a generic 500 problem and logs its cause once with method, path and request id', async () => {
    // PostgreSQL drops what depends on the table (foreign keys) only when told to.
    await w.ctx.db.exec(
      w.ctx.db.dialect === 'sqlite'
        ? 'DROP TABLE subscriptions'
        : 'DROP TABLE subscriptions CASCADE',
    ); // a broken database: a fault no client can cause
    lines.length = 0;
    const res = await app.request('/v1/subscriptions', { headers: { authorization: key } });
    const text = await res.text();
    const requestId = res.headers.get('x-request-id') ?? '';
    assert.equal(res.status, 500);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.match(requestId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(JSON.parse(text), {
      type: 'about:blank',
      title: 'Internal server error',
      status: 500,
      detail: `An internal error occurred; it has been logged with request id ${requestId}.`,
    });
    for (const leak of ['subscriptions', 'no such table', 'SqliteError', 'at ', '.ts'])
      assert.ok(!text.includes(leak), `the answer leaks "${leak}": ${text}`);
    const errors = lines.filter((l) => l.level === 'error');
    assert.equal(errors.length, 1, JSON.stringify(lines));
    const [line] = errors;
    assert.equal(line!.msg, 'http: unhandled error');
    assert.equal(line!.method, 'GET');
    assert.equal(line!.path, '/v1/subscriptions');
    assert.equal(line!.request_id, requestId);
    assert.match(
      String(line!.error),
      /no such table: subscriptions|relation "subscriptions" does not exist/,
    );
  });

  it("keeps a client's X-Request-Id on the answer and in the access log, and replaces an unsafe one", async () => {
    lines.length = 0;
    const kept = await app.request('/v1/endpoints', {
      headers: { authorization: key, 'x-request-id': 'trace-42_a=b' },
    });
    assert.equal(kept.headers.get('x-request-id'), 'trace-42_a=b');
    const access = lines.find((l) => l.msg === 'http: request');
    assert.equal(access?.request_id, 'trace-42_a=b');
    const replaced = await app.request('/v1/endpoints', {
      headers: { authorization: key, 'x-request-id': '<script>alert(1)</script>' },
    });
    assert.match(replaced.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  it('puts a request id on client errors too', async () => {
    const res = await app.request('/v1/endpoints');
    assert.equal(res.status, 401);
    assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });
});

describe("the error funnels and the PostgreSQL engine's faults", () => {
  const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  const refused = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  /** An app whose one route throws what `fail` makes, behind `handler`, and the lines it logs. */
  function throwing(fail: () => unknown, dashboard = false) {
    const lines: Line[] = [];
    const logger = createLogger({
      level: 'info',
      format: 'json',
      write: (line) => lines.push(JSON.parse(line) as Line),
    });
    const app = new Hono<DashEnv>();
    app.onError(dashboard ? dashboardErrorHandler(logger) : errorHandler(logger));
    app.get('/', () => {
      throw fail();
    });
    return { app, lines };
  }

  it('answers 503 with Retry-After for a PostgreSQL server away, and 500 for the same code from elsewhere', async () => {
    for (const [fail, status] of [
      [() => markPostgres(refused()), 503],
      [
        () =>
          markPostgres(
            Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
          ),
        503,
      ],
      [() => markPostgres(reset()), 503], // not a client's abort (400)
      [() => refused(), 500], // a fetch's refusal that escaped is a fault of feedsub's
      [() => markPostgres(Object.assign(new Error('syntax error'), { code: '42601' })), 500],
    ] as const) {
      const { app, lines } = throwing(fail);
      const res = await app.request('/');
      assert.equal(res.status, status, String(fail()));
      if (status === 503) {
        assert.equal(res.headers.get('retry-after'), '5');
        assert.equal(lines.filter((l) => l.level === 'error').length, 0);
      }
    }
  });

  it('answers a dashboard page with 503 and Retry-After while PostgreSQL is away; SQLite stays as it was', async () => {
    const away = throwing(() => markPostgres(refused()), true);
    const res = await away.app.request('/');
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '5');
    assert.match(await res.text(), /The database is unavailable/);
    assert.equal(away.lines.filter((l) => l.level === 'error').length, 0);
    const busy = throwing(() => Object.assign(new Error('busy'), { code: 'SQLITE_BUSY' }), true);
    assert.equal((await busy.app.request('/')).status, 500);
  });
});
