// API keys: shown once, stored only as a SHA-256 hash, revocable.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  authenticate,
  createKey,
  flushLastUses,
  MAX_UNFLUSHED_USES,
  noteUse,
  revokeKey,
} from '../../src/actions/keys.ts';
import { sqliteConnection } from '../../src/db/sqlite-engine.ts';
import { makeWorld, type World, sqliteOnly } from '../support/world.ts';

describe('API keys', () => {
  let w: World;
  before(() => {
    w = makeWorld();
  });
  after(() => w.close());

  it('stores the SHA-256 hex of the key and never the key itself', async () => {
    const made = await createKey(w.ctx, 'hash-check', 'ci');
    const row = (await w.ctx.db.get('SELECT * FROM api_keys WHERE id = ?', [made.id])) as Record<
      string,
      unknown
    >;
    assert.equal(row.hash, createHash('sha256').update(made.key, 'utf8').digest('hex'));
    assert.match(made.key, /^fsk_[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
    assert.equal(row.prefix, made.key.slice(0, 12));
    for (const value of Object.values(row)) assert.ok(!String(value).includes(made.key.slice(12)));
  });

  it('authenticates the key, bare or as a Bearer token, until it is revoked', async () => {
    const made = await createKey(w.ctx, 'auth-check', null);
    const who = { applicationId: made.application.id, keyId: made.id };
    assert.deepEqual(await authenticate(w.ctx, made.key), who);
    assert.deepEqual(await authenticate(w.ctx, `Bearer ${made.key}`), who);
    assert.equal(await authenticate(w.ctx, `${made.key}x`), undefined);
    assert.equal(await revokeKey(w.ctx, made.id), true);
    assert.equal(await authenticate(w.ctx, made.key), undefined);
  });

  const lastUsed = async (id: string) =>
    (await w.ctx.db.column('SELECT last_used_at FROM api_keys WHERE id = ?', [id]))[0];

  it('notes a use in memory and writes it only when the uses are flushed', async () => {
    await flushLastUses(w.ctx); // the uses the tests above noted
    const made = await createKey(w.ctx, 'use-check', null);
    await authenticate(w.ctx, made.key);
    assert.equal(await lastUsed(made.id), null, 'the request itself wrote nothing');
    assert.equal(w.ctx.lastUses.keys.get(made.id), w.clock.now().toISOString());
    assert.equal(await flushLastUses(w.ctx), 1);
    assert.equal(await lastUsed(made.id), w.clock.now().toISOString());
    assert.equal(w.ctx.lastUses.keys.size, 0);
    assert.equal(await flushLastUses(w.ctx), 0);
  });

  it(
    'keeps the noted uses when a flush fails, and writes them with the next one',
    sqliteOnly,
    async () => {
      await flushLastUses(w.ctx);
      const made = await createKey(w.ctx, 'flush-check', null);
      await authenticate(w.ctx, made.key);
      sqliteConnection(w.ctx.store)!.pragma('query_only = 1');
      try {
        await assert.rejects(() => flushLastUses(w.ctx), /readonly/);
      } finally {
        sqliteConnection(w.ctx.store)!.pragma('query_only = 0');
      }
      assert.equal(w.ctx.lastUses.keys.size, 1);
      w.clock.advance(1000);
      await authenticate(w.ctx, made.key);
      assert.equal(await flushLastUses(w.ctx), 1);
      assert.equal(await lastUsed(made.id), w.clock.now().toISOString(), 'the latest use');
    },
  );

  it(`remembers at most ${MAX_UNFLUSHED_USES} keys or sessions between flushes, still updating those it has`, () => {
    const uses = new Map<string, string>();
    for (let i = 0; i < MAX_UNFLUSHED_USES + 5; i++) noteUse(uses, `k${i}`, 't1');
    assert.equal(uses.size, MAX_UNFLUSHED_USES);
    noteUse(uses, 'k0', 't2');
    assert.equal(uses.get('k0'), 't2');
  });
});
