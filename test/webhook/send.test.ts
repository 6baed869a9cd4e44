// One delivery attempt over real HTTP on 127.0.0.1: outcomes, no redirects, the 4 KiB response snippet, never throwing.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createGuardedAgent } from '../../src/net/guard.ts';
import { RESPONSE_SNIPPET_BYTES, sendWebhook } from '../../src/webhook/send.ts';
import { within } from '../support/deadline.ts';

describe('sendWebhook', () => {
  let server: Server;
  let base: string;
  const hits: string[] = [];
  const agent = createGuardedAgent({ allowPrivate: true });
  before(async () => {
    server = createServer((req, res) => {
      hits.push(req.url ?? '');
      req.resume();
      req.on('end', () => {
        if (req.url === '/ok') res.writeHead(204).end();
        else if (req.url === '/big') res.writeHead(500).end('é'.repeat(5000));
        else if (req.url === '/redirect') res.writeHead(302, { location: '/ok' }).end();
        else if (req.url === '/throttle')
          res.writeHead(429, { 'retry-after': '42' }).end('slow down');
        else if (req.url === '/drip') {
          // the status line and headers at once, then one byte of the body every 100 ms (a slow-drip receiver)
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('x');
          const timer = setInterval(() => res.write('x'), 100);
          res.on('close', () => clearInterval(timer));
        } else if (req.url === '/hang') {
          /* never answers */
        } else res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await agent.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const send = (path: string, opts: { timeoutMs?: number; url?: string; guarded?: boolean } = {}) =>
    sendWebhook({
      url: opts.url ?? base + path,
      headers: { 'content-type': 'application/json' },
      body: '{}',
      agent: opts.guarded ? createGuardedAgent({ allowPrivate: false }) : agent,
      timeoutMs: opts.timeoutMs ?? 5000,
      userAgent: 'test',
      now: () => new Date(),
    });

  it('counts a 2xx as success', async () => {
    const r = await send('/ok');
    assert.deepEqual([r.ok, r.statusCode, r.error, r.responseBody], [true, 204, null, null]);
  });

  it('keeps only the first 4 KiB of the answer', async () => {
    const r = await send('/big');
    assert.equal(r.ok, false);
    assert.equal(r.error, 'webhook: receiver answered 500');
    assert.ok(Buffer.byteLength(r.responseBody!) <= RESPONSE_SNIPPET_BYTES + 3);
    assert.ok(r.responseBody!.startsWith('ééé'));
  });

  it('treats a redirect as a failure and does not follow it', async () => {
    hits.length = 0;
    const r = await send('/redirect');
    assert.equal(r.ok, false);
    assert.equal(r.statusCode, 302);
    assert.match(r.error!, /redirects are not followed/);
    assert.deepEqual(hits, ['/redirect']);
  });

  it('reads Retry-After from a 429', async () => {
    const r = await send('/throttle');
    assert.deepEqual([r.statusCode, r.retryAfterSeconds, r.responseBody], [429, 42, 'slow down']);
  });

  it('gives up after the timeout with a clear error', async () => {
    const r = await send('/hang', { timeoutMs: 300 });
    assert.deepEqual([r.ok, r.statusCode, r.timedOut], [false, null, true]);
    assert.match(r.error!, /no answer from 127\.0\.0\.1:\d+ within 300 ms/);
  });

  it('ends an attempt whose answer drips a byte at a time at its total deadline, keeping the status', async () => {
    const r = await within(send('/drip', { timeoutMs: 500 }), 3000, 'the dripping attempt');
    assert.deepEqual([r.ok, r.statusCode, r.timedOut], [true, 200, true]);
    assert.ok(r.durationMs >= 450, `ended at its deadline, not before (${r.durationMs} ms)`);
    assert.match(r.error!, /did not end within 500 ms \(status 200 kept\)/);
    assert.match(r.responseBody!, /^x+$/);
  });

  it('reports an unreachable receiver without throwing', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const r = await send('', { url: `http://127.0.0.1:${port}/` });
    assert.equal(r.ok, false);
    assert.match(r.error!, /unable to reach 127\.0\.0\.1:\d+: ECONNREFUSED/);
  });

  it('refuses a loopback receiver when private addresses are not allowed', async () => {
    const r = await send('/ok', { guarded: true });
    assert.equal(r.ok, false);
    assert.match(r.error!, /^webhook: refused to connect to 127\.0\.0\.1:\d+/);
  });
});
