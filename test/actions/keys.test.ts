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
import { makeWorld, type World } from '../support/world.ts';

describe('API keys', () => {
  let w: World;
  before(() => {
    w = makeWorld();
  });
  after(() => w.close());

  it('stores the SHA-256 hex of the key and never the key itself', () => {
    const made = createKey(w.ctx, 'hash-check', 'ci');
    const row = w.ctx.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(made.id) as Record<
      string,
      unknown
    >;
    assert.equal(row.hash, createHash('sha256').update(made.key, 'utf8').digest('hex'));
    assert.match(made.key, /^fsk_[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
    assert.equal(row.prefix, made.key.slice(0, 12));
    for (const value of Object.values(row)) assert.ok(!String(value).includes(made.key.slice(12)));
  });

  it('authenticates the key, bare or as a Bearer token, until it is revoked', () => {
    const made = createKey(w.ctx, 'auth-check', null);
    const who = { applicationId: made.application.id, keyId: made.id };
    assert.deepEqual(authenticate(w.ctx, made.key), who);
    assert.deepEqual(authenticate(w.ctx, `Bearer ${made.key}`), who);
    assert.equal(authenticate(w.ctx, `${made.key}x`), undefined);
    assert.equal(revokeKey(w.ctx, made.id), true);
    assert.equal(authenticate(w.ctx, made.key), undefined);
  });

  const lastUsed = (id: string) =>
    w.ctx.db.prepare('SELECT last_used_at FROM api_keys WHERE id = ?').pluck().get(id);

  it('notes a use in memory and writes it only when the uses are flushed', () => {
    flushLastUses(w.ctx); // the uses the tests above noted
    const made = createKey(w.ctx, 'use-check', null);
    authenticate(w.ctx, made.key);
    assert.equal(lastUsed(made.id), null, 'the request itself wrote nothing');
    assert.equal(w.ctx.lastUses.keys.get(made.id), w.clock.now().toISOString());
    assert.equal(flushLastUses(w.ctx), 1);
    assert.equal(lastUsed(made.id), w.clock.now().toISOString());
    assert.equal(w.ctx.lastUses.keys.size, 0);
    assert.equal(flushLastUses(w.ctx), 0);
  });

  it('keeps the noted uses when a flush fails, and writes them with the next one', () => {
    flushLastUses(w.ctx);
    const made = createKey(w.ctx, 'flush-check', null);
    authenticate(w.ctx, made.key);
    w.ctx.db.pragma('query_only = 1');
    try {
      assert.throws(() => flushLastUses(w.ctx), /readonly/);
    } finally {
      w.ctx.db.pragma('query_only = 0');
    }
    assert.equal(w.ctx.lastUses.keys.size, 1);
    w.clock.advance(1000);
    authenticate(w.ctx, made.key);
    assert.equal(flushLastUses(w.ctx), 1);
    assert.equal(lastUsed(made.id), w.clock.now().toISOString(), 'the latest use');
  });

  it(`remembers at most ${MAX_UNFLUSHED_USES} keys or sessions between flushes, still updating those it has`, () => {
    const uses = new Map<string, string>();
    for (let i = 0; i < MAX_UNFLUSHED_USES + 5; i++) noteUse(uses, `k${i}`, 't1');
    assert.equal(uses.size, MAX_UNFLUSHED_USES);
    noteUse(uses, 'k0', 't2');
    assert.equal(uses.get('k0'), 't2');
  });
});
