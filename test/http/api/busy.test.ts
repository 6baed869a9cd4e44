// Writes beside another process's writes (a `poll --once` next to serve): every API write takes the write lock before
// it reads, so it waits its turn instead of failing with SQLITE_BUSY_SNAPSHOT (503) when the other process commits
// between its read and its write.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { sqliteConnection } from '../../../src/db/sqlite-engine.ts';
import { makeWorld, type World, sqliteOnly } from '../../support/world.ts';

/** A second connection, on a thread of its own, committing a small write every 2 ms until told to stop. */
function startWriter(file: string): { stop: () => Promise<number> } {
  const worker = new Worker(
    `
    const { parentPort, workerData } = require('node:worker_threads');
    const Database = require('better-sqlite3');
    const db = new Database(workerData.file);
    db.pragma('busy_timeout = 5000');
    db.prepare("INSERT INTO applications (id, name, created_at) VALUES ('app_writer', 'writer', '0')").run();
    const bump = db.prepare("UPDATE applications SET created_at = ? WHERE id = 'app_writer'");
    const pause = new Int32Array(new SharedArrayBuffer(4));
    let stop = false, commits = 0;
    parentPort.on('message', () => { stop = true; });
    const step = () => {
      const until = Date.now() + 50;
      while (Date.now() < until) { bump.run(String(commits++)); Atomics.wait(pause, 0, 0, 2); }
      if (stop || commits > 100000) { db.close(); parentPort.postMessage(commits); } else setImmediate(step);
    };
    step();
    `,
    { eval: true, workerData: { file } },
  );
  return {
    stop: () =>
      new Promise<number>((resolve) => {
        worker.once('message', (n: number) => void worker.terminate().then(() => resolve(n)));
        worker.postMessage('stop');
      }),
  };
}

describe('API writes beside another writer', () => {
  let w: World;
  before(() => {
    w = makeWorld({ quotas: { api_requests_per_second: 0 } });
  });
  after(() => w.close());

  it(
    'creates and deletes subscriptions without a 503 while another connection commits every 2 ms',
    sqliteOnly,
    async () => {
      const { key } = await w.key();
      const ep = (
        await w.call('POST', '/v1/endpoints', {
          key,
          body: { title: 'E', url: 'https://h.example/' },
        })
      ).body.id;
      const writer = startWriter(sqliteConnection(w.ctx.store)!.name);
      const statuses = new Map<number, number>();
      try {
        for (let i = 0; i < 150; i++) {
          const created = await w.call('POST', '/v1/subscriptions', {
            key,
            body: { endpoint: ep, url: `https://f.example/${i}.xml` },
          });
          statuses.set(created.status, (statuses.get(created.status) ?? 0) + 1);
          if (created.status !== 201) continue;
          const deleted = await w.call('DELETE', `/v1/subscriptions/${created.body.id}`, { key });
          statuses.set(deleted.status, (statuses.get(deleted.status) ?? 0) + 1);
        }
      } finally {
        const commits = await writer.stop();
        assert.ok(commits > 50, `the other connection committed ${commits} times`);
      }
      assert.deepEqual(Object.fromEntries(statuses), { 201: 150, 204: 150 });
    },
  );
});
