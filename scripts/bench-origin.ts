// The benchmark's feed origin and webhook receiver, run as a separate process: N feeds of ~50 KB (half RSS, half Atom;
// 5–10 KB with `small`, for make bench-scale), with ETags, a control route to start a new round (some feeds gain
// entries) and to switch validators off (same-body path), webhook receivers /hook/<n> that answer 503 for a share of n
// (POST /_fail?share=) or only after a delay (POST /_slow?ms=), a count of the feeds fetched since a mark and of those
// fetched more than once since it, a count of the webhook-ids received more than once, and /garbage.xml:
// 10 MiB of random bytes (the memory rows).
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const count = Number(process.argv[2] ?? 1000);
const small = process.argv[3] === 'small';
const ITEMS = small ? 10 : 25;
const sentence =
  'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ';
// ~50 KB feeds by default; small ones are 5–10 KB, their size varying with the feed's number.
const fillerOf = (i: number) => sentence.repeat(small ? 3 + (i % 4) : 14);
const heads = new Array<number>(count).fill(ITEMS); // newest item number of each feed
let etags = true;
const cache = new Map<number, { body: Buffer; etag: string }>();

function render(i: number): { body: Buffer; etag: string } {
  const hit = cache.get(i);
  if (hit) return hit;
  const newest = heads[i]!;
  const nums = Array.from({ length: ITEMS }, (_, k) => newest - k);
  const date = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 3600_000);
  const filler = fillerOf(i);
  const xml =
    i % 2 === 0
      ? `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Feed ${i}</title><link>http://example.com/${i}/</link>${nums.map((n) => `<item><guid>feed-${i}-item-${n}</guid><title>Item ${n} of feed ${i}</title><link>http://example.com/${i}/${n}</link><pubDate>${date(n).toUTCString()}</pubDate><description>${filler}</description></item>`).join('')}</channel></rss>`
      : `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Feed ${i}</title><id>urn:feed:${i}</id><updated>${date(newest).toISOString()}</updated><link href="http://example.com/${i}/"/>${nums.map((n) => `<entry><id>urn:feed:${i}:${n}</id><title>Item ${n} of feed ${i}</title><link href="http://example.com/${i}/${n}"/><updated>${date(n).toISOString()}</updated><summary>${filler}</summary></entry>`).join('')}</feed>`;
  const body = Buffer.from(xml);
  const made = { body, etag: `"${createHash('sha1').update(body).digest('hex')}"` };
  cache.set(i, made);
  return made;
}

let hooks = 0;
let refused = 0;
/** Receivers /hook/<n> ranked below this answer 503: odd n rank 0-49, even n 50-99, so POST /_fail?share=0.5 fails
 *  every odd-numbered one. */
let failingBelow = 0;
/** Receivers answer this many ms after the body has arrived (POST /_slow?ms=): a node then holds its attempts. */
let slowMs = 0;
const fetched = new Map<number, number>(); // feed → fetches since the last POST /_mark
const webhookIds = new Map<string, number>(); // webhook-id → deliveries received, 204 or 503 (never cleared)
let garbage: Buffer | undefined;

/** The local webhook receivers: drain the body, answer 204 (503 while receiver `n` is set failing). */
function receive(req: IncomingMessage, res: ServerResponse, n: string | undefined): void {
  const rank = ((Number(n) + 1) % 2) * 50 + (Math.floor(Number(n) / 2) % 50);
  const fails = n !== undefined && rank < failingBelow;
  const id = String(req.headers['webhook-id']);
  req.resume();
  req.on('end', () => {
    webhookIds.set(id, (webhookIds.get(id) ?? 0) + 1);
    if (fails) refused++;
    else hooks++;
    const answer = () => res.writeHead(fails ? 503 : 204).end();
    if (slowMs > 0) setTimeout(answer, slowMs);
    else answer();
  });
}

/** A new round: the feeds the share picks gain `add` entries; how many changed. */
function newRound(url: URL): number {
  const share = Number(url.searchParams.get('change') ?? '0');
  const add = Number(url.searchParams.get('add') ?? '1');
  etags = url.searchParams.get('etags') !== '0';
  let changed = 0;
  for (let i = 0; i < count; i++) {
    if ((i * 7919) % 1000 < share * 1000) {
      heads[i]! += add;
      cache.delete(i);
      changed++;
    }
  }
  return changed;
}

/** Feed `i`: 304 when the client's ETag is current, else the document. */
function serveFeed(req: IncomingMessage, res: ServerResponse, i: number): void {
  fetched.set(i, (fetched.get(i) ?? 0) + 1);
  const { body, etag } = render(i);
  if (etags && req.headers['if-none-match'] === etag) {
    res.writeHead(304, { etag }).end();
    return;
  }
  res
    .writeHead(200, {
      'content-type': i % 2 === 0 ? 'application/rss+xml' : 'application/atom+xml',
      ...(etags ? { etag } : {}),
    })
    .end(body);
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://origin');
  const hook = /^\/hook(?:\/(\d+))?$/.exec(url.pathname);
  const route = `${req.method} ${url.pathname}`;
  if (req.method === 'POST' && hook) receive(req, res, hook[1]);
  else if (route === 'POST /_fail') {
    failingBelow = Number(url.searchParams.get('share') ?? '0') * 100;
    res.writeHead(204).end();
  } else if (route === 'GET /_refused') res.writeHead(200).end(String(refused));
  else if (route === 'GET /_hooks') res.writeHead(200).end(String(hooks));
  else if (route === 'POST /_mark') {
    fetched.clear();
    res.writeHead(204).end();
  } else if (route === 'GET /_fetched') res.writeHead(200).end(String(fetched.size));
  else if (route === 'GET /_twice')
    res.writeHead(200).end(String([...fetched.values()].filter((n) => n > 1).length));
  else if (route === 'GET /_ids')
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        ids: webhookIds.size,
        twice: [...webhookIds.values()].filter((n) => n > 1).length,
      }),
    );
  else if (route === 'GET /garbage.xml') {
    garbage ??= randomBytes(10 * 1024 * 1024);
    res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(garbage);
  } else if (route === 'POST /_round') {
    const changed = newRound(url);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ changed }));
  } else {
    const m = /^\/feeds\/(\d+)\.xml$/.exec(url.pathname);
    const i = m ? Number(m[1]) : -1;
    if (i < 0 || i >= count) res.writeHead(404).end();
    else serveFeed(req, res, i);
  }
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
