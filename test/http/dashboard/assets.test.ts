// The dashboard's stylesheet and script, its security headers, and its HTML 404 for unknown paths.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ASSET_URLS } from '../../../src/http/dashboard/assets.ts';
import { makeWorld, type World } from '../../support/world.ts';
import { Client } from './client.ts';

let w: World;
before(() => {
  w = makeWorld();
});
after(() => w.close());

describe('dashboard assets and headers', () => {
  it('serves the stylesheet and the local-time script without a session, cacheable for a year, with 304 on a matching ETag', async () => {
    for (const [url, type] of [
      [ASSET_URLS.style, 'text/css'],
      [ASSET_URLS.script, 'text/javascript'],
    ] as const) {
      const res = await w.app.request(url);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type')!, new RegExp(`^${type}`));
      assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      const etag = res.headers.get('etag')!;
      assert.ok(etag);
      assert.ok((await res.text()).length > 100);
      assert.equal((await w.app.request(url, { headers: { 'if-none-match': etag } })).status, 304);
    }
  });

  it('sends pages with a strict CSP (no inline script or style), no-store and no framing', async () => {
    const page = await new Client(w).get('/dashboard');
    assert.equal(page.headers.get('cache-control'), 'no-store');
    assert.match(
      page.headers.get('content-security-policy')!,
      /script-src 'self'; .*frame-ancestors 'none'/,
    );
    assert.doesNotMatch(
      page.text,
      /<script>|style="/,
      'no inline script or style attribute the CSP would block',
    );
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
  });

  it('answers an unknown dashboard path with the HTML 404 page', async () => {
    const c = await new Client(w).signedIn((await w.key()).key);
    const res = await c.get('/dashboard/nothing/here');
    assert.equal(res.status, 404);
    assert.match(res.headers.get('content-type')!, /^text\/html/);
    assert.match(res.text, /<h1>Not found<\/h1>/);
  });

  it('sends /dashboard/ and other trailing-slash paths to the path without it', async () => {
    const res = await w.app.request('/dashboard/');
    assert.equal(res.status, 301);
    assert.equal(res.headers.get('location'), '/dashboard');
    assert.equal(
      (await w.app.request('/dashboard/endpoints/')).headers.get('location'),
      '/dashboard/endpoints',
    );
  });

  it('shows the UTC time inside <time> so pages read right without JavaScript', async () => {
    const c = await new Client(w).signedIn((await w.key()).key);
    const page = await c.post('/dashboard/endpoints', {
      _action: 'create',
      title: 'T',
      url: 'http://127.0.0.1:9/h',
    });
    const html = (await c.get(page.location!)).text;
    assert.match(
      html,
      /<time datetime="2026-01-01T00:00:00.000Z" title="2026-01-01 00:00:00 UTC">2026-01-01 00:00:00 UTC<\/time>/,
    );
  });
});
