// Tests for fetchFeed against real local HTTP servers, and table tests for its header readers.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { brotliCompressSync, createGzip, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { request } from 'undici';
import { fetchFeed, splitCredentials } from '../../../src/feed/fetch/fetch.ts';
import type { FetchOptions, FetchRequest, FetchResult } from '../../../src/feed/fetch/fetch.ts';
import { cacheSeconds, parseRetryAfter } from '../../../src/net/headers.ts';
import { createGuardedAgent } from '../../../src/net/guard.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
const MiB = 1024 * 1024;
const NOW = new Date('2024-05-01T12:00:00.000Z');
const FEED = `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>${'<item><title>x</title></item>'.repeat(2000)}</channel></rss>`;
const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

/** A server on 127.0.0.1:0 answering from a route table; records the last request's headers per path. */
async function startServer(
  routes: Record<string, Handler>,
): Promise<{ server: Server; base: string; seen: Map<string, IncomingMessage['headers']> }> {
  const seen = new Map<string, IncomingMessage['headers']>();
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    seen.set(path, req.headers);
    const handler = routes[path] ?? routes[path.split('?')[0] ?? ''];
    if (handler === undefined) {
      res.statusCode = 404;
      res.end('not found');
      return;
    }
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

async function stopServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

const send =
  (status: number, body: string | Buffer, headers: Record<string, string> = {}): Handler =>
  (_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  };
const redirect = (status: number, location: string): Handler => send(status, '', { location });

/** gzip of `mib` MiB of zeros, compressed by streaming so the test never holds the plain bytes. */
async function gzipZeros(mib: number): Promise<Buffer> {
  const zeros = Buffer.alloc(MiB);
  const source = Readable.from(
    (function* () {
      for (let i = 0; i < mib; i++) yield zeros;
    })(),
  );
  const chunks: Buffer[] = [];
  for await (const chunk of source.pipe(createGzip())) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('fetchFeed', () => {
  let origin: Awaited<ReturnType<typeof startServer>>;
  let other: Awaited<ReturnType<typeof startServer>>;
  let agent: ReturnType<typeof createGuardedAgent>;
  let bomb: Buffer;
  const endless = { bytesWritten: 0, closed: Promise.resolve() };

  const routes: Record<string, Handler> = {
    '/feed': send(200, FEED, {
      'content-type': 'application/rss+xml; charset=utf-8',
      etag: '"v1"',
      'last-modified': 'Wed, 01 May 2024 10:00:00 GMT',
      'content-location': '/canonical.xml',
    }),
    '/conditional': (req, res) => {
      if (req.headers['if-none-match'] === '"v1"')
        return send(304, '', { 'cache-control': 'max-age=300' })(req, res);
      send(200, FEED, { etag: '"v1"' })(req, res);
    },
    '/gzip': send(200, gzipSync(FEED), { 'content-encoding': 'gzip' }),
    '/x-gzip': send(200, gzipSync(FEED), { 'content-encoding': 'x-gzip' }),
    '/br': send(200, brotliCompressSync(FEED), { 'content-encoding': 'br' }),
    '/deflate': send(200, deflateSync(FEED), { 'content-encoding': 'deflate' }),
    '/deflate-raw': send(200, deflateRawSync(FEED), { 'content-encoding': 'deflate' }),
    '/gzip-empty': send(200, '', { 'content-encoding': 'gzip' }),
    '/gzip-corrupt': send(200, Buffer.from('this is not gzip at all'), {
      'content-encoding': 'gzip',
    }),
    '/compress': send(200, 'x', { 'content-encoding': 'compress' }),
    '/bomb': (_req, res) =>
      send(200, bomb, { 'content-encoding': 'gzip', 'content-type': 'application/xml' })(_req, res),
    '/endless-gzip': (_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      const zeros = Buffer.alloc(64 * 1024);
      const source = new Readable({
        read() {
          this.push(zeros);
        },
      });
      const gzip = createGzip();
      gzip.on('data', (c: Buffer) => (endless.bytesWritten += c.length));
      endless.closed = new Promise((resolve) =>
        res.on('close', () => {
          source.destroy();
          gzip.destroy();
          resolve();
        }),
      );
      source.pipe(gzip).pipe(res);
    },
    '/big-plain': send(200, Buffer.alloc(2 * MiB, 'a')),
    '/stall': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.write('<rss>'); // and then nothing, until the client gives up
    },
    '/drip': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/xml' });
      const timer = setInterval(() => res.write('x'), 20);
      res.on('close', () => clearInterval(timer));
    },
    '/no-headers': () => {},
    '/gone': send(410, 'gone'),
    '/teapot': send(500, 'oops', { 'retry-after': '30' }),
    '/missing-location': send(302, ''),
    '/429-seconds': send(429, '', { 'retry-after': '120' }),
    '/503-date': send(503, '', { 'retry-after': 'Wed, 01 May 2024 12:01:30 GMT' }),
    '/503-plain': send(503, 'down'),
    '/429-plain': send(429, 'slow down'),
    '/max-age': send(200, 'a', { 'cache-control': 'public, s-maxage=999, max-age=600' }),
    '/max-age-age': send(200, 'a', { 'cache-control': 'max-age=600', age: '100' }),
    '/expires': send(200, 'a', { expires: 'Wed, 01 May 2024 12:05:00 GMT' }),
    '/both': send(200, 'a', {
      'cache-control': 'max-age=60',
      expires: 'Wed, 01 May 2024 13:00:00 GMT',
    }),
    '/auth': (req, res) => {
      const ok =
        req.headers.authorization === `Basic ${Buffer.from('alice:p@ss wörd').toString('base64')}`;
      send(ok ? 200 : 401, ok ? 'secret feed' : 'no')(req, res);
    },
    '/auth-same-origin': redirect(302, '/auth'),
    '/to-ftp': redirect(301, 'ftp://example.com/feed'),
    '/loop-a': redirect(301, '/loop-b'),
    '/loop-b': redirect(301, '/loop-a'),
    '/mixed-1': redirect(301, '/mixed-2'),
    '/mixed-2': redirect(302, '/mixed-3'),
    '/mixed-3': redirect(308, '/feed'),
    '/temp-307': redirect(307, '/feed'),
    '/perm-relative': redirect(308, 'sub/../feed?from=308#frag'),
  };
  // /chain/<status>/<n> redirects n times with that status before landing on /feed.
  for (const status of [301, 302, 308]) {
    for (let n = 1; n <= 12; n++)
      routes[`/chain/${status}/${n}`] = redirect(
        status,
        n === 1 ? '/feed' : `/chain/${status}/${n - 1}`,
      );
  }

  before(async () => {
    bomb = await gzipZeros(100);
    origin = await startServer(routes);
    other = await startServer({
      '/echo-auth': (req, res) => send(200, String(req.headers.authorization ?? 'none'))(req, res),
    });
    routes['/to-other-origin'] = redirect(302, `${other.base}/echo-auth`);
    agent = createGuardedAgent({ allowPrivate: true });
  });
  after(async () => {
    await agent.close();
    await stopServer(origin.server);
    await stopServer(other.server);
  });

  const get = (
    path: string,
    req: Partial<FetchRequest> = {},
    opts: Partial<FetchOptions> = {},
  ): Promise<FetchResult> =>
    fetchFeed(
      {
        url: path.startsWith('http') ? path : `${origin.base}${path}`,
        etag: null,
        lastModified: null,
        lastBodyHash: null,
        ...req,
      },
      {
        agent,
        userAgent: 'feedsub/0.1.0 (+https://github.com/feedsub/feedsub)',
        maxBodyBytes: 15 * MiB,
        now: NOW,
        ...opts,
      },
    );
  const bodyText = (r: FetchResult): string => {
    assert.equal(r.kind, 'ok', JSON.stringify(r));
    return r.kind === 'ok' ? Buffer.from(r.body).toString('utf8') : '';
  };

  describe('requests', () => {
    it('sends the identifying User-Agent, the feed Accept list and the encodings it decodes', async () => {
      await get('/feed');
      const h = origin.seen.get('/feed');
      assert.equal(h?.['user-agent'], 'feedsub/0.1.0 (+https://github.com/feedsub/feedsub)');
      assert.equal(
        h?.accept,
        'application/rss+xml, application/atom+xml, application/feed+json, application/json;q=0.9, application/xml;q=0.8, text/xml;q=0.8, text/html;q=0.7, */*;q=0.5',
      );
      assert.equal(h?.['accept-encoding'], 'br, gzip, deflate');
      assert.equal(h?.['if-none-match'], undefined);
      assert.equal(h?.authorization, undefined);
    });

    it('returns the body, its sha256 and the response metadata on a 200', async () => {
      const r = await get('/feed');
      assert.equal(bodyText(r), FEED);
      assert.ok(r.kind === 'ok');
      assert.equal(r.bodyHash, sha256(FEED));
      assert.equal(r.status, 200);
      assert.equal(r.finalUrl, `${origin.base}/feed`);
      assert.equal(r.permanentRedirectTo, null);
      assert.equal(r.etag, '"v1"');
      assert.equal(r.lastModified, 'Wed, 01 May 2024 10:00:00 GMT');
      assert.equal(r.contentType, 'application/rss+xml; charset=utf-8');
      assert.equal(r.contentLocation, `${origin.base}/canonical.xml`);
      assert.equal(r.cacheSeconds, null);
      assert.ok(r.durationMs >= 0);
    });

    it('sends the stored validators and reports a 304 as not modified, keeping validators the 304 omits', async () => {
      const r = await get('/conditional', {
        etag: '"v1"',
        lastModified: 'Wed, 01 May 2024 10:00:00 GMT',
      });
      const h = origin.seen.get('/conditional');
      assert.equal(h?.['if-none-match'], '"v1"');
      assert.equal(h?.['if-modified-since'], 'Wed, 01 May 2024 10:00:00 GMT');
      assert.equal(r.kind, 'unchanged');
      assert.ok(r.kind === 'unchanged');
      assert.equal(r.reason, 'not_modified');
      assert.equal(r.status, 304);
      assert.equal(r.etag, '"v1"');
      assert.equal(r.lastModified, 'Wed, 01 May 2024 10:00:00 GMT');
      assert.equal(r.cacheSeconds, 300);
    });

    it('reports a 200 whose body hash equals the last one as unchanged', async () => {
      const r = await get('/feed', { lastBodyHash: sha256(FEED) });
      assert.equal(r.kind, 'unchanged');
      assert.ok(r.kind === 'unchanged');
      assert.equal(r.reason, 'same_hash');
      assert.equal(r.etag, '"v1"');
    });

    it('returns the body when the last hash differs', async () => {
      const r = await get('/feed', { lastBodyHash: sha256('older') });
      assert.equal(r.kind, 'ok');
    });
  });

  describe('content codings', () => {
    it('gets compressed bytes from undici request(), so decoding (and the cap) is ours', async () => {
      const res = await request(`${origin.base}/gzip`, {
        dispatcher: agent,
        headers: { 'accept-encoding': 'gzip' },
      });
      const raw = Buffer.from(await res.body.arrayBuffer());
      assert.deepEqual([raw[0], raw[1]], [0x1f, 0x8b]);
    });

    for (const path of ['/gzip', '/x-gzip', '/br', '/deflate', '/deflate-raw']) {
      it(`decodes a ${path.slice(1)} body and hashes the decoded bytes`, async () => {
        const r = await get(path);
        assert.equal(bodyText(r), FEED);
        assert.ok(r.kind === 'ok');
        assert.equal(r.bodyHash, sha256(FEED));
      });
    }

    it('accepts an empty body labelled gzip', async () => {
      assert.equal(bodyText(await get('/gzip-empty')), '');
    });

    it('reports corrupt gzip as an http error', async () => {
      const r = await get('/gzip-corrupt');
      assert.equal(r.kind, 'error');
      assert.ok(r.kind === 'error');
      assert.equal(r.errorClass, 'http');
      assert.match(r.message, /^fetch: unable to decode gzip body: /);
    });

    it('refuses a coding it did not ask for', async () => {
      const r = await get('/compress');
      assert.ok(r.kind === 'error');
      assert.equal(r.message, 'fetch: unsupported content-encoding "compress"');
    });
  });

  describe('size cap', () => {
    it('stops a gzip bomb (100 MiB of zeros) soon after 1 MiB is decoded', async () => {
      const r = await get('/bomb', {}, { maxBodyBytes: MiB });
      assert.ok(r.kind === 'error', JSON.stringify(r));
      assert.equal(r.message, 'fetch: response exceeds 1 MiB');
      assert.equal(r.errorClass, 'http');
      assert.ok(r.durationMs < 5000, `${r.durationMs} ms`);
      process.stdout.write(
        `# gzip bomb: ${bomb.length} compressed bytes for 100 MiB; refused after ${r.durationMs} ms\n`,
      );
    });

    it('stops an endless gzip stream and closes the connection', async () => {
      const r = await get('/endless-gzip', {}, { maxBodyBytes: MiB });
      assert.ok(r.kind === 'error');
      assert.equal(r.message, 'fetch: response exceeds 1 MiB');
      await endless.closed;
      process.stdout.write(
        `# endless gzip: server produced ${endless.bytesWritten} compressed bytes before the client closed (${r.durationMs} ms)\n`,
      );
    });

    it('caps an uncompressed body too', async () => {
      const r = await get('/big-plain', {}, { maxBodyBytes: MiB });
      assert.ok(r.kind === 'error');
      assert.equal(r.message, 'fetch: response exceeds 1 MiB');
    });

    it('accepts a body exactly at the cap', async () => {
      const r = await get('/big-plain', {}, { maxBodyBytes: 2 * MiB });
      assert.equal(r.kind, 'ok');
    });
  });

  describe('timeouts', () => {
    it('aborts a body that stops sending', async () => {
      const r = await get('/stall', {}, { stallTimeoutMs: 300, totalTimeoutMs: 5000 });
      assert.ok(r.kind === 'error');
      assert.equal(r.errorClass, 'network');
      assert.equal(
        r.message,
        `fetch: response body from ${new URL(origin.base).host} stalled for 300 ms`,
      );
      assert.ok(r.durationMs >= 250 && r.durationMs < 3000, `${r.durationMs} ms`);
    });

    it('aborts a slow-drip body at the total timeout', async () => {
      const r = await get('/drip', {}, { stallTimeoutMs: 300, totalTimeoutMs: 600 });
      assert.ok(r.kind === 'error');
      assert.equal(r.errorClass, 'network');
      assert.equal(
        r.message,
        `fetch: no complete response from ${new URL(origin.base).host} within 600 ms`,
      );
      assert.ok(r.durationMs >= 550 && r.durationMs < 3000, `${r.durationMs} ms`);
    });

    it('aborts a server that never sends headers at the total timeout', async () => {
      const r = await get('/no-headers', {}, { totalTimeoutMs: 400 });
      assert.ok(r.kind === 'error');
      assert.equal(r.errorClass, 'network');
      assert.match(r.message, /within 400 ms$/);
    });

    it('reports a refused connection with the host and the error code', async () => {
      const closed = await startServer({});
      await stopServer(closed.server);
      const r = await get(`${closed.base}/feed`);
      assert.ok(r.kind === 'error');
      assert.equal(
        r.message,
        `fetch: unable to connect to ${new URL(closed.base).host}: ECONNREFUSED`,
      );
      assert.equal(r.status, null);
    });
  });

  describe('redirects', () => {
    for (const status of [301, 308]) {
      it(`reports the target of an all-${status} chain as a permanent redirect`, async () => {
        const r = await get(`/chain/${status}/3`);
        assert.equal(r.kind, 'ok');
        assert.ok(r.kind === 'ok');
        assert.equal(r.finalUrl, `${origin.base}/feed`);
        assert.equal(r.permanentRedirectTo, `${origin.base}/feed`);
      });
    }

    it('does not report a 302 chain as permanent', async () => {
      const r = await get('/chain/302/2');
      assert.ok(r.kind === 'ok');
      assert.equal(r.finalUrl, `${origin.base}/feed`);
      assert.equal(r.permanentRedirectTo, null);
    });

    it('does not report a 307 as permanent', async () => {
      const r = await get('/temp-307');
      assert.ok(r.kind === 'ok');
      assert.equal(r.permanentRedirectTo, null);
    });

    it('does not report a chain with one 302 among 301/308 as permanent', async () => {
      const r = await get('/mixed-1');
      assert.ok(r.kind === 'ok');
      assert.equal(r.finalUrl, `${origin.base}/feed`);
      assert.equal(r.permanentRedirectTo, null);
    });

    it('resolves a relative Location and drops its fragment', async () => {
      const r = await get('/perm-relative');
      assert.ok(r.kind === 'ok');
      assert.equal(r.finalUrl, `${origin.base}/feed?from=308`);
      assert.equal(r.permanentRedirectTo, `${origin.base}/feed?from=308`);
    });

    it('follows exactly 10 redirects', async () => {
      assert.equal((await get('/chain/301/10')).kind, 'ok');
    });

    it('gives up after more than 10 redirects', async () => {
      const r = await get('/chain/301/11');
      assert.ok(r.kind === 'error');
      assert.equal(r.errorClass, 'http');
      assert.equal(r.status, 301);
      assert.equal(r.message, 'fetch: more than 10 redirects');
    });

    it('honours a lower maxRedirects', async () => {
      const r = await get('/chain/302/3', {}, { maxRedirects: 2 });
      assert.ok(r.kind === 'error');
      assert.equal(r.message, 'fetch: more than 2 redirects');
    });

    it('detects a redirect loop', async () => {
      const r = await get('/loop-a');
      assert.ok(r.kind === 'error');
      assert.equal(r.message, `fetch: redirect loop at ${origin.base}/loop-a`);
      assert.equal(r.finalUrl, `${origin.base}/loop-b`);
    });

    it('refuses a redirect to a non-http scheme', async () => {
      const r = await get('/to-ftp');
      assert.ok(r.kind === 'error');
      assert.equal(r.message, 'fetch: unsupported URL scheme "ftp:"');
    });

    it('reports a redirect without Location', async () => {
      const r = await get('/missing-location');
      assert.ok(r.kind === 'error');
      assert.equal(r.status, 302);
      assert.equal(r.message, 'fetch: HTTP 302 redirect without a valid Location');
    });

    it('refuses a redirect into a private address when private addresses are not allowed', async () => {
      // The guard runs at connect time for every hop; with allowPrivate=false even the first hop is refused here,
      // and the origin records no request.
      const strict = createGuardedAgent({ allowPrivate: false });
      try {
        origin.seen.delete('/chain/301/1');
        const r = await get('/chain/301/1', {}, { agent: strict });
        assert.ok(r.kind === 'error');
        assert.match(
          r.message,
          /is private or loopback; set network\.allow_private = true to allow it$/,
        );
        assert.equal(origin.seen.has('/chain/301/1'), false);
      } finally {
        await strict.close();
      }
    });
  });

  describe('status handling', () => {
    it('reports 410 as gone', async () => {
      const r = await get('/gone');
      assert.equal(r.kind, 'gone');
      assert.equal(r.kind === 'gone' && r.status, 410);
    });

    it('reports 429 with Retry-After seconds as throttled', async () => {
      const r = await get('/429-seconds');
      assert.ok(r.kind === 'throttled');
      assert.equal(r.retryAfterSeconds, 120);
      assert.equal(r.status, 429);
    });

    it('reports 503 with a Retry-After HTTP date as throttled, relative to now', async () => {
      const r = await get('/503-date');
      assert.ok(r.kind === 'throttled');
      assert.equal(r.retryAfterSeconds, 90);
    });

    for (const path of ['/503-plain', '/429-plain']) {
      it(`reports ${path.slice(1, 4)} without Retry-After as an http error`, async () => {
        const r = await get(path);
        assert.ok(r.kind === 'error');
        assert.equal(r.errorClass, 'http');
        assert.equal(r.retryAfterSeconds, null);
        assert.equal(r.status, Number(path.slice(1, 4)));
      });
    }

    it('reports other statuses as http errors, with any Retry-After', async () => {
      const r = await get('/teapot');
      assert.ok(r.kind === 'error');
      assert.equal(
        r.message,
        `fetch: ${new URL(origin.base).host} answered HTTP 500 Internal Server Error`,
      );
      assert.equal(r.retryAfterSeconds, 30);
    });

    it('reports a 404 as an http error', async () => {
      const r = await get('/nowhere');
      assert.ok(r.kind === 'error');
      assert.equal(r.status, 404);
      assert.equal(r.errorClass, 'http');
    });
  });

  describe('freshness', () => {
    const cases: [string, number | null][] = [
      ['/max-age', 600],
      ['/max-age-age', 500],
      ['/expires', 300],
      ['/both', 60],
      ['/feed', null],
    ];
    for (const [path, expected] of cases) {
      it(`reads cacheSeconds ${String(expected)} from ${path}`, async () => {
        const r = await get(path);
        assert.ok(r.kind === 'ok');
        assert.equal(r.cacheSeconds, expected);
      });
    }
  });

  describe('credentials in the URL', () => {
    const secretUrl = (path: string): string =>
      `http://alice:p%40ss%20w%C3%B6rd@${new URL(origin.base).host}${path}`;

    it('sends them as Basic auth and keeps them out of the result', async () => {
      const r = await get(secretUrl('/auth'));
      assert.equal(bodyText(r), 'secret feed');
      assert.equal(r.finalUrl, `${origin.base}/auth`);
      assert.ok(!JSON.stringify(r).includes('alice'));
      assert.ok(!JSON.stringify(r).includes('p%40ss'));
      assert.ok(!JSON.stringify(r).includes('p@ss'));
    });

    it('keeps them out of error messages', async () => {
      const r = await get(`http://alice:wrong@${new URL(origin.base).host}/auth`);
      assert.ok(r.kind === 'error');
      assert.equal(r.status, 401);
      assert.ok(!JSON.stringify(r).includes('alice'));
      assert.ok(!JSON.stringify(r).includes('wrong'));
    });

    it('keeps sending them across a same-origin redirect', async () => {
      assert.equal(bodyText(await get(secretUrl('/auth-same-origin'))), 'secret feed');
    });

    it('does not forward them to another origin', async () => {
      const r = await get(secretUrl('/to-other-origin'));
      assert.equal(bodyText(r), 'none');
      assert.equal(r.kind === 'ok' && r.finalUrl, `${other.base}/echo-auth`);
    });
  });
});

describe('splitCredentials', () => {
  const cases: [string, string, string | null][] = [
    ['https://example.com/feed', 'https://example.com/feed', null],
    [
      'https://user:pass@example.com/feed',
      'https://example.com/feed',
      `Basic ${Buffer.from('user:pass').toString('base64')}`,
    ],
    [
      'https://user@example.com/feed',
      'https://example.com/feed',
      `Basic ${Buffer.from('user:').toString('base64')}`,
    ],
    [
      'https://u%C3%A9:p%40ss%3A@example.com/',
      'https://example.com/',
      `Basic ${Buffer.from('ué:p@ss:').toString('base64')}`,
    ],
    [
      'https://u:%ZZ@example.com/',
      'https://example.com/',
      `Basic ${Buffer.from('u:%ZZ').toString('base64')}`,
    ],
    ['not a url', 'not a url', null],
  ];
  for (const [input, url, authorization] of cases) {
    it(`splits ${input}`, () => {
      assert.deepEqual(splitCredentials(input), { url, authorization });
    });
  }
});

describe('parseRetryAfter', () => {
  const cases: [string | null, number | null][] = [
    [null, null],
    ['120', 120],
    ['0', 0],
    [' 45 ', 45],
    ['Wed, 01 May 2024 12:01:30 GMT', 90],
    ['Wednesday, 01-May-24 12:01:30 GMT', 90],
    ['Wed May  1 12:01:30 2024', 90],
    ['Wed, 01 May 2024 11:00:00 GMT', 0],
    ['-5', null],
    ['1.5', null],
    ['soon', null],
    ['', null],
  ];
  for (const [value, expected] of cases) {
    it(`reads ${JSON.stringify(value)} as ${String(expected)}`, () => {
      assert.equal(parseRetryAfter(value, NOW), expected);
    });
  }
});

describe('cacheSeconds', () => {
  const cases: [Record<string, string>, number | null][] = [
    [{}, null],
    [{ 'cache-control': 'max-age=600' }, 600],
    [{ 'cache-control': 'MAX-AGE="60"' }, 60],
    [{ 'cache-control': 's-maxage=900' }, null],
    [{ 'cache-control': 'no-cache, max-age=0' }, 0],
    [{ 'cache-control': 'max-age=600', age: '700' }, 0],
    [{ 'cache-control': 'private' }, null],
    [{ 'cache-control': 'max-age=abc', expires: 'Wed, 01 May 2024 12:10:00 GMT' }, 600],
    [{ expires: 'Wed, 01 May 2024 12:10:00 GMT' }, 600],
    [{ expires: 'Wed, 01 May 2024 11:10:00 GMT' }, 0],
    [{ expires: '0' }, 0],
    [{ 'cache-control': 'max-age=30', expires: 'Wed, 01 May 2024 12:10:00 GMT' }, 30],
  ];
  for (const [headers, expected] of cases) {
    it(`reads ${JSON.stringify(headers)} as ${String(expected)}`, () => {
      assert.equal(cacheSeconds(headers, NOW), expected);
    });
  }
});
