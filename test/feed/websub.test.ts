import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it, test } from 'node:test';
import { parseFeed } from '../../src/feed/parse/parse.ts';
import { pushedLimits } from '../../src/feed/schedule.ts';
import {
  advertisedLinks,
  callbackUrl,
  decideHubQuery,
  hubGetsSecret,
  linksFromHeader,
  linksFromHtml,
  renewalAt,
  requestForm,
  signatureVerifier,
  tokenMatches,
  verifyWaitSeconds,
  webSubTarget,
  type CallbackState,
  type HubQuery,
} from '../../src/feed/websub.ts';

const BASE = 'https://example.org/feeds/main.xml';

describe('hub discovery', () => {
  it('reads hub and self from Link headers, several in one field, quoted or bare rel, relative URLs', () => {
    assert.deepEqual(
      linksFromHeader('<https://hub.example/>; rel="hub", </feeds/main.xml>; rel=self', BASE),
      { hub: 'https://hub.example/', self: 'https://example.org/feeds/main.xml' },
    );
    assert.deepEqual(linksFromHeader('<https://x.example/a,b>; title="t"; rel="self hub"', BASE), {
      hub: 'https://x.example/a,b',
      self: 'https://x.example/a,b',
    });
    assert.deepEqual(linksFromHeader('<https://a.example/>; rel="alternate"', BASE), {
      hub: null,
      self: null,
    });
    assert.deepEqual(linksFromHeader('<javascript:alert(1)>; rel="hub"', BASE).hub, null);
  });

  it('reads atom:link rel="hub" and rel="self" in Atom and in RSS', () => {
    const atom = parseFeed(
      '<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title><link rel="hub" href="https://hub.example/"/><link rel="self" href="/a.xml"/></feed>',
      { baseUrl: BASE },
    );
    assert.deepEqual(
      [atom.hub_url, atom.self_url],
      ['https://hub.example/', 'https://example.org/a.xml'],
    );
    const rss = parseFeed(
      '<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel><title>T</title><atom:link rel="hub" href="https://hub.example/"/><atom:link rel="self" href="https://example.org/r.xml"/></channel></rss>',
      { baseUrl: BASE },
    );
    assert.deepEqual(
      [rss.hub_url, rss.self_url],
      ['https://hub.example/', 'https://example.org/r.xml'],
    );
  });

  it('reads <link rel="hub"> and <link rel="self"> of an HTML page, against its <base href>', () => {
    const html =
      '<html><head><base href="https://example.org/blog/"><link rel="stylesheet" href="s.css"><link rel="hub" href="https://hub.example/"><link rel="self" href="index.html"></head></html>';
    assert.deepEqual(linksFromHtml(html, 'https://example.org/'), {
      hub: 'https://hub.example/',
      self: 'https://example.org/blog/index.html',
    });
  });

  it('takes the Link headers alone when they name a hub, the document only in their absence, never a mix (§4)', () => {
    const doc = { hub: 'https://doc-hub.example/', self: 'https://example.org/doc-self' };
    assert.deepEqual(advertisedLinks('<https://h.example/>; rel="hub"', BASE, doc), {
      hub: 'https://h.example/',
      self: null,
    });
    assert.deepEqual(
      advertisedLinks('<https://h.example/>; rel="hub", </s>; rel="self"', BASE, doc),
      { hub: 'https://h.example/', self: 'https://example.org/s' },
    );
    assert.deepEqual(advertisedLinks(null, BASE, doc), doc);
    assert.deepEqual(advertisedLinks('</x.css>; rel="preload"', BASE, doc), doc);
  });

  it('subscribes to the self URL, else the fetched URL; nothing without a hub', () => {
    assert.deepEqual(webSubTarget({ hub: 'https://h/', self: null }, BASE), {
      hub: 'https://h/',
      topic: BASE,
    });
    assert.equal(webSubTarget({ hub: null, self: BASE }, BASE), null);
  });
});

describe('subscription requests and verification of intent', () => {
  it('sends hub.secret only to an https hub (§5.1: only over HTTPS)', () => {
    assert.equal(hubGetsSecret('https://hub.example/'), true);
    assert.equal(hubGetsSecret('http://hub.example/'), false);
    const form = new URLSearchParams(
      requestForm({
        mode: 'subscribe',
        topic: BASE,
        callback: 'https://me/c',
        secret: null,
        leaseSeconds: 3600,
      }),
    );
    assert.equal(form.has('hub.secret'), false);
    assert.equal(form.get('hub.lease_seconds'), '3600');
  });

  it('forms a subscribe with callback, mode, topic, lease and secret; an unsubscribe without the last two', () => {
    const r = {
      topic: BASE,
      callback: 'https://me/websub/x/y',
      secret: 's'.repeat(64),
      leaseSeconds: 864000,
    };
    const sub = new URLSearchParams(requestForm({ mode: 'subscribe', ...r }));
    assert.deepEqual(Object.fromEntries(sub), {
      'hub.callback': r.callback,
      'hub.mode': 'subscribe',
      'hub.topic': BASE,
      'hub.lease_seconds': '864000',
      'hub.secret': r.secret,
    });
    const unsub = new URLSearchParams(requestForm({ mode: 'unsubscribe', ...r }));
    assert.deepEqual([...unsub.keys()], ['hub.callback', 'hub.mode', 'hub.topic']);
  });

  const q = (over: Partial<HubQuery>): HubQuery => ({
    mode: 'subscribe',
    topic: BASE,
    challenge: 'c1',
    leaseSeconds: '3600',
    reason: undefined,
    ...over,
  });
  const pending: CallbackState = { topic: BASE, pending: 'subscribe', askedLeaseSeconds: 864_000 };
  const settled: CallbackState = { ...pending, pending: null };

  it('confirms only the pending request: same mode and topic, a challenge, and a lease on subscribe', () => {
    assert.deepEqual(decideHubQuery(pending, q({})), {
      kind: 'confirm',
      mode: 'subscribe',
      challenge: 'c1',
      leaseSeconds: 3600,
    });
    assert.equal(decideHubQuery(settled, q({})).kind, 'refuse');
    assert.equal(decideHubQuery(pending, q({ topic: 'https://other/' })).kind, 'refuse');
    assert.equal(decideHubQuery(pending, q({ mode: 'unsubscribe' })).kind, 'refuse');
    assert.equal(decideHubQuery(pending, q({ challenge: undefined })).kind, 'refuse');
    assert.equal(decideHubQuery(pending, q({ leaseSeconds: undefined })).kind, 'refuse');
    assert.equal(decideHubQuery(pending, q({ leaseSeconds: '-5' })).kind, 'refuse');
    assert.deepEqual(
      decideHubQuery(
        { ...pending, pending: 'unsubscribe' },
        q({ mode: 'unsubscribe', leaseSeconds: undefined }),
      ),
      { kind: 'confirm', mode: 'unsubscribe', challenge: 'c1', leaseSeconds: null },
    );
  });

  it('takes a granted lease longer than the one asked as the one asked', () => {
    const asked = { ...pending, askedLeaseSeconds: 7200 };
    assert.equal(decideHubQuery(asked, q({ leaseSeconds: '999999999' })).kind, 'confirm');
    assert.deepEqual(decideHubQuery(asked, q({ leaseSeconds: '999999999' })), {
      kind: 'confirm',
      mode: 'subscribe',
      challenge: 'c1',
      leaseSeconds: 7200,
    });
    assert.deepEqual(
      (decideHubQuery(asked, q({ leaseSeconds: '600' })) as { leaseSeconds: number }).leaseSeconds,
      600,
    );
  });

  it('takes a denial for its topic at any time, pending or verified, with the reason (§5.2)', () => {
    for (const state of [pending, settled])
      assert.deepEqual(decideHubQuery(state, q({ mode: 'denied', reason: 'quota' })), {
        kind: 'denied',
        reason: 'quota',
      });
    assert.equal(
      decideHubQuery(settled, q({ mode: 'denied', topic: 'https://x/' })).kind,
      'refuse',
    );
  });

  it('compares a callback token in constant time, and builds the callback URL', () => {
    const token = 'a'.repeat(43);
    assert.ok(tokenMatches(token, token));
    assert.ok(!tokenMatches(token, 'b'.repeat(43)));
    assert.ok(!tokenMatches(token, null));
    assert.ok(!tokenMatches('short', token));
    assert.equal(callbackUrl('https://me.example/', 'f1', 't'), 'https://me.example/websub/f1/t');
  });

  it('waits longer for each verification a hub accepted and never made: 10 min doubling to 6 h', () => {
    assert.deepEqual(
      [1, 2, 3, 6, 7, 40].map(verifyWaitSeconds),
      [600, 1200, 2400, 19_200, 21_600, 21_600],
    );
  });

  it('renews at 80 % of the lease, at least a minute before it ends, never before half of it', () => {
    const t = new Date('2026-01-01T00:00:00Z');
    assert.equal(renewalAt(t, 10_000).toISOString(), '2026-01-01T02:13:20.000Z');
    assert.equal(renewalAt(t, 150).toISOString(), '2026-01-01T00:01:30.000Z');
    assert.equal(renewalAt(t, 10).toISOString(), '2026-01-01T00:00:05.000Z');
  });
});

describe('X-Hub-Signature (§7.1)', () => {
  const body = Buffer.from('<feed>…</feed>');
  const sign = (alg: string, key = 'k') =>
    `${alg}=${createHmac(alg, key).update(body).digest('hex')}`;
  /** The verifier's verdict on `data`, fed in two chunks as a stream would. */
  const check = (header: string | undefined, data: Uint8Array, secret = 'k') => {
    const v = signatureVerifier(header, secret);
    if (typeof v === 'string') return v;
    v.update(data.subarray(0, 3));
    v.update(data.subarray(3));
    return v.valid() ? 'valid' : 'invalid';
  };

  for (const alg of ['sha1', 'sha256', 'sha384', 'sha512'])
    it(`accepts a right ${alg} signature, in either case, over a body in chunks`, () => {
      assert.equal(check(sign(alg), body), 'valid');
      assert.equal(check(sign(alg).toUpperCase(), body), 'valid');
    });

  it('refuses a wrong key, another body, an unknown method, garbage, and notes a missing one', () => {
    assert.equal(check(sign('sha256', 'other'), body), 'invalid');
    assert.equal(check(sign('sha256'), Buffer.from('xxxx')), 'invalid');
    assert.equal(signatureVerifier(sign('md5'), 'k'), 'invalid');
    assert.equal(signatureVerifier('sha256', 'k'), 'invalid');
    assert.equal(signatureVerifier('sha256=zz', 'k'), 'invalid');
    assert.equal(check(sign('sha256').slice(0, -2), body), 'invalid');
    assert.equal(signatureVerifier(undefined, 'k'), 'missing');
  });
});

test('while pushed, polls every max(interval × 4, push interval), within the max', () => {
  const limits = { intervalSeconds: 900, minSeconds: 60, maxSeconds: 86_400 };
  assert.deepEqual(pushedLimits(limits, 3600), {
    intervalSeconds: 3600,
    minSeconds: 3600,
    maxSeconds: 86_400,
  });
  assert.equal(pushedLimits({ ...limits, intervalSeconds: 7200 }, 3600).intervalSeconds, 28_800);
  assert.equal(pushedLimits({ ...limits, maxSeconds: 1800 }, 3600).intervalSeconds, 1800);
});
