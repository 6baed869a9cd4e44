// Local test servers on 127.0.0.1: a feed origin serving documents we set, and a webhook receiver recording deliveries.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type OriginFeed = {
  body: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
  status?: number;
  etag?: boolean;
};
export type Origin = {
  url: string;
  /** Serves `feed` at `path` (with an ETag derived from the body, honouring If-None-Match). */
  set(path: string, feed: OriginFeed): void;
  /** Answers the next requests for `path` with `feeds` in turn (a feed that fails N times, then recovers…); the last
   *  one keeps answering. A later set() replaces the script. */
  script(path: string, feeds: OriginFeed[]): void;
  /** Holds the next request for `path` until `release()`, then answers with what was served when it came; `arrived`
   *  resolves when it comes. */
  hold(path: string): { arrived: Promise<void>; release: () => void };
  /** Every request, with when it arrived (performance.now()). */
  requests: { path: string; headers: IncomingMessage['headers']; at: number }[];
  close(): Promise<void>;
};

/** Starts a feed origin on 127.0.0.1 with a free port. */
export async function startOrigin(): Promise<Origin> {
  const feeds = new Map<string, OriginFeed>();
  const scripts = new Map<string, OriginFeed[]>();
  const requests: Origin['requests'] = [];
  const holds = new Map<string, { arrived: () => void; released: Promise<void> }>();
  const server = createServer(async (req, res) => {
    requests.push({ path: req.url ?? '/', headers: req.headers, at: performance.now() });
    const path = (req.url ?? '/').split('?')[0]!;
    const script = scripts.get(path);
    if (script && script.length > 1) feeds.set(path, script.shift()!);
    else if (script) feeds.set(path, script[0]!);
    const feed = feeds.get(path);
    const held = holds.get(path);
    if (held) {
      // answers with what it served when the request came
      holds.delete(path);
      held.arrived();
      await held.released;
    }
    if (!feed) {
      res.writeHead(404).end('not found');
      return;
    }
    const body = typeof feed.body === 'string' ? Buffer.from(feed.body) : feed.body;
    const etag = feed.etag === false ? undefined : `"${hashOf(body)}"`;
    if (etag && (feed.status ?? 200) === 200 && req.headers['if-none-match'] === etag) {
      res.writeHead(304, { etag }).end();
      return;
    }
    res.writeHead(feed.status ?? 200, {
      'content-type': feed.contentType ?? 'application/rss+xml',
      ...(etag ? { etag } : {}),
      ...feed.headers,
    });
    res.end(body);
  });
  const url = await listen(server);
  return {
    url,
    set: (path, feed) => {
      scripts.delete(path);
      feeds.set(path, feed);
    },
    script: (path, list) => {
      scripts.set(path, [...list]);
    },
    hold: (path) => {
      let arrived!: () => void;
      let release!: () => void;
      const came = new Promise<void>((resolve) => (arrived = resolve));
      holds.set(path, { arrived, released: new Promise<void>((resolve) => (release = resolve)) });
      return { arrived: came, release };
    },
    requests,
    close: () => close(server),
  };
}

export type Delivery = {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  headers: IncomingMessage['headers'];
};
export type Receiver = {
  url: string;
  deliveries: Delivery[];
  /** Decides the next responses: a queue of statuses (then 200), or a function. */
  respond(
    plan:
      | number[]
      | ((
          d: Delivery,
          n: number,
        ) => { status: number; headers?: Record<string, string>; body?: string }),
  ): void;
  /** Resolves when at least `n` deliveries have arrived (bounded by timeoutMs). */
  waitFor(n: number, timeoutMs?: number): Promise<Delivery[]>;
  close(): Promise<void>;
};

/** Starts a webhook receiver on 127.0.0.1 that records every POST. */
export async function startReceiver(): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  let plan:
    | number[]
    | ((
        d: Delivery,
        n: number,
      ) => { status: number; headers?: Record<string, string>; body?: string }) = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const d: Delivery = {
        id: String(req.headers['webhook-id'] ?? ''),
        timestamp: String(req.headers['webhook-timestamp'] ?? ''),
        signature: String(req.headers['webhook-signature'] ?? ''),
        body: Buffer.concat(chunks).toString('utf8'),
        headers: req.headers,
      };
      deliveries.push(d);
      const answer =
        typeof plan === 'function' ? plan(d, deliveries.length) : { status: plan.shift() ?? 200 };
      res.writeHead(answer.status, answer.headers ?? {}).end(answer.body ?? 'ok');
      for (const w of [...waiters])
        if (deliveries.length >= w.n) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
    });
  });
  const url = await listen(server);
  return {
    url,
    deliveries,
    respond(p) {
      plan = p;
    },
    waitFor(n, timeoutMs = 10_000) {
      if (deliveries.length >= n) return Promise.resolve(deliveries);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `receiver: expected ${n} deliveries within ${timeoutMs} ms, got ${deliveries.length}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve(deliveries);
          },
        });
      });
    },
    close: () => close(server),
  };
}

/** A receiver on 127.0.0.1 whose mode may change: 'ok' answers 204 at once; 'hang' never answers; 'drip' sends a 200
 *  status line and headers at once, then one byte of its body every 200 ms until the connection closes. Counts the
 *  requests received, those held open now, and the most held open at once. */
export async function startModalReceiver(mode: 'ok' | 'hang' | 'drip') {
  const state = { mode, open: 0, max: 0, received: 0 };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.received += 1;
      if (state.mode === 'ok') return void res.writeHead(204).end();
      state.open += 1;
      state.max = Math.max(state.max, state.open);
      res.on('close', () => (state.open -= 1));
      if (state.mode === 'drip') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('.'), 200);
        res.on('close', () => clearInterval(timer));
      }
    });
  });
  const url = await listen(server);
  return { url, state, close: () => close(server) };
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

function hashOf(body: Buffer): string {
  let h = 0;
  for (const byte of body) h = (h * 31 + byte) >>> 0;
  return h.toString(16) + '-' + body.length;
}

/** A small RSS 2.0 document with the given items (newest first). */
export function rss(
  items: { guid: string; title?: string; link?: string; pubDate?: string }[],
  title = 'Test feed',
): string {
  const body = items
    .map(
      (i) =>
        `<item><guid>${i.guid}</guid><title>${i.title ?? i.guid}</title>${i.link ? `<link>${i.link}</link>` : ''}${i.pubDate ? `<pubDate>${i.pubDate}</pubDate>` : ''}</item>`,
    )
    .join('');
  return `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>${title}</title><link>http://example.com/</link>${body}</channel></rss>`;
}
