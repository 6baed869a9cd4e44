// Dashboard sessions: sign in with an API key, resume from a cookie token (idle expiry, revoked keys end it), sign out.
import { createHash, randomBytes } from 'node:crypto';
import {
  deleteIdleSessions,
  deleteSession,
  deleteSessionsBeyond,
  findLiveSession,
  insertSession,
} from '../store/sessions.ts';
import { transaction, type Ctx } from '../context.ts';
import { authenticate, flushLastUses, noteUse } from './keys.ts';

/** What a signed-in page knows about its viewer. */
export type DashboardSession = {
  applicationId: string;
  applicationName: string;
  keyId: string;
  csrfToken: string;
};

/** Sessions one API key may have at once: signing in past it ends the key's least recently used one. A valid key's
 *  sign-ins are not rate limited, so without it a script could fill the table for as long as sessions live. */
export const MAX_SESSIONS_PER_KEY = 100;

/** SHA-256 hex of a session token; the only form in which tokens are stored. */
function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function idleCutoff(ctx: Ctx): string {
  return new Date(
    ctx.clock.now().getTime() - ctx.config.dashboard.session_idle_minutes * 60_000,
  ).toISOString();
}

/** Starts a session for a live API key; `token` goes in the cookie and is never stored. Undefined for a bad key. */
export async function signIn(
  ctx: Ctx,
  presentedKey: string,
): Promise<{ token: string; session: DashboardSession } | undefined> {
  const who = await authenticate(ctx, presentedKey.trim());
  if (!who) return undefined;
  const token = randomBytes(32).toString('base64url');
  const csrfToken = randomBytes(32).toString('base64url');
  const now = ctx.clock.now().toISOString();
  const idHash = hashToken(token);
  await flushLastUses(ctx); // the idle clocks in memory first, so no session in use is taken for idle below
  await transaction(ctx, async (tx) => {
    await deleteIdleSessions(tx.db, idleCutoff(tx));
    await deleteSessionsBeyond(tx.db, who.keyId, MAX_SESSIONS_PER_KEY - 1);
    await insertSession(tx.db, {
      id_hash: idHash,
      application_id: who.applicationId,
      api_key_id: who.keyId,
      csrf_token: csrfToken,
      created_at: now,
      last_seen_at: now,
    });
  });
  const live = (await findLiveSession(ctx.db, idHash, idleCutoff(ctx)))!;
  return { token, session: toSession(live) };
}

/** Deletes the sessions idle past dashboard.session_idle_minutes (maintenance); returns how many. The uses noted in
 *  memory are written first, so a session in use is never taken for idle. */
export async function expireIdleSessions(ctx: Ctx): Promise<number> {
  await flushLastUses(ctx);
  return deleteIdleSessions(ctx.db, idleCutoff(ctx));
}

/** The session a cookie token names, when it exists, is not idle past dashboard.session_idle_minutes and its key is live. */
export async function resumeSession(
  ctx: Ctx,
  token: string | undefined,
): Promise<DashboardSession | undefined> {
  if (!token || token.length > 200) return undefined;
  const idHash = hashToken(token);
  const cutoff = idleCutoff(ctx);
  // The idle clock is the later of last_seen_at and a use noted since the last flush (actions/keys.ts noteUse).
  const noted = ctx.lastUses.sessions.get(idHash);
  const live = await findLiveSession(
    ctx.db,
    idHash,
    noted !== undefined && noted > cutoff ? '' : cutoff,
  );
  if (!live) return undefined;
  noteUse(ctx.lastUses.sessions, idHash, ctx.clock.now().toISOString());
  return toSession(live);
}

/** Ends the session a cookie token names; harmless when it has already ended. */
export async function signOut(ctx: Ctx, token: string | undefined): Promise<void> {
  if (token) await deleteSession(ctx.db, hashToken(token));
}

function toSession(row: {
  application_id: string;
  application_name: string;
  api_key_id: string;
  csrf_token: string;
}): DashboardSession {
  return {
    applicationId: row.application_id,
    applicationName: row.application_name,
    keyId: row.api_key_id,
    csrfToken: row.csrf_token,
  };
}
