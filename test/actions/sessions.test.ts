// Dashboard sessions' idle clock: a page view notes its use in memory; the database learns it at the next flush.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { flushLastUses } from '../../src/actions/keys.ts';
import { resumeSession, signIn } from '../../src/actions/sessions.ts';
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
});
