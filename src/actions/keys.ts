// API keys: create (shown once, stored hashed), list, revoke, authenticate a presented key, and record key and session
// uses off the request path.
import { createHash, randomBytes } from 'node:crypto';
import { newId } from '../ids.ts';
import { upsertApplication, type Application } from '../store/applications.ts';
import {
  findLiveKeyByHash,
  insertApiKey,
  listApiKeys,
  recordKeyUse,
  revokeApiKey,
  type ApiKeyListed,
} from '../store/api-keys.ts';
import { touchSession } from '../store/sessions.ts';
import { transaction, type Ctx } from '../context.ts';

export const KEY_PREFIX = 'fsk_';

/** SHA-256 hex of a key; the only form in which keys are stored. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Creates the application if needed and a new key for it; the returned `key` is the only copy. */
export async function createKey(
  ctx: Ctx,
  appName: string,
  label: string | null,
): Promise<{ key: string; id: string; application: Application }> {
  const now = ctx.clock.now();
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return await transaction(ctx, async (tx) => {
    const application = await upsertApplication(tx.db, appName, now);
    const id = newId(now);
    await insertApiKey(tx.db, {
      id,
      application_id: application.id,
      name: label,
      prefix: key.slice(0, 12),
      hash: hashKey(key),
      created_at: now.toISOString(),
    });
    return { key, id, application };
  });
}

/** Every key, without secrets. */
export async function listKeys(ctx: Ctx): Promise<ApiKeyListed[]> {
  return listApiKeys(ctx.db);
}

/** Revokes a key and ends its dashboard sessions; false when no live key has this id. */
export async function revokeKey(ctx: Ctx, id: string): Promise<boolean> {
  return revokeApiKey(ctx.db, id, ctx.clock.now());
}

/** The application and key id for a presented key, or undefined for a missing, unknown or revoked key. */
export async function authenticate(
  ctx: Ctx,
  presented: string | undefined,
): Promise<{ applicationId: string; keyId: string } | undefined> {
  if (!presented) return undefined;
  const key = presented.replace(/^Bearer\s+/i, '').trim();
  if (!key.startsWith(KEY_PREFIX)) return undefined;
  const row = await findLiveKeyByHash(ctx.db, hashKey(key));
  if (!row) return undefined;
  noteUse(ctx.lastUses.keys, row.id, ctx.clock.now().toISOString());
  return { applicationId: row.application_id, keyId: row.id };
}

/** Keys and sessions remembered between two flushes, each: past it a new one is not noted until the next flush (its
 *  last use then lags behind; nothing else changes). Only live keys and sessions are noted, so this is rarely reached. */
export const MAX_UNFLUSHED_USES = 10_000;

/** Notes that `id` (a key id or a session hash) was used at `at`, in memory: a read must not write, because a write
 *  can fail (a full disk, a locked database) and a read must not fail with it. */
export function noteUse(uses: Map<string, string>, id: string, at: string): void {
  if (uses.size < MAX_UNFLUSHED_USES || uses.has(id)) uses.set(id, at);
}

/** Writes the noted uses (keys' last_used_at, sessions' idle clocks) in one transaction, then forgets them; returns
 *  how many. When the write fails it throws and keeps them for the next flush. */
export async function flushLastUses(ctx: Ctx): Promise<number> {
  const { keys, sessions } = ctx.lastUses;
  const count = keys.size + sessions.size;
  if (count === 0) return 0;
  await transaction(ctx, async (tx) => {
    for (const [id, at] of keys) await recordKeyUse(tx.db, id, at);
    for (const [idHash, at] of sessions) await touchSession(tx.db, idHash, at);
  });
  keys.clear();
  sessions.clear();
  return count;
}
