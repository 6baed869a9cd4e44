// Dashboard sign-in, sessions and sign-out through app.request(): cookies, the sign-in token, idle expiry, revocation, rate limit.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { hashKey, revokeKey } from '../../../src/actions/keys.ts';
import { makeWorld, type World } from '../../support/world.ts';
import { assertLabelled, Client, errorBeside, hidden } from './client.ts';

let w: World;
before(() => {
  w = makeWorld();
});
after(() => w.close());

const keyIdOf = async (key: string) =>
  (await w.ctx.db.column('SELECT id FROM api_keys WHERE hash = ?', [hashKey(key)]))[0] as string;

describe('dashboard sign-in', () => {
  it('shows a labelled key field and sets an HttpOnly SameSite=Strict sign-in cookie scoped to /dashboard', async () => {
    const page = await new Client(w).get('/dashboard');
    assert.equal(page.status, 200);
    assert.match(page.text, /^<!doctype html>/);
    assert.match(page.text, /<label for="f-key">API key<\/label>/);
    assertLabelled(page.text);
    const cookie = page.setCookies.find((c) => c.startsWith('feedsub_signin='));
    assert.ok(cookie);
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    assert.match(cookie, /Path=\/dashboard/);
    assert.doesNotMatch(cookie, /Secure/);
  });

  it('signs in with a live key: a session cookie, then the overview names the application', async () => {
    const { key } = await w.key('acme');
    const c = new Client(w);
    const res = await c.signIn(key);
    assert.equal(res.status, 303);
    assert.equal(res.location, '/dashboard');
    const cookie = res.setCookies.find((x) => x.startsWith('feedsub_session='))!;
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    assert.match(cookie, /Path=\/dashboard/);
    const stored = (await w.ctx.db.column('SELECT id_hash FROM sessions')) as string[];
    const token = c.cookies.get('feedsub_session')!;
    assert.ok(!stored.includes(token), 'the cookie value itself is never stored');
    assert.ok(stored.includes(createHash('sha256').update(token).digest('hex')));
    const overview = await c.get('/dashboard');
    assert.match(overview.text, /Application <strong>acme<\/strong>/);
    assert.match(overview.text, /<h1>Overview<\/h1>/);
  });

  it('marks cookies Secure over https and when server.public_url is https', async () => {
    const { key } = await w.key();
    const https = await new Client(w, { origin: 'https://feeds.example' }).signIn(key);
    assert.match(
      https.setCookies.find((x) => x.startsWith('feedsub_session='))!,
      /Secure/,
    );
    const pw = makeWorld({ server: { public_url: 'https://feeds.example' } });
    try {
      const res = await new Client(pw).signIn((await pw.key()).key);
      assert.match(
        res.setCookies.find((x) => x.startsWith('feedsub_session='))!,
        /Secure/,
      );
    } finally {
      await pw.close();
    }
  });

  it('refuses an unknown key with the error beside the field and no session', async () => {
    const c = new Client(w, { address: '198.51.100.7' });
    const res = await c.signIn('fsk_not-a-real-key');
    assert.equal(res.status, 401);
    assert.equal(errorBeside(res.text, 'f-key'), 'is not a live API key (unknown or revoked)');
    assert.ok(!c.cookies.has('feedsub_session'));
    assert.doesNotMatch(res.text, /fsk_not-a-real-key/, 'the typed key is not echoed back');
  });

  it('refuses a sign-in POST without the sign-in cookie, with a forged token, or after the form expired', async () => {
    const { key } = await w.key();
    const c = new Client(w, { address: '198.51.100.8' });
    const form = await c.get('/dashboard');
    const token = hidden(form.text, '_login');
    const noCookie = new Client(w, { address: '198.51.100.8' });
    assert.equal(
      (await noCookie.post('/dashboard', { _action: 'signin', _login: token, key }, { csrf: null }))
        .status,
      403,
    );
    const forged = `${Date.now()}.abc.def`;
    c.cookies.set('feedsub_signin', forged);
    assert.equal(
      (await c.post('/dashboard', { _action: 'signin', _login: forged, key }, { csrf: null }))
        .status,
      403,
    );
    const fresh = new Client(w, { address: '198.51.100.8' });
    const page = await fresh.get('/dashboard');
    w.clock.advance(31 * 60_000);
    const late = await fresh.post(
      '/dashboard',
      { _action: 'signin', _login: hidden(page.text, '_login'), key },
      { csrf: null },
    );
    assert.equal(late.status, 403);
    assert.match(late.text, /expired/);
    assert.ok(!fresh.cookies.has('feedsub_session'));
  });

  it('returns to the page asked for, and never to another site', async () => {
    const { key } = await w.key();
    const c = new Client(w);
    const bounced = await c.get('/dashboard/endpoints');
    assert.equal(bounced.status, 303);
    assert.equal(bounced.location, '/dashboard?next=%2Fdashboard%2Fendpoints');
    assert.equal((await c.signIn(key, '/dashboard/endpoints')).location, '/dashboard/endpoints');
    const evil = new Client(w);
    assert.equal((await evil.signIn(key, 'https://evil.example/')).location, '/dashboard');
  });
});

describe('dashboard sessions', () => {
  it('signs out with the CSRF token: the session row and cookie are gone', async () => {
    const c = await new Client(w).signedIn((await w.key()).key);
    const before = (await w.ctx.db.column('SELECT count(*) FROM sessions'))[0] as number;
    const res = await c.post('/dashboard', { _action: 'signout' });
    assert.equal(res.status, 303);
    assert.equal(res.location, '/dashboard?notice=signed-out');
    assert.ok(!c.cookies.has('feedsub_session'));
    assert.equal((await w.ctx.db.column('SELECT count(*) FROM sessions'))[0], before - 1);
    assert.equal((await c.get('/dashboard/endpoints')).status, 303);
  });

  it('keeps the session when sign-out comes without the right CSRF token', async () => {
    const c = await new Client(w).signedIn((await w.key()).key);
    assert.equal(
      (await c.post('/dashboard', { _action: 'signout' }, { csrf: 'wrong' })).status,
      403,
    );
    assert.equal((await c.post('/dashboard', { _action: 'signout' }, { csrf: null })).status, 403);
    assert.equal((await c.get('/dashboard/endpoints')).status, 200);
  });

  it('expires after dashboard.session_idle_minutes without activity, and activity keeps it alive', async () => {
    const iw = makeWorld({ dashboard: { session_idle_minutes: 10 } });
    try {
      const c = await new Client(iw).signedIn((await iw.key()).key);
      for (let i = 0; i < 3; i++) {
        iw.clock.advance(8 * 60_000);
        assert.equal(
          (await c.get('/dashboard/endpoints')).status,
          200,
          `still signed in after ${(i + 1) * 8} minutes of activity`,
        );
      }
      iw.clock.advance(10 * 60_000 + 1);
      const res = await c.get('/dashboard/endpoints');
      assert.equal(res.status, 303);
      assert.ok(!c.cookies.has('feedsub_session'), 'the dead cookie is cleared');
    } finally {
      await iw.close();
    }
  });

  it('ends when its key is revoked, also when the session row survives the revocation', async () => {
    const { key } = await w.key();
    const c = await new Client(w).signedIn(key);
    assert.ok(await revokeKey(w.ctx, await keyIdOf(key)));
    assert.equal((await c.get('/dashboard/endpoints')).status, 303);

    const other = await w.key();
    const d = await new Client(w).signedIn(other.key);
    await w.ctx.db.run('UPDATE api_keys SET revoked_at = ? WHERE id = ?', [
      w.clock.now().toISOString(),
      await keyIdOf(other.key),
    ]);
    assert.equal((await d.get('/dashboard/endpoints')).status, 303);
    assert.equal((await d.signIn(other.key)).status, 401);
  });
});

describe('dashboard sign-in limit on wrong keys', () => {
  it('answers wrong keys 429 with Retry-After after 10 failures from one address, lets other addresses in, and refills', async () => {
    const rw = makeWorld();
    try {
      const attacker = new Client(rw, { address: '203.0.113.9' });
      for (let i = 0; i < 10; i++)
        assert.equal((await attacker.signIn(`fsk_guess${i}`)).status, 401);
      const blocked = await attacker.signIn('fsk_guess10');
      assert.equal(blocked.status, 429);
      assert.equal(blocked.headers.get('retry-after'), '60');
      assert.match(blocked.text, /Too many wrong keys came from your address/);
      assert.equal(
        errorBeside(blocked.text, 'f-key'),
        'is not a live API key (unknown or revoked)',
      );
      assert.ok(hidden(blocked.text, '_login'), 'the form is shown again, ready for the right key');
      assert.equal(
        (await new Client(rw, { address: '203.0.113.10' }).signIn('fsk_other')).status,
        401,
      );
      rw.clock.advance(60_000);
      assert.equal(
        (await attacker.signIn('fsk_guess11')).status,
        401,
        'one more try a minute later',
      );
      assert.equal((await attacker.signIn('fsk_guess12')).status, 429);
    } finally {
      await rw.close();
    }
  });

  it('signs in with a valid key from an address that has spent its failures', async () => {
    const rw = makeWorld();
    try {
      const { key } = await rw.key('acme');
      const shared = new Client(rw, { address: '203.0.113.9' });
      for (let i = 0; i < 12; i++) await shared.signIn(`fsk_guess${i}`);
      assert.equal((await shared.signIn('fsk_guess')).status, 429);
      const colleague = new Client(rw, { address: '203.0.113.9' });
      const res = await colleague.signIn(key);
      assert.equal(res.status, 303);
      assert.match((await colleague.get('/dashboard')).text, /Application <strong>acme<\/strong>/);
    } finally {
      await rw.close();
    }
  });

  it('does not count successful sign-ins', async () => {
    const rw = makeWorld();
    try {
      const { key } = await rw.key();
      for (let i = 0; i < 15; i++)
        assert.equal((await new Client(rw, { address: '203.0.113.11' }).signIn(key)).status, 303);
      assert.equal(
        (await new Client(rw, { address: '203.0.113.11' }).signIn('fsk_wrong')).status,
        401,
      );
    } finally {
      await rw.close();
    }
  });

  it('counts wrong keys sent to the API and to the sign-in form together', async () => {
    const rw = makeWorld({ quotas: { failed_auth_per_address: 3 } });
    try {
      const env = { incoming: { socket: { remoteAddress: '203.0.113.12' } } };
      for (let i = 0; i < 3; i++)
        assert.equal(
          (await rw.app.request('/v1/endpoints', { headers: { authorization: 'fsk_x' } }, env))
            .status,
          401,
        );
      assert.equal(
        (await new Client(rw, { address: '203.0.113.12' }).signIn('fsk_wrong')).status,
        429,
      );
    } finally {
      await rw.close();
    }
  });

  it('tells people behind a trusted proxy apart by X-Forwarded-For', async () => {
    const rw = makeWorld({
      server: { trusted_proxies: ['127.0.0.1'] },
      quotas: { failed_auth_per_address: 2 },
    });
    try {
      const person = (ip: string) => new Client(rw, { address: '127.0.0.1', forwardedFor: ip });
      for (let i = 0; i < 2; i++)
        assert.equal((await person('198.51.100.1').signIn('fsk_wrong')).status, 401);
      assert.equal((await person('198.51.100.1').signIn('fsk_wrong')).status, 429);
      assert.equal((await person('198.51.100.2').signIn('fsk_wrong')).status, 401);
    } finally {
      await rw.close();
    }
  });
});

describe('dashboard request rate', () => {
  it("answers 429 with Retry-After once a signed-in application has spent the API's rate, shared with the API", async () => {
    const rw = makeWorld({ quotas: { api_requests_per_second: 1, api_burst: 4 } });
    try {
      const { key } = await rw.key();
      const c = await new Client(rw).signedIn(key); // signing in is not counted, the overview it loads is
      assert.equal((await rw.call('GET', '/v1/endpoints', { key })).status, 200);
      assert.equal((await rw.call('GET', '/v1/endpoints', { key })).status, 200);
      assert.equal((await c.get('/dashboard/endpoints')).status, 200);
      const refused = await c.get('/dashboard/endpoints');
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('retry-after'), '1');
      assert.match(refused.text, /quotas\.api_requests_per_second/);
      rw.clock.advance(1000);
      assert.equal((await c.get('/dashboard/endpoints')).status, 200);
    } finally {
      await rw.close();
    }
  });
});
