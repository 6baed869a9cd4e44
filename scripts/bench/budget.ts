// make bench, the storage budget rows: one hostile tenant against the real `feedsub serve`, polled every second — a
// feed whose 2,000 entries change ids on every fetch and a feed adding 50 new entries of ~1 KB of text on every
// fetch — first without a budget, then with one; the database's growth (db + WAL) and what the tenant keeps.
import { statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startServe } from './daemon.ts';
import type { Row } from './table.ts';

const SECONDS = 45;
const BUDGET_MiB = 4;
const MiB = 1024 * 1024;
const TEXT =
  'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore. ';

/** Both runs, each with a daemon and data directory of its own under `dir`. */
export async function measureHostileTenant(dir: string, row: Row): Promise<void> {
  const peers = await hostilePeers();
  try {
    for (const budget of [0, BUDGET_MiB * MiB]) {
      const name = budget === 0 ? 'without a budget' : `budget ${BUDGET_MiB} MiB`;
      const r = await run(join(dir, `budget-${budget}`), peers, budget);
      row(
        `hostile tenant, ${SECONDS} s, ${name}`,
        `+${(r.grewBytes / MiB).toFixed(1)} MiB`,
        `db + WAL (WAL ${(r.walBytes / MiB).toFixed(1)} MiB at the end); the tenant keeps ${(r.usedBytes / MiB).toFixed(1)} MiB; feeds ${r.statuses}; ${r.fetches} fetches; a churning feed of 2,000 entries and one adding 50 a fetch, each polled every second`,
      );
    }
  } finally {
    await peers.close();
  }
}

type Peers = { url: string; receiver: string; fetches: () => number; close: () => Promise<void> };

async function run(
  dir: string,
  peers: Peers,
  budget: number,
): Promise<{
  grewBytes: number;
  walBytes: number;
  usedBytes: number;
  fetches: number;
  statuses: string;
}> {
  const serve = await startServe(
    dir,
    {
      network: { allow_private: true },
      poll: { interval_seconds: 1, min_interval_seconds: 1, max_interval_seconds: 1 },
      quotas: { storage_bytes_per_application: budget },
      log: { level: 'warn' },
    },
    ['hostile'],
  );
  const file = join(dir, 'data', 'feedsub.db');
  const size = () => sizeOf(file) + sizeOf(`${file}-wal`);
  try {
    const t = serve.tenants.hostile!;
    const ep = (await t.post('/v1/endpoints', { title: 'h', url: peers.receiver })).body as {
      id: string;
    };
    const before = size();
    const fetched = peers.fetches();
    for (const path of ['/churn.xml', '/fresh.xml'])
      await t.post('/v1/subscriptions', { endpoint: ep.id, url: `${peers.url}${path}?${budget}` });
    await sleep(SECONDS * 1000);
    const storage = (await t.get('/v1/storage')).body as { used_bytes: number };
    const feeds = (await t.get('/v1/feeds')).body as { data: { url: string; status: string }[] };
    return {
      statuses: feeds.data
        .map((f) => `${new URL(f.url).pathname.slice(1, -4)} ${f.status}`)
        .sort()
        .join(', '),
      grewBytes: size() - before,
      walBytes: sizeOf(`${file}-wal`),
      usedBytes: storage.used_bytes,
      fetches: peers.fetches() - fetched,
    };
  } finally {
    await serve.stop();
  }
}

/** The hostile origin (/churn.xml, /fresh.xml, any query) and a receiver answering 204 at once. */
async function hostilePeers(): Promise<Peers> {
  let fetches = 0;
  const fresh = new Map<string, { seq: number; items: string[] }>();
  const origin = createServer((req, res) => {
    fetches++;
    const url = req.url ?? '/';
    let items: string[];
    if (url.startsWith('/churn.xml')) {
      items = Array.from(
        { length: 2000 },
        (_, i) =>
          `<item><guid>r${fetches}-${i}</guid><title>Item ${i} of fetch ${fetches}</title><link>http://example.com/${fetches}/${i}</link><description>${TEXT}</description></item>`,
      );
    } else {
      const f = fresh.get(url) ?? { seq: 0, items: [] };
      fresh.set(url, f);
      for (let i = 0; i < 50; i++) {
        const n = ++f.seq;
        f.items.unshift(
          `<item><guid>n${n}</guid><title>New entry ${n}</title><link>http://example.com/n/${n}</link><description>${TEXT.repeat(10)}</description></item>`,
        );
      }
      f.items.length = Math.min(f.items.length, 100);
      items = f.items;
    }
    res
      .writeHead(200, { 'content-type': 'application/rss+xml' })
      .end(
        `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Hostile</title><link>http://example.com/</link>${items.join('')}</channel></rss>`,
      );
  });
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  const listen = (s: Server) =>
    new Promise<string>((resolve) =>
      s.listen(0, '127.0.0.1', () =>
        resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}`),
      ),
    );
  const url = await listen(origin);
  const hook = await listen(receiver);
  const close = (s: Server) =>
    new Promise<void>((resolve) => {
      s.closeAllConnections();
      s.close(() => resolve());
    });
  return {
    url,
    receiver: `${hook}/hook`,
    fetches: () => fetches,
    close: async () => {
      await close(origin);
      await close(receiver);
    },
  };
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}
