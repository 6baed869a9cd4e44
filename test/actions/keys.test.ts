// API keys: shown once, stored only as a SHA-256 hash, revocable.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { authenticate, createKey, revokeKey } from '../../src/actions/keys.ts';
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
});
