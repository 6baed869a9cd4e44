// The sign-in page (an API key pasted once → a server-side session) and sign-out, both posted to /dashboard. A valid
// key always signs in; wrong keys are limited per client address.
import type { Context } from 'hono';
import type { Ctx } from '../../context.ts';
import { signIn, signOut } from '../../actions/sessions.ts';
import { Field } from './fields.tsx';
import { addressKey, clientAddress } from '../client-address.ts';
import type { RequestLimits } from '../ratelimit.ts';
import { render } from './errors.tsx';
import { noticeOf, readForm, safeNext, type FieldErrors } from './form.ts';
import { Layout } from './layout.tsx';
import {
  checkCsrf,
  clearSessionCookie,
  setSessionCookie,
  type DashEnv,
  type LoginTokens,
} from './session.ts';

export type SignInDeps = { limits: RequestLimits; login: LoginTokens };

function SignInView(p: {
  c: Context<DashEnv>;
  token: string;
  next: string;
  errors: FieldErrors;
  message?: string | undefined;
  notice?: string | undefined;
}) {
  return (
    <Layout title="Sign in" section="none" session={undefined} error={p.message} notice={p.notice}>
      <h1>Sign in to the feedsub dashboard</h1>
      <form method="post" action="/dashboard" class="card">
        <input type="hidden" name="_action" value="signin" />
        <input type="hidden" name="_login" value={p.token} />
        <input type="hidden" name="next" value={p.next} />
        <Field
          name="key"
          label="API key"
          type="password"
          values={{}}
          errors={p.errors}
          autocomplete="off"
          required
          hint="Paste a key of your application once; the dashboard then keeps a session. Everything you see belongs to that key's application."
        />
        <button type="submit">Sign in</button>
      </form>
      <p class="muted">
        No key yet? An operator creates one on the server with{' '}
        <code>feedsub keys create --app NAME</code>; it is shown once.
      </p>
    </Layout>
  );
}

/** GET /dashboard without a session: the sign-in form with a fresh signed sign-in token. */
export function showSignIn(
  ctx: Ctx,
  deps: SignInDeps,
  c: Context<DashEnv>,
): Response | Promise<Response> {
  const token = deps.login.issue(ctx, c);
  return render(
    c,
    <SignInView
      c={c}
      token={token}
      next={safeNext(c.req.query('next'))}
      errors={{}}
      notice={noticeOf(c)}
    />,
  );
}

/** POST /dashboard: sign in, or sign out with `_action=signout`. A valid key signs in whatever its address did before:
 *  behind a reverse proxy many people may share one address, and one of them guessing must not lock the others out
 *  (keys are 256 random bits, so the limit is not what stops guessing). A wrong key takes a token of its client
 *  address (quotas.failed_auth_per_address, shared with the API); without one it is answered 429 with Retry-After. */
export async function postHome(ctx: Ctx, deps: SignInDeps, c: Context<DashEnv>): Promise<Response> {
  const form = await readForm(c);
  if (form._action === 'signout') return handleSignOut(ctx, c, form);
  const next = safeNext(form.next);
  const again = (status: 400 | 401 | 403 | 429, errors: FieldErrors, message: string) =>
    render(
      c,
      <SignInView
        c={c}
        token={deps.login.issue(ctx, c)}
        next={next}
        errors={errors}
        message={message}
      />,
      status,
    );
  if (!deps.login.verify(ctx, c, form._login)) {
    return again(
      403,
      {},
      'The sign-in form expired or came from another page. Please paste your key again.',
    );
  }
  const key = (form.key ?? '').trim();
  if (key === '') return again(400, { key: 'is required' }, 'Please paste an API key.');
  const started = await signIn(ctx, key);
  if (started) {
    setSessionCookie(ctx, c, started.token);
    return c.redirect(next, 303);
  }
  const refused = { key: 'is not a live API key (unknown or revoked)' };
  const wait = failedSignIn(ctx, deps.limits, c);
  if (wait === 0) return again(401, refused, 'That key was not accepted.');
  c.header('retry-after', String(wait));
  const minutes = Math.ceil(wait / 60);
  return again(
    429,
    refused,
    `Too many wrong keys came from your address. A valid key still signs in; others are refused for about ${minutes} minute${minutes === 1 ? '' : 's'}.`,
  );
}

/** Counts a wrong key against the client address; the seconds it must wait, 0 when it may still be told "wrong key". */
function failedSignIn(ctx: Ctx, limits: RequestLimits, c: Context<DashEnv>): number {
  if (!limits.failedAuth) return 0;
  const address = addressKey(clientAddress(c, limits.trustedProxies));
  return limits.failedAuth.take(address, ctx.clock.now());
}

async function handleSignOut(
  ctx: Ctx,
  c: Context<DashEnv>,
  form: Record<string, string>,
): Promise<Response> {
  const session = c.get('session');
  if (session) {
    checkCsrf(session, form);
    await signOut(ctx, c.get('sessionToken'));
  }
  clearSessionCookie(ctx, c);
  return c.redirect('/dashboard?notice=signed-out', 303);
}
