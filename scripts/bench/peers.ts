// The peers of the isolation phases, in the bench process on 127.0.0.1: an origin whose feeds gain an entry on every
// fetch (small ones, 1 MiB ones, ones whose newest entry is 1 MiB, and ones answering after 20 s), a receiver that times each delivery, and receivers
// that send their headers and then drip a byte every 5 s. Every timer is cleared and every socket closed by close().
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How long a slow feed takes to answer, and how a dripping receiver drips (a byte per DRIP_MS, at most DRIP_BYTES). */
export const SLOW_MS = 20_000;
const DRIP_MS = 5_000;
const DRIP_BYTES = 24; // 2 minutes, longer than any attempt's deadline; close() ends it sooner
const BIG_ITEMS = 200; // of ~5 KiB each: a 1 MiB document
const SMALL_ITEMS = 10;
/** The newest item's text in a feed under /huge/: the input catastrophic patterns are known for. */
const HUGE_TEXT = 'a'.repeat(512 * 1024) + 'x'.repeat(512 * 1024);

/** Feeds under /small/, /slow/, /big/ and /huge/ (any name after it); each fetch adds one entry to the feed it names. */
export type ChangingOrigin = {
  url: string;
  /** Start times (ms since the epoch) of every fetch of each path. */
  fetches: Map<string, number[]>;
  /** Slow fetches waiting now, and the most that ever waited at once. */
  slow: { waiting: number; most: number };
  close: () => Promise<void>;
};

/** The origin of the isolation phases. */
export async function changingOrigin(): Promise<ChangingOrigin> {
  const fetches = new Map<string, number[]>();
  const slow = { waiting: 0, most: 0 };
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://origin').pathname;
    const kind = /^\/(small|slow|big|huge)\//.exec(path)?.[1];
    if (req.method !== 'GET' || !kind) return void res.writeHead(404).end();
    const times = fetches.get(path) ?? [];
    fetches.set(path, times);
    times.push(Date.now());
    const items = kind === 'big' ? BIG_ITEMS : SMALL_ITEMS;
    const body = feedXml(path, items + times.length, items, kind); // full from the first fetch, one more on each
    const answer = () => res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(body);
    if (kind !== 'slow') return answer();
    slow.waiting++;
    slow.most = Math.max(slow.most, slow.waiting);
    const timer = setTimeout(() => {
      timers.delete(timer);
      slow.waiting--;
      answer();
    }, SLOW_MS);
    timers.add(timer);
    res.once('close', () => {
      if (!timers.delete(timer)) return;
      clearTimeout(timer);
      slow.waiting--;
    });
  });
  const url = await listen(server);
  return {
    url,
    fetches,
    slow,
    close: () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      return closeServer(server);
    },
  };
}

/** An RSS document whose newest item is number `newest`, `items` items in all; big ones carry ~5 KiB of text each, and
 *  a huge one's newest item 1 MiB (HUGE_TEXT). */
function feedXml(path: string, newest: number, items: number, kind: string): string {
  const text =
    kind === 'big' ? 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(90) : 'x';
  const list = Array.from({ length: items }, (_, k) => newest - k)
    .map(
      (n, k) =>
        `<item><guid>${path}#${n}</guid><title>Item ${n}</title><link>http://example.com${path}/${n}</link><description>${kind === 'huge' && k === 0 ? HUGE_TEXT : text}</description></item>`,
    )
    .join('');
  return `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>${path}</title><link>http://example.com/</link>${list}</channel></rss>`;
}

/** A receiver answering 204 to every POST and recording, per entries event, the ms from its `timestamp` (when the event
 *  was created) to its arrival. */
export type TimingReceiver = { url: string; latencies: number[]; close: () => Promise<void> };

/** The healthy application's receiver. */
export async function timingReceiver(): Promise<TimingReceiver> {
  const latencies: number[] = [];
  const server = createServer((req, res) => {
    const arrived = Date.now();
    readSmall(req, (body) => {
      try {
        const event = JSON.parse(body) as { type?: string; timestamp?: string };
        if (event.type === 'subscription.entries' && event.timestamp)
          latencies.push(arrived - Date.parse(event.timestamp));
      } catch {
        /* not JSON: not ours to time */
      }
      res.writeHead(204).end();
    });
  });
  const url = await listen(server);
  return { url, latencies, close: () => closeServer(server) };
}

/** Receivers that answer 200 and its headers at once, then a byte of body every 5 s. */
export type DripReceivers = {
  urls: string[];
  /** Requests dripping now, and the most that ever dripped at once. */
  dripping: { now: number; most: number };
  close: () => Promise<void>;
};

/** `count` dripping receivers, each on its own port. */
export async function dripReceivers(count: number): Promise<DripReceivers> {
  const dripping = { now: 0, most: 0 };
  const timers = new Set<NodeJS.Timeout>();
  const drip = (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.flushHeaders();
    dripping.now++;
    dripping.most = Math.max(dripping.most, dripping.now);
    let sent = 0;
    const timer = setInterval(() => {
      if (++sent < DRIP_BYTES) return void res.write('.');
      res.end();
    }, DRIP_MS);
    timers.add(timer);
    res.once('close', () => {
      clearInterval(timer);
      timers.delete(timer);
      dripping.now--;
    });
  };
  const servers = Array.from({ length: count }, () => createServer(drip));
  const urls = await Promise.all(servers.map((s) => listen(s)));
  return {
    urls: urls.map((u) => `${u}/hook`),
    dripping,
    close: async () => {
      for (const t of timers) clearInterval(t);
      timers.clear();
      await Promise.all(servers.map(closeServer));
    },
  };
}

// Reads a request body of at most 1 MiB (the rest is dropped) and calls `done` with it.
function readSmall(req: IncomingMessage, done: (body: string) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (c: Buffer) => {
    size += c.length;
    if (size <= 1024 * 1024) chunks.push(c);
  });
  req.on('end', () => done(Buffer.concat(chunks).toString()));
}

async function listen(server: Server): Promise<string> {
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
