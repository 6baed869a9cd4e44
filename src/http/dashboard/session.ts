// Dashboard cookies and request guards: the session cookie, the signed pre-session sign-in token, CSRF checks.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Ctx } from '../../context.ts';
import { resumeSession, type DashboardSession } from '../../actions/sessions.ts';

export type DashEnv = {
  Variables: { session: DashboardSession | undefined; sessionToken: string | undefined };
};

export const SESSION_COOKIE = 'feedsub_session';
export const LOGIN_COOKIE = 'feedsub_signin';
/** How long a sign-in form stays usable. */
export const LOGIN_TOKEN_TTL_MS = 30 * 60_000;

/** Thrown when a POST lacks a valid CSRF token; the error page answers 403. */
export class CsrfError extends Error {}

/** Cookies are Secure when this request came over https or the configured public URL is https. */
export function isSecure(ctx: Ctx, c: Context): boolean {
  return (
    new URL(c.req.url).protocol === 'https:' ||
    ctx.config.server.public_url.toLowerCase().startsWith('https:')
  );
}

function cookieOptions(ctx: Ctx, c: Context, maxAgeSeconds?: number) {
  return {
    httpOnly: true,
    sameSite: 'Strict' as const,
    path: '/dashboard',
    secure: isSecure(ctx, c),
    ...(maxAgeSeconds ? { maxAge: maxAgeSeconds } : {}),
  };
}

/** Sets the session cookie (a browser-session cookie; the server enforces the idle expiry). */
export function setSessionCookie(ctx: Ctx, c: Context, token: string): void {
  setCookie(c, SESSION_COOKIE, token, cookieOptions(ctx, c));
  deleteCookie(c, LOGIN_COOKIE, { path: '/dashboard', secure: isSecure(ctx, c) });
}

/** Clears the session cookie. */
export function clearSessionCookie(ctx: Ctx, c: Context): void {
  deleteCookie(c, SESSION_COOKIE, {
    path: '/dashboard',
    secure: isSecure(ctx, c),
    httpOnly: true,
    sameSite: 'Strict',
  });
}

/** Loads the session named by the cookie (if live) into c.var.session; never redirects. */
export function loadSession(ctx: Ctx): MiddlewareHandler<DashEnv> {
  return async (c, next) => {
    const token = getCookie(c, SESSION_COOKIE);
    const session = await resumeSession(ctx, token);
    c.set('session', session);
    c.set('sessionToken', session ? token : undefined);
    if (token && !session) clearSessionCookie(ctx, c); // expired, revoked or signed out elsewhere
    await next();
  };
}

/** The signed-in viewer; pages behind requireSession only. */
export function viewer(c: Context<DashEnv>): DashboardSession {
  const session = c.get('session');
  if (!session) throw new Error('dashboard: a page behind requireSession ran without a session');
  return session;
}

/** Sends visitors without a session to the sign-in page, remembering where they were going. */
export function requireSession(): MiddlewareHandler<DashEnv> {
  return async (c, next) => {
    if (c.get('session')) return next();
    const next_ =
      c.req.method === 'GET' ? `?next=${encodeURIComponent(c.req.path)}` : '?notice=signed-out';
    return c.redirect(`/dashboard${next_}`, 303);
  };
}

/** Throws CsrfError unless the form's _csrf equals the session's token. */
export function checkCsrf(session: DashboardSession, form: Record<string, string>): void {
  if (!sameText(form._csrf ?? '', session.csrfToken))
    throw new CsrfError('dashboard: missing or wrong CSRF token');
}

/** Signed sign-in tokens: `issuedMs.nonce.hmac`, set as an HttpOnly SameSite=Strict cookie AND put in the form;
 *  a sign-in POST must carry the same valid, unexpired token in both. The HMAC key is the one every node shares
 *  (service_keys), or this dashboard instance's own. */
export function loginTokens(key: Buffer = randomBytes(32)) {
  const sign = (body: string) => createHmac('sha256', key).update(body).digest('base64url');
  return {
    /** A fresh token, also set as the sign-in cookie. */
    issue(ctx: Ctx, c: Context): string {
      const body = `${ctx.clock.now().getTime()}.${randomBytes(16).toString('base64url')}`;
      const token = `${body}.${sign(body)}`;
      setCookie(c, LOGIN_COOKIE, token, cookieOptions(ctx, c, LOGIN_TOKEN_TTL_MS / 1000));
      return token;
    },
    /** True when the form's token matches the cookie, carries our signature and has not expired. */
    verify(ctx: Ctx, c: Context, fromForm: string | undefined): boolean {
      const fromCookie = getCookie(c, LOGIN_COOKIE);
      if (!fromForm || !fromCookie || !sameText(fromForm, fromCookie)) return false;
      const [issued, nonce, mac] = fromForm.split('.');
      if (!issued || !nonce || !mac || !sameText(mac, sign(`${issued}.${nonce}`))) return false;
      const age = ctx.clock.now().getTime() - Number(issued);
      return age >= 0 && age <= LOGIN_TOKEN_TTL_MS;
    },
  };
}
export type LoginTokens = ReturnType<typeof loginTokens>;

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
