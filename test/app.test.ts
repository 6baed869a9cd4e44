import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { quietCtx } from '../src/context.ts';
import { createEndpoint } from '../src/actions/endpoints.ts';
import { createKey } from '../src/actions/keys.ts';
import { systemClock } from '../src/clock.ts';
import { defaultConfig, withConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/open.ts';
import { SqliteEngine } from '../src/db/sqlite-engine.ts';
import { newId } from '../src/ids.ts';
import { insertEvent } from '../src/store/events.ts';
import { runCli, startDaemon, type Daemon } from './support/daemon.ts';

/** A webhook receiver that takes each POST and answers only when the test calls release(). */
async function startHoldingReceiver() {
  const held: ServerResponse[] = [];
  let arrived: () => void = () => {};
  const first = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      held.push(res);
      arrived();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    /** Resolves when the first delivery is being held (bounded by `ms`). */
    arrival: (ms = 20_000) => withTimeout(first, ms, 'no delivery reached the receiver'),
    release(status = 200) {
      for (const res of held.splice(0)) res.writeHead(status).end('ok');
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** Writes a key, an endpoint and one due event into a new database in `dir`; returns the event id and the key. */
async function seed(
  dir: string,
  endpointUrl: string,
  withEvent: boolean,
): Promise<{ eventId: string; key: string }> {
  const config = withConfig(defaultConfig(), {
    storage: { data_dir: dir },
    network: { allow_private: true },
  });
  const store = new SqliteEngine(openDatabase(join(dir, 'feedsub.db')));
  try {
    const ctx = quietCtx(store, systemClock, config);
    const made = await createKey(ctx, 'ops', null);
    const endpoint = await createEndpoint(ctx, made.application.id, {
      title: 'held',
      url: endpointUrl,
    });
    const now = new Date();
    const eventId = newId(now);
    if (withEvent)
      await insertEvent(
        store,
        {
          id: eventId,
          application_id: made.application.id,
          endpoint_id: endpoint.id,
          subscription_id: null,
          type: 'endpoint.test',
          sequence: null,
          body: '{"type":"endpoint.test"}',
        },
        now,
      );
    return { eventId, key: made.key };
  } finally {
    await store.close();
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/** Resolves once the daemon's output matches `pattern` (bounded by `ms`). */
function waitForOutput(daemon: Daemon, pattern: RegExp, ms = 20_000): Promise<void> {
  const seen = new Promise<void>((resolve) => {
    const check = () => {
      if (pattern.test(daemon.output())) {
        daemon.child.stderr!.off('data', check);
        resolve();
      }
    };
    daemon.child.stderr!.on('data', check);
    queueMicrotask(check);
  });
  return withTimeout(seen, ms, `no output matching ${pattern}`);
}

function eventState(dir: string, id: string): { status: string; attempts: number } {
  const db = new Database(join(dir, 'feedsub.db'), { readonly: true });
  try {
    const status = db.prepare('SELECT status FROM events WHERE id = ?').pluck().get(id) as string;
    const attempts = db
      .prepare('SELECT count(*) FROM attempts WHERE event_id = ?')
      .pluck()
      .get(id) as number;
    return { status, attempts };
  } finally {
    db.close();
  }
}

// Each test has its own data directory, receiver and daemon, stopped by its own cleanup: they run at once.
describe('feedsub serve as a process: graceful shutdown', { concurrency: true }, () => {
  async function setup(t: TestContext, opts: { shutdownSeconds: number; withEvent?: boolean }) {
    const dir = mkdtempSync(join(tmpdir(), 'feedsub-app-'));
    const receiver = await startHoldingReceiver();
    const cleanups: (() => Promise<void> | void)[] = [
      () => rmSync(dir, { recursive: true, force: true }),
      () => receiver.close(),
    ];
    t.after(async () => {
      for (const c of cleanups.reverse()) await c();
    });
    const seeded = await seed(dir, receiver.url, opts.withEvent ?? true);
    const daemon = await startDaemon({
      dataDir: dir,
      env: {
        FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
        FEEDSUB_SERVER_SHUTDOWN_TIMEOUT_SECONDS: String(opts.shutdownSeconds),
        FEEDSUB_DELIVERY_TIMEOUT_SECONDS: '120',
      },
    });
    cleanups.push(() => daemon.kill());
    return { dir, receiver, daemon, ...seeded };
  }

  it('on SIGTERM stops accepting, lets the delivery in flight finish, and exits 0', async (t) => {
    const { dir, receiver, daemon, eventId } = await setup(t, { shutdownSeconds: 30 });
    await receiver.arrival();
    const exit = daemon.stop('SIGTERM');
    await waitForOutput(daemon, /"msg":"feedsub: stopping"/);
    await assert.rejects(fetch(`${daemon.url}/healthz`), 'the listener is closed once stopping');
    receiver.release(200);
    assert.equal(await withTimeout(exit, 20_000, 'feedsub did not exit'), 0);
    assert.match(daemon.output(), /"msg":"feedsub: stopped"/);
    assert.deepEqual(eventState(dir, eventId), { status: 'delivered', attempts: 1 });
  });

  it('gives up on work still in flight after server.shutdown_timeout_seconds and exits 0', async (t) => {
    const { dir, receiver, daemon, eventId } = await setup(t, { shutdownSeconds: 1 });
    await receiver.arrival();
    // The receiver never answers and delivery.timeout_seconds is 120: only the shutdown timeout can end this.
    assert.equal(await withTimeout(daemon.stop('SIGTERM'), 20_000, 'feedsub did not exit'), 0);
    const state = eventState(dir, eventId);
    assert.notEqual(state.status, 'delivered');
    assert.equal(
      state.attempts,
      0,
      'an abandoned attempt is not recorded; its lease lets the next start retry it',
    );
  });

  it('exits at once, with status 1, on a second signal', async (t) => {
    const { receiver, daemon } = await setup(t, { shutdownSeconds: 60 });
    await receiver.arrival();
    const exit = daemon.stop('SIGTERM');
    await waitForOutput(daemon, /"msg":"feedsub: stopping"/);
    daemon.child.kill('SIGINT');
    assert.equal(await withTimeout(exit, 20_000, 'feedsub did not exit on the second signal'), 1);
    assert.match(daemon.output(), /"msg":"feedsub: second signal, exiting at once"/);
  });

  it('backs up the live database with the CLI while serving, then exits 0 on SIGINT', async (t) => {
    const { dir, daemon, key } = await setup(t, { shutdownSeconds: 10, withEvent: false });
    const created = await fetch(`${daemon.url}/v1/endpoints`, {
      method: 'POST',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'over http', url: 'http://127.0.0.1:9/x' }),
    });
    assert.equal(created.status, 201);
    const copyFile = join(dir, 'copy.db');
    const run = runCli(['backup', copyFile, '--data-dir', dir]);
    assert.equal(run.status, 0, run.stderr);
    assert.match(
      run.stdout,
      /^Backed up .+ to .+copy\.db: [\d.]+ MiB \(\d+ bytes, \d+ pages\) in \d+ ms\.\n$/,
    );
    assert.equal(
      runCli(['backup', copyFile, '--data-dir', dir]).status,
      2,
      'an existing file needs --force',
    );
    const copy = new Database(copyFile, { readonly: true });
    try {
      assert.deepEqual(copy.prepare('SELECT title FROM endpoints ORDER BY id').pluck().all(), [
        'held',
        'over http',
      ]);
      assert.equal(copy.prepare('SELECT count(*) FROM api_keys').pluck().get(), 1);
    } finally {
      copy.close();
    }
    assert.equal(await withTimeout(daemon.stop('SIGINT'), 20_000, 'feedsub did not exit'), 0);
  });
});
