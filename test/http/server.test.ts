// The HTTP app's own routes: /healthz answers 503 with the reason while the database cannot take a write.
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createHttpApp } from '../../src/http/server.ts';
import { recordingLogger } from '../support/log.ts';
import { sqliteConnection } from '../../src/db/sqlite-engine.ts';
import { makeWorld, type World, sqliteOnly } from '../support/world.ts';

describe('/healthz', () => {
  let w: World;
  beforeEach(() => {
    w = makeWorld();
  });
  afterEach(() => w.close());

  const health = async () => {
    const res = await w.call('GET', '/healthz');
    return { status: res.status, body: res.body, type: res.headers.get('content-type') };
  };
  /** Caps the database at its current size, as a full disk does: no page can be added. */
  const fill = () => {
    const db = sqliteConnection(w.ctx.store)!;
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.pragma(`max_page_count = ${pages}`);
    assert.equal(db.pragma('freelist_count', { simple: true }), 0, 'no free page left');
  };

  it('answers 200 {"status": "ok"} while the database can take a write', async () => {
    assert.deepEqual(await health(), {
      status: 200,
      body: { status: 'ok' },
      type: 'application/json',
    });
  });

  it(
    'answers 503 "database is full" while no page can be added, and 200 again once one can',
    sqliteOnly,
    async () => {
      fill();
      await assert.rejects(
        () => w.ctx.db.exec('CREATE TABLE big (b BLOB); INSERT INTO big VALUES (zeroblob(65536))'),
        /database or disk is full/,
        'a write that needs a page fails',
      );
      const full = await health();
      assert.equal(full.status, 503);
      assert.equal(full.type, 'application/problem+json');
      assert.match(full.body.detail, /^database is full/);
      sqliteConnection(w.ctx.store)!.pragma('max_page_count = 1073741823');
      assert.equal((await health()).status, 200);
    },
  );

  it(
    'answers 503 "database is locked" while another process holds the write lock, and 200 once it commits',
    sqliteOnly,
    async () => {
      const other = new Database(sqliteConnection(w.ctx.store)!.name, { timeout: 0 });
      try {
        other.exec('BEGIN IMMEDIATE');
        const locked = await health();
        assert.equal(locked.status, 503);
        assert.match(locked.body.detail, /^database is locked/);
        other.exec('COMMIT');
        assert.equal((await health()).status, 200);
      } finally {
        other.close();
      }
    },
  );

  it(
    'logs a reason when it changes, not on every probe, and the return to health once',
    sqliteOnly,
    async () => {
      const lines: string[] = [];
      const { logger } = recordingLogger(({ level, msg, fields }) => {
        if (msg === 'http: request') return;
        lines.push(`${level} ${msg} ${String(fields.reason ?? fields.was ?? '').split(':')[0]}`);
      });
      const app = createHttpApp(w.ctx, logger);
      const probe = async () => (await app.request('/healthz')).status;
      fill();
      assert.deepEqual([await probe(), await probe(), await probe()], [503, 503, 503]);
      sqliteConnection(w.ctx.store)!.pragma('max_page_count = 1073741823');
      assert.deepEqual([await probe(), await probe()], [200, 200]);
      assert.deepEqual(lines, [
        'warn http: unhealthy database is full',
        'info http: healthy again database is full',
      ]);
    },
  );
});

describe('the access log', () => {
  it('logs one 429 of an application a second, with the number left out since the line before', async () => {
    const w = makeWorld({ quotas: { api_requests_per_second: 1, api_burst: 1 } });
    try {
      const logged: string[] = [];
      const { logger } = recordingLogger(({ msg, fields }) => {
        if (msg === 'http: request')
          logged.push(
            `${fields.status} ${fields.application_id === undefined ? '-' : 'app'} ${fields.suppressed ?? 0}`,
          );
      });
      const app = createHttpApp(w.ctx, logger);
      const { key } = await w.key();
      const other = (await w.key()).key;
      const get = async (k: string) =>
        (await app.request('/v1/endpoints', { headers: { authorization: k } })).status;
      assert.equal(await get(key), 200);
      for (let i = 0; i < 5; i++) assert.equal(await get(key), 429);
      assert.equal(await get(other), 200, 'another application');
      assert.equal(await get(other), 429, "another application's first 429 has its own line");
      w.clock.advance(999);
      assert.equal(await get(key), 429);
      w.clock.advance(1);
      assert.equal(await get(key), 200, 'a token back after 1 s');
      assert.equal(await get(key), 429);
      assert.deepEqual(logged, [
        '200 app 0',
        '429 app 0',
        '200 app 0',
        '429 app 0',
        '200 app 0',
        '429 app 5',
      ]);
    } finally {
      await w.close();
    }
  });
});
