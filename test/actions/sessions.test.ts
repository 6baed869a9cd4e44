// Dashboard sessions' idle clock: a page view notes its use in memory; the database learns it at the next flush. Idle
// sessions are deleted by maintenance, and a key has a bounded number of them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { flushLastUses } from '../../src/actions/keys.ts';
import { MAX_SESSIONS_PER_KEY, resumeSession, signIn } from '../../src/actions/sessions.ts';
import { silentLogger } from '../../src/log.ts';
import { maintenanceTick } from '../../src/worker/maintenance/maintenance.ts';
import { makeWorld } from '../support/world.ts';

describe('dashboard sessions', () => {
  it('count a use not yet flushed to the database as activity, and keep it after the flush', () => {
    const w = makeWorld({ dashboard: { session_idle_minutes: 1 } });
    try {
      const { token } = signIn(w.ctx, w.key().key)!;
      const lastSeen = () =>
        w.ctx.db.prepare('SELECT last_seen_at FROM sessions').pluck().get() as string;
      const signedInAt = lastSeen();
      w.clock.advance(50_000);
      assert.ok(resumeSession(w.ctx, token));
      assert.equal(lastSeen(), signedInAt, 'a page view writes nothing');
      w.clock.advance(50_000); // 100 s after the stored last_seen_at, 50 s after the noted use
      assert.ok(resumeSession(w.ctx, token), 'the noted use counts');
      flushLastUses(w.ctx);
      assert.equal(lastSeen(), w.clock.now().toISOString());
      w.clock.advance(50_000);
      assert.ok(resumeSession(w.ctx, token), 'the flushed use counts');
      flushLastUses(w.ctx);
      w.clock.advance(60_001);
      assert.equal(resumeSession(w.ctx, token), undefined, 'then idle for over a minute');
    } finally {
      w.close();
    }
  });

  it('flush the noted uses before a sign-in deletes idle sessions, so none in use is taken for idle', () => {
    const w = makeWorld({ dashboard: { session_idle_minutes: 1 } });
    try {
      const { token } = signIn(w.ctx, w.key().key)!;
      w.clock.advance(50_000);
      assert.ok(resumeSession(w.ctx, token)); // noted, not flushed
      w.clock.advance(50_000);
      signIn(w.ctx, w.key().key); // deletes the sessions idle by the database's clock
      assert.ok(resumeSession(w.ctx, token), 'still signed in');
    } finally {
      w.close();
    }
  });

  it('are deleted by maintenance once idle, after the uses noted in memory are written', async () => {
    const w = makeWorld({ dashboard: { session_idle_minutes: 1 } });
    try {
      const key = w.key().key;
      const used = signIn(w.ctx, key)!.token;
      signIn(w.ctx, key);
      w.clock.advance(50_000);
      assert.ok(resumeSession(w.ctx, used)); // noted in memory only
      w.clock.advance(20_000); // the other one: idle for 70 s
      const { summary } = await maintenanceTick(w.ctx, { logger: silentLogger });
      assert.equal(summary.sessions, 1);
      assert.equal(w.ctx.db.prepare('SELECT count(*) FROM sessions').pluck().get(), 1);
      assert.ok(resumeSession(w.ctx, used), 'the session in use is kept');
    } finally {
      w.close();
    }
  });

  it(`keep at most ${MAX_SESSIONS_PER_KEY} per key: signing in past it ends the least recently used one`, () => {
    const w = makeWorld();
    try {
      const key = w.key().key;
      const tokens: string[] = [];
      for (let i = 0; i < MAX_SESSIONS_PER_KEY; i++) {
        tokens.push(signIn(w.ctx, key)!.token);
        w.clock.advance(1000);
      }
      assert.ok(resumeSession(w.ctx, tokens[0]!)); // the first one is used: now the second is the least recent
      signIn(w.ctx, key);
      assert.equal(
        w.ctx.db.prepare('SELECT count(*) FROM sessions').pluck().get(),
        MAX_SESSIONS_PER_KEY,
      );
      assert.ok(resumeSession(w.ctx, tokens[0]!));
      assert.equal(resumeSession(w.ctx, tokens[1]!), undefined);
      assert.ok(resumeSession(w.ctx, tokens[2]!));
    } finally {
      w.close();
    }
  });
});
