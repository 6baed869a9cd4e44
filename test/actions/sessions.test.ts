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
  it('count a use not yet flushed to the database as activity, and keep it after the flush', async () => {
    const w = makeWorld({ dashboard: { session_idle_minutes: 1 } });
    try {
      const { token } = (await signIn(w.ctx, (await w.key()).key))!;
      const lastSeen = async () =>
        (await w.ctx.db.column('SELECT last_seen_at FROM sessions'))[0] as string;
      const signedInAt = await lastSeen();
      w.clock.advance(50_000);
      assert.ok(await resumeSession(w.ctx, token));
      assert.equal(await lastSeen(), signedInAt, 'a page view writes nothing');
      w.clock.advance(50_000); // 100 s after the stored last_seen_at, 50 s after the noted use
      assert.ok(await resumeSession(w.ctx, token), 'the noted use counts');
      await flushLastUses(w.ctx);
      assert.equal(await lastSeen(), w.clock.now().toISOString());
      w.clock.advance(50_000);
      assert.ok(await resumeSession(w.ctx, token), 'the flushed use counts');
      await flushLastUses(w.ctx);
      w.clock.advance(60_001);
      assert.equal(await resumeSession(w.ctx, token), undefined, 'then idle for over a minute');
    } finally {
      await w.close();
    }
  });

  it('flush the noted uses before a sign-in deletes idle sessions, so none in use is taken for idle', async () => {
    const w = makeWorld({ dashboard: { session_idle_minutes: 1 } });
    try {
      const { token } = (await signIn(w.ctx, (await w.key()).key))!;
      w.clock.advance(50_000);
      assert.ok(await resumeSession(w.ctx, token)); // noted, not flushed
      w.clock.advance(50_000);
      await signIn(w.ctx, (await w.key()).key); // deletes the sessions idle by the database's clock
      assert.ok(await resumeSession(w.ctx, token), 'still signed in');
    } finally {
      await w.close();
    }
  });

  it('are deleted by maintenance once idle, after the uses noted in memory are written', async () => {
    const w = makeWorld({ dashboard: { session_idle_minutes: 1 } });
    try {
      const key = (await w.key()).key;
      const used = (await signIn(w.ctx, key))!.token;
      await signIn(w.ctx, key);
      w.clock.advance(50_000);
      assert.ok(await resumeSession(w.ctx, used)); // noted in memory only
      w.clock.advance(20_000); // the other one: idle for 70 s
      const { summary } = await maintenanceTick(w.ctx, { logger: silentLogger });
      assert.equal(summary.sessions, 1);
      assert.equal((await w.ctx.db.column('SELECT count(*) FROM sessions'))[0], 1);
      assert.ok(await resumeSession(w.ctx, used), 'the session in use is kept');
    } finally {
      await w.close();
    }
  });

  it(`keep at most ${MAX_SESSIONS_PER_KEY} per key: signing in past it ends the least recently used one`, async () => {
    const w = makeWorld();
    try {
      const key = (await w.key()).key;
      const tokens: string[] = [];
      for (let i = 0; i < MAX_SESSIONS_PER_KEY; i++) {
        tokens.push((await signIn(w.ctx, key))!.token);
        w.clock.advance(1000);
      }
      assert.ok(await resumeSession(w.ctx, tokens[0]!)); // the first one is used: now the second is the least recent
      await signIn(w.ctx, key);
      assert.equal(
        (await w.ctx.db.column('SELECT count(*) FROM sessions'))[0],
        MAX_SESSIONS_PER_KEY,
      );
      assert.ok(await resumeSession(w.ctx, tokens[0]!));
      assert.equal(await resumeSession(w.ctx, tokens[1]!), undefined);
      assert.ok(await resumeSession(w.ctx, tokens[2]!));
    } finally {
      await w.close();
    }
  });
});
