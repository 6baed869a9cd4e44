// The real `feedsub serve` with a key made beforehand, a feed origin and a webhook receiver, all on 127.0.0.1: the
// world of the end-to-end tests that drive the daemon only through its API.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKey } from '../../src/actions/keys.ts';
import { systemClock } from '../../src/clock.ts';
import { defaultConfig } from '../../src/config.ts';
import { quietCtx } from '../../src/context.ts';
import { openDatabase } from '../../src/db/open.ts';
import { SqliteEngine } from '../../src/db/sqlite-engine.ts';
import { startDaemon, type Daemon } from './daemon.ts';
import { startOrigin, startReceiver, type Origin, type Receiver } from './servers.ts';

export type Served = {
  daemon: Daemon;
  origin: Origin;
  receiver: Receiver;
  key: string;
  /** One API request with the key, within 10 s: its status and parsed JSON body (null when empty). */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** Stops the daemon (by its PID), the origin and the receiver, and deletes the data directory. */
  close(): Promise<void>;
};

/** Starts `feedsub serve` on a new data directory holding a key of application `app`, with `env` (FEEDSUB_*). */
export async function startServed(app: string, env: Record<string, string>): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), `feedsub-${app}-`));
  const store = new SqliteEngine(openDatabase(join(dir, 'feedsub.db')));
  const { key } = await createKey(quietCtx(store, systemClock, defaultConfig()), app, null);
  await store.close();
  const origin = await startOrigin();
  const receiver = await startReceiver();
  const daemon = await startDaemon({ dataDir: dir, env });
  return {
    daemon,
    origin,
    receiver,
    key,
    async call(method, path, body) {
      const res = await fetch(daemon.url + path, {
        method,
        headers: { authorization: key, 'content-type': 'application/json' },
        ...(body === undefined
          ? {}
          : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    async close() {
      await daemon.stop();
      await origin.close();
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
