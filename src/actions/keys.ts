// API keys: create (shown once, stored hashed), list, revoke, and authenticate a presented key.
import { createHash, randomBytes } from 'node:crypto';
import { newId } from '../ids.ts';
import { upsertApplication, type Application } from '../store/applications.ts';
import {
  findLiveKeyByHash,
  insertApiKey,
  listApiKeys,
  revokeApiKey,
  touchApiKey,
  type ApiKeyListed,
} from '../store/api-keys.ts';
import type { Ctx } from '../context.ts';

export const KEY_PREFIX = 'fsk_';

/** SHA-256 hex of a key; the only form in which keys are stored. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Creates the application if needed and a new key for it; the returned `key` is the only copy. */
export function createKey(
  ctx: Ctx,
  appName: string,
  label: string | null,
): { key: string; id: string; application: Application } {
  const now = ctx.clock.now();
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return ctx.db.transaction(() => {
    const application = upsertApplication(ctx.db, appName, now);
    const id = newId(now);
    insertApiKey(ctx.db, {
      id,
      application_id: application.id,
      name: label,
      prefix: key.slice(0, 12),
      hash: hashKey(key),
      created_at: now.toISOString(),
    });
    return { key, id, application };
  })();
}

/** Every key, without secrets. */
export function listKeys(ctx: Ctx): ApiKeyListed[] {
  return listApiKeys(ctx.db);
}

/** Revokes a key and ends its dashboard sessions; false when no live key has this id. */
export function revokeKey(ctx: Ctx, id: string): boolean {
  return revokeApiKey(ctx.db, id, ctx.clock.now());
}

/** The application and key id for a presented key, or undefined for a missing, unknown or revoked key. */
export function authenticate(
  ctx: Ctx,
  presented: string | undefined,
): { applicationId: string; keyId: string } | undefined {
  if (!presented) return undefined;
  const key = presented.replace(/^Bearer\s+/i, '').trim();
  if (!key.startsWith(KEY_PREFIX)) return undefined;
  const row = findLiveKeyByHash(ctx.db, hashKey(key));
  if (!row) return undefined;
  touchApiKey(ctx.db, row.id, ctx.clock.now());
  return { applicationId: row.application_id, keyId: row.id };
}
