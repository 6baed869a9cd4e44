// /dashboard/subscriptions/:id: one subscription — GET shows it (with a trace for `?entry=`); POST runs one `_action`:
// edit, pause/resume, updates on/off, delete.
import { Hono, type Context } from 'hono';
import type { Ctx } from '../../context.ts';
import {
  removeSubscription,
  requireSubscription,
  updateSubscriptionFromInput,
} from '../../actions/subscriptions.ts';
import {
  formStateFrom,
  invalidForm,
  isFormError,
  readPosted,
  statusOf,
  unconfirmedDelete,
  unknownAction,
  type Posted,
} from './form.ts';
import type { DashEnv } from './session.ts';
import { parseMetadata } from './subscription-input.ts';
import { showSubscription } from './subscription-view.tsx';

const editValues = (form: Record<string, string>) => ({
  endpoint: form.endpoint ?? '',
  metadata: form.metadata ?? '',
});

/** Saves the endpoint and metadata; metadata that is not JSON is refused here, before the action sees it. */
async function update(p: Posted): Promise<Response> {
  const values = editValues(p.form);
  const metadata = parseMetadata(values.metadata);
  if (metadata.error)
    return showSubscription(
      p.ctx,
      p.c,
      { edit: invalidForm(values, { metadata: metadata.error }) },
      400,
    );
  await updateSubscriptionFromInput(
    p.ctx,
    p.applicationId,
    p.id,
    { endpoint: values.endpoint, metadata: metadata.value ?? null },
    { metadata: metadata.raw },
  );
  return p.c.redirect(`${p.here}?notice=subscription-updated`, 303);
}

async function setStatus(p: Posted, action: 'pause' | 'resume'): Promise<Response> {
  await updateSubscriptionFromInput(p.ctx, p.applicationId, p.id, {
    status: action === 'pause' ? 'paused' : 'active',
  });
  return p.c.redirect(`${p.here}?notice=subscription-${action}d`, 303);
}

async function setUpdates(p: Posted, on: boolean): Promise<Response> {
  await updateSubscriptionFromInput(p.ctx, p.applicationId, p.id, { updates: on });
  return p.c.redirect(`${p.here}?notice=subscription-updated`, 303);
}

async function remove(p: Posted): Promise<Response> {
  if (p.form.confirm !== 'yes')
    return showSubscription(p.ctx, p.c, { remove: unconfirmedDelete() }, 400);
  await removeSubscription(p.ctx, p.applicationId, p.id);
  return p.c.redirect('/dashboard/subscriptions?notice=subscription-deleted', 303);
}

async function run(p: Posted, action: string | undefined): Promise<Response> {
  switch (action) {
    case 'update':
      return update(p);
    case 'pause':
    case 'resume':
      return setStatus(p, action);
    case 'updates-on':
    case 'updates-off':
      return setUpdates(p, action === 'updates-on');
    case 'delete':
      return remove(p);
    default:
      throw unknownAction();
  }
}

async function post(ctx: Ctx, c: Context<DashEnv>): Promise<Response> {
  const p = await readPosted(ctx, c, 'subscriptions', requireSubscription);
  try {
    return await run(p, p.form._action);
  } catch (err) {
    if (!isFormError(err)) throw err;
    return showSubscription(
      ctx,
      c,
      p.form._action === 'update'
        ? { edit: formStateFrom(err, editValues(p.form)) }
        : { message: err.message },
      statusOf(c, err),
    );
  }
}

/** The subscription page: GET shows it (404 for another application's id), POST runs the `_action` and redirects (303). */
export function subscriptionPage(ctx: Ctx): Hono<DashEnv> {
  return new Hono<DashEnv>()
    .get('/subscriptions/:id', (c) => showSubscription(ctx, c))
    .post('/subscriptions/:id', (c) => post(ctx, c));
}
