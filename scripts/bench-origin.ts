// The benchmark's feed origin and webhook receiver, run as a separate process: N feeds of ~50 KB (half RSS, half Atom;
// 5–10 KB with `small`, for make bench-scale), with ETags, a control route to start a new round (some feeds gain
// entries) and to switch validators off (same-body path), webhook receivers /hook/<n> that answer 503 for a share of n
// (POST /_fail?share=), a count of the feeds fetched since a mark, and /garbage.xml:
// 10 MiB of random bytes (the memory rows).
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
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
/** Receivers /hook/<n> with n % 100 below this answer 503 (POST /_fail?share=0.5: every odd-numbered one). */
let failingBelow = 0;
const fetched = new Set<number>(); // feeds fetched since the last POST /_mark
let garbage: Buffer | undefined;
const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://origin');
  const hook = /^\/hook(?:\/(\d+))?$/.exec(url.pathname);
  if (req.method === 'POST' && hook) {
    // the local webhook receivers: drain the body, answer 204 (or 503 while this one is set failing)
    const n = Number(hook[1] ?? 0);
    const fails =
      hook[1] !== undefined && ((n + 1) % 2) * 50 + (Math.floor(n / 2) % 50) < failingBelow;
    req.resume();
    req.on('end', () => {
      if (fails) refused++;
      else hooks++;
      res.writeHead(fails ? 503 : 204).end();
    });
    return;
  }
  if (req.method === 'POST' && url.pathname === '/_fail') {
    failingBelow = Number(url.searchParams.get('share') ?? '0') * 100;
    res.writeHead(204).end();
    return;
  }
  if (req.method === 'GET' && url.pathname === '/_refused') {
    res.writeHead(200).end(String(refused));
    return;
  }
  if (req.method === 'GET' && url.pathname === '/_hooks') {
    res.writeHead(200).end(String(hooks));
    return;
  }
  if (req.method === 'POST' && url.pathname === '/_mark') {
    fetched.clear();
    res.writeHead(204).end();
    return;
  }
  if (req.method === 'GET' && url.pathname === '/_fetched') {
    res.writeHead(200).end(String(fetched.size));
    return;
  }
  if (req.method === 'GET' && url.pathname === '/garbage.xml') {
    garbage ??= randomBytes(10 * 1024 * 1024);
    res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(garbage);
    return;
  }
  if (req.method === 'POST' && url.pathname === '/_round') {
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
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ changed }));
    return;
  }
  const m = /^\/feeds\/(\d+)\.xml$/.exec(url.pathname);
  const i = m ? Number(m[1]) : -1;
  if (i < 0 || i >= count) {
    res.writeHead(404).end();
    return;
  }
  fetched.add(i);
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
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
