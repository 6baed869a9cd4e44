// Crash safety: `feedsub serve` SIGKILLed mid-delivery several times loses no event; after restarts the receiver sees
// every new entry at least once (it dedupes on webhook-id) and each subscription's sequence numbers have no gap.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { verifySignature } from '../src/webhook/sign.ts';
import { runCli, startDaemon, type Daemon } from './support/daemon.ts';
import { until } from './support/deadline.ts';
import { rss, startOrigin, type Origin } from './support/servers.ts';

const KILLS = 3;
const MAX_ENTRIES = 400; // bounds the producer if the kills take long
const RESPONSE_DELAY_MS = 300;
const ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_TIMEOUT_SECONDS: '2',
  FEEDSUB_DELIVERY_TIMEOUT_SECONDS: '2',
  FEEDSUB_DELIVERY_RETRY_SCHEDULE_SECONDS: '1,1,1,1,1,1,1,1,1,1',
  FEEDSUB_LOG_LEVEL: 'warn',
};
// The waits for deliveries after the last restart: 1-second polls and retries, far from the loops' idle minute.
const WAIT_MS = 30_000;

/** SIGKILLs the server's whole process group; resolves once its port refuses connections (bounded). */
async function killServe(s: Daemon): Promise<void> {
  await s.kill();
  await until(
    () =>
      fetch(`${s.url}/healthz`).then(
        () => false,
        () => true,
      ),
    10_000,
    'the killed server to stop answering',
  );
}

type Received = { id: string; timestamp: string; signature: string; body: string };

/** A receiver that answers 200 after RESPONSE_DELAY_MS, so a delivery is in flight long enough to be killed mid-way. */
async function slowReceiver() {
  const received: Received[] = [];
  let arrival: (() => void) | undefined;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        id: String(req.headers['webhook-id']),
        timestamp: String(req.headers['webhook-timestamp']),
        signature: String(req.headers['webhook-signature']),
        body: Buffer.concat(chunks).toString('utf8'),
      });
      arrival?.();
      setTimeout(() => {
        if (!res.destroyed) res.writeHead(200).end('ok');
      }, RESPONSE_DELAY_MS);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    /** Resolves when the next delivery arrives (its answer is still RESPONSE_DELAY_MS away). */
    nextArrival(timeoutMs: number): Promise<void> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`crash: no delivery arrived within ${timeoutMs} ms`)),
          timeoutMs,
        );
        arrival = () => {
          clearTimeout(timer);
          arrival = undefined;
          resolve();
        };
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('crash safety', () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-crash-'));
  const servers: Daemon[] = [];
  let origin: Origin | undefined;
  let receiver: Awaited<ReturnType<typeof slowReceiver>> | undefined;
  let producer: NodeJS.Timeout | undefined;
  after(async () => {
    clearInterval(producer);
    await Promise.all(servers.map((s) => s.kill()));
    await receiver?.close();
    await origin?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    `delivers every new entry at least once across ${KILLS} SIGKILLs mid-delivery`,
    { timeout: 180_000 },
    async () => {
      origin = await startOrigin();
      receiver = await slowReceiver();
      const made = runCli(['keys', 'create', '--app', 'crash', '--json', '--data-dir', dir]);
      assert.equal(made.status, 0, made.stderr);
      const key = JSON.parse(made.stdout).key as string;
      // A 30-entry baseline: entries that pile up while feedsub is down stay a minority of the feed, so the GUID-churn
      // guard (most keys unseen at once) does not hold them back.
      const baseline = (p: string) =>
        Array.from({ length: 30 }, (_, i) => ({ guid: `${p}-base-${29 - i}` }));
      const items: Record<string, { guid: string }[]> = {
        '/a.xml': baseline('a'),
        '/b.xml': baseline('b'),
      };
      for (const [path, list] of Object.entries(items)) origin.set(path, { body: rss(list) });

      let daemon = await startDaemon({ dataDir: dir, env: ENV });
      servers.push(daemon);
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(daemon.url + path, {
          method,
          headers: { authorization: key, 'content-type': 'application/json' },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        return { status: res.status, body: (await res.json()) as Record<string, any> };
      };
      const endpoint = (
        await call('POST', '/v1/endpoints', { title: 'Crash receiver', url: receiver.url })
      ).body;
      const subs: Record<string, { id: string; feed: string }> = {};
      for (const path of Object.keys(items))
        subs[path] = (
          await call('POST', '/v1/subscriptions', { endpoint: endpoint.id, url: origin.url + path })
        ).body as { id: string; feed: string };
      await until(
        async () => {
          for (const s of Object.values(subs))
            if ((await call('GET', `/v1/feeds/${s.feed}`)).body.last_success_at === null)
              return false;
          return true;
        },
        20_000,
        'both baselines',
      );

      // New entries keep arriving on both feeds (one every 150 ms) until every kill is done, so there is always
      // something to deliver when the next kill is due.
      const expected: string[] = [];
      producer = setInterval(() => {
        const path = expected.length % 2 === 0 ? '/a.xml' : '/b.xml';
        const list = items[path]!;
        const guid = `${path[1]}-${list.length - 29}`;
        list.unshift({ guid });
        origin!.set(path, { body: rss(list) });
        expected.push(guid);
        if (expected.length >= MAX_ENTRIES) clearInterval(producer);
      }, 150);

      for (let kill = 0; kill < KILLS; kill++) {
        await receiver.nextArrival(30_000);
        await killServe(daemon); // the delivery that just arrived is still waiting for its answer
        daemon = await startDaemon({ dataDir: dir, env: ENV });
        servers.push(daemon);
      }
      clearInterval(producer);

      const seenGuids = () =>
        new Set(
          receiver!.received.flatMap((r) =>
            (JSON.parse(r.body) as { data: { entries: { guid: string }[] } }).data.entries.map(
              (e) => e.guid,
            ),
          ),
        );
      await until(
        () => expected.every((g) => seenGuids().has(g)),
        WAIT_MS,
        'every entry at the receiver',
      ).catch(async (err: Error) => {
        const missing = expected.filter((g) => !seenGuids().has(g));
        const feeds = await Promise.all(
          Object.values(subs).map(async (s) => (await call('GET', `/v1/feeds/${s.feed}`)).body),
        );
        const waiting = (await call('GET', '/v1/events?status=pending')).body.data;
        throw new Error(
          `${err.message}; missing ${missing.join(' ')}; feeds ${JSON.stringify(feeds)}; pending ${JSON.stringify(waiting)}; log ${servers.map((x) => x.output()).join('\n---\n')}`,
        );
      });

      // Deduplicated on webhook-id: one body per id, every signature valid, sequences 1..n per subscription.
      const byId = new Map<string, string>();
      for (const r of receiver.received) {
        assert.ok(
          verifySignature(
            endpoint.secret as string,
            r.id,
            Number(r.timestamp),
            r.body,
            r.signature,
          ),
        );
        if (byId.has(r.id))
          assert.equal(byId.get(r.id), r.body, 'a duplicate carries the same bytes');
        byId.set(r.id, r.body);
      }
      for (const s of Object.values(subs)) {
        const sequences = [...byId.values()]
          .map((b) => JSON.parse(b) as { data: { sequence: number; subscription: { id: string } } })
          .filter((b) => b.data.subscription.id === s.id)
          .map((b) => b.data.sequence)
          .sort((x, y) => x - y);
        assert.deepEqual(
          sequences,
          sequences.map((_, i) => i + 1),
          `no gap in subscription ${s.id}`,
        );
      }
      await until(
        async () => {
          const pending =
            (await call('GET', '/v1/events?status=pending')).body.data.length +
            (await call('GET', '/v1/events?status=failed')).body.data.length;
          return pending === 0;
        },
        WAIT_MS,
        'every event recorded as delivered',
      );
      const events: { id: string; status: string }[] = [];
      for (let after = '', page = 0; page < 100; page++) {
        const res = (await call('GET', `/v1/events?limit=200${after ? `&after=${after}` : ''}`))
          .body;
        events.push(...(res.data as { id: string; status: string }[]));
        if (res.next === null) break;
        after = res.next as string;
      }
      assert.ok(events.length > KILLS);
      assert.deepEqual(
        events.filter((e) => !byId.has(e.id)),
        [],
        'the receiver saw every event feedsub created',
      );
      assert.equal(await daemon.stop('SIGTERM'), 0, daemon.output()); // the server stops gracefully
      const dupes = receiver.received.length - byId.size;
      process.stdout.write(
        `# crash: ${KILLS} kills, ${byId.size} events, ${receiver.received.length} deliveries (${dupes} duplicates), ${expected.length} entries\n`,
      );
    },
  );
});
