// The sign-in page (an API key pasted once → a server-side session) and sign-out, both posted to /dashboard.
import type { Context } from 'hono';
import type { Ctx } from '../../context.ts';
import { signIn, signOut } from '../../actions/sessions.ts';
import { Field } from './fields.tsx';
import { render, tooManyPage } from './errors.tsx';
import { noticeOf, readForm, safeNext, type FieldErrors } from './form.ts';
import { Layout } from './layout.tsx';
import type { FailureLimiter } from './ratelimit.ts';
import {
  checkCsrf,
  clearSessionCookie,
  clientAddress,
  setSessionCookie,
  type DashEnv,
  type LoginTokens,
} from './session.ts';

export type SignInDeps = { limiter: FailureLimiter; login: LoginTokens };

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

/** POST /dashboard: sign in (rate limited per client address), or sign out with `_action=signout`. */
export async function postHome(ctx: Ctx, deps: SignInDeps, c: Context<DashEnv>): Promise<Response> {
  const form = await readForm(c);
  if (form._action === 'signout') return handleSignOut(ctx, c, form);
  const address = clientAddress(c);
  const wait = deps.limiter.retryAfterSeconds(address, ctx.clock.now());
  if (wait > 0) return tooManyPage(c, wait);
  const next = safeNext(form.next);
  const again = (status: 400 | 401 | 403, errors: FieldErrors, message: string) =>
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
  const started = signIn(ctx, key);
  if (!started) {
    deps.limiter.fail(address, ctx.clock.now());
    return again(
      401,
      { key: 'is not a live API key (unknown or revoked)' },
      'That key was not accepted.',
    );
  }
  setSessionCookie(ctx, c, started.token);
  return c.redirect(next, 303);
}

function handleSignOut(ctx: Ctx, c: Context<DashEnv>, form: Record<string, string>): Response {
  const session = c.get('session');
  if (session) {
    checkCsrf(session, form);
    signOut(ctx, c.get('sessionToken'));
  }
  clearSessionCookie(ctx, c);
  return c.redirect('/dashboard?notice=signed-out', 303);
}
