// /dashboard/subscriptions/:id: one subscription — GET shows it (with a trace for `?entry=`); POST runs one `_action`:
// edit, pause/resume, updates on/off, filter (save, or test against the feed's recent entries), delete.
import { Hono, type Context } from 'hono';
import type { Ctx } from '../../context.ts';
import type { ApiError } from '../../errors.ts';
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
import { previewFilter } from '../../actions/filter-preview.ts';
import { parseFilterText, withFilterErrors } from './subscription-filter.tsx';
import { parseMetadata } from './subscription-input.ts';
import { showSubscription, type SubscriptionState } from './subscription-view.tsx';

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

const filterValues = (form: Record<string, string>) => ({ filter: form.filter ?? '' });

/** Saves the filter typed (empty removes it), or with `preview` only shows what it would do with the feed's recent
 *  entries. JSON that does not parse is refused here, before the action sees it. */
async function filter(p: Posted, preview: boolean): Promise<Response> {
  const values = filterValues(p.form);
  const parsed = parseFilterText(values.filter);
  if (parsed.error)
    return showSubscription(
      p.ctx,
      p.c,
      { filter: invalidForm(values, { filter: parsed.error }) },
      400,
    );
  if (preview) {
    const rows = await previewFilter(p.ctx, p.applicationId, p.id, parsed.value);
    return showSubscription(p.ctx, p.c, { filter: { values, errors: {} }, preview: rows });
  }
  await updateSubscriptionFromInput(p.ctx, p.applicationId, p.id, { filter: parsed.value });
  return p.c.redirect(`${p.here}?notice=filter-saved#filter`, 303);
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
    case 'filter':
    case 'filter-preview':
      return filter(p, action === 'filter-preview');
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
    return showSubscription(ctx, c, failedState(err, p.form), statusOf(c, err));
  }
}

/** The page state that shows why the form posted failed. */
function failedState(err: ApiError, form: Record<string, string>): SubscriptionState {
  if (form._action === 'update') return { edit: formStateFrom(err, editValues(form)) };
  if (form._action === 'filter' || form._action === 'filter-preview') {
    const state = formStateFrom(err, filterValues(form));
    return { filter: { ...state, errors: withFilterErrors(err, state.errors) } };
  }
  return { message: err.message };
}

/** The subscription page: GET shows it (404 for another application's id), POST runs the `_action` and redirects (303). */
export function subscriptionPage(ctx: Ctx): Hono<DashEnv> {
  return new Hono<DashEnv>()
    .get('/subscriptions/:id', (c) => showSubscription(ctx, c))
    .post('/subscriptions/:id', (c) => post(ctx, c));
}
