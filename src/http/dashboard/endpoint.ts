// /dashboard/endpoints/:id: one endpoint — GET shows it; POST runs one `_action`: edit, enable/disable, rotate, test, recover, delete.
import { Hono, type Context } from 'hono';
import type { Ctx } from '../../context.ts';
import { sendTestEvent } from '../../actions/events.ts';
import {
  recoverEndpoint,
  removeEndpoint,
  requireEndpoint,
  rotateEndpointSecret,
  updateEndpointFromInput,
} from '../../actions/endpoints.ts';
import type { ApiError } from '../../errors.ts';
import {
  filterFields,
  filterInput,
  foldHeaderErrors,
  headersInput,
  rateLimitInput,
} from './endpoint-forms.tsx';
import { showEndpoint, type EndpointState } from './endpoint-view.tsx';
import {
  formStateFrom,
  isFormError,
  readPosted,
  statusOf,
  unconfirmedDelete,
  unknownAction,
  type Posted,
} from './form.ts';
import type { DashEnv } from './session.ts';

const editValues = (form: Record<string, string>) => ({
  title: form.title ?? '',
  url: form.url ?? '',
});

async function update(p: Posted): Promise<Response> {
  await updateEndpointFromInput(p.ctx, p.applicationId, p.id, {
    ...editValues(p.form),
    ...filterInput(p.form),
    ...headersInput(p.form),
    ...rateLimitInput(p.form),
  });
  return p.c.redirect(`${p.here}?notice=endpoint-updated`, 303);
}

async function setStatus(p: Posted, action: 'enable' | 'disable'): Promise<Response> {
  await updateEndpointFromInput(p.ctx, p.applicationId, p.id, {
    status: action === 'enable' ? 'active' : 'disabled',
  });
  return p.c.redirect(`${p.here}?notice=endpoint-${action}d`, 303);
}

async function remove(p: Posted): Promise<Response> {
  if (p.form.confirm !== 'yes')
    return showEndpoint(p.ctx, p.c, { remove: unconfirmedDelete() }, 400);
  await removeEndpoint(p.ctx, p.applicationId, p.id);
  return p.c.redirect('/dashboard/endpoints?notice=endpoint-deleted', 303);
}

async function rotate(p: Posted): Promise<Response> {
  await rotateEndpointSecret(p.ctx, p.applicationId, p.id);
  return p.c.redirect(`${p.here}?reveal=1&notice=secret-rotated`, 303);
}

/** Sends a test event now and shows it on the events page, delivered or not (a test event is never retried). */
async function test(p: Posted): Promise<Response> {
  const sent = await sendTestEvent(p.ctx, p.applicationId, p.id);
  return p.c.redirect(
    `/dashboard/events?event=${sent.event}&notice=${sent.delivered ? 'test-delivered' : 'test-failed'}`,
    303,
  );
}

async function recover(p: Posted): Promise<Response> {
  const { count } = await recoverEndpoint(p.ctx, p.applicationId, p.id, {
    since: p.form.since ?? '',
  });
  return p.c.redirect(
    `${p.here}?notice=${count > 0 ? 'events-recovered' : 'nothing-to-recover'}`,
    303,
  );
}

async function run(p: Posted, action: string): Promise<Response> {
  switch (action) {
    case 'update':
      return update(p);
    case 'enable':
    case 'disable':
      return setStatus(p, action);
    case 'delete':
      return remove(p);
    case 'rotate':
      return rotate(p);
    case 'test':
      return test(p);
    case 'recover':
      return recover(p);
    default:
      throw unknownAction();
  }
}

/** The form that failed keeps what the user typed; other actions' errors show above the page. */
function failedState(action: string, err: ApiError, form: Record<string, string>): EndpointState {
  if (action === 'update') {
    const edit = formStateFrom(err, {
      ...editValues(form),
      ...filterFields(form),
      headers: form.headers ?? '',
      rate_limit: form.rate_limit ?? '',
    });
    return { edit: { ...edit, errors: foldHeaderErrors(edit.errors) } };
  }
  if (action === 'recover') return { recover: formStateFrom(err, { since: form.since ?? '' }) };
  return { message: err.message };
}

async function post(ctx: Ctx, c: Context<DashEnv>): Promise<Response> {
  const p = await readPosted(ctx, c, 'endpoints', requireEndpoint);
  const action = p.form._action ?? '';
  try {
    return await run(p, action);
  } catch (err) {
    if (!isFormError(err)) throw err;
    return showEndpoint(ctx, c, failedState(action, err, p.form), statusOf(c, err));
  }
}

/** The endpoint page: GET shows it (404 for another application's id), POST runs the `_action` and redirects (303). */
export function endpointPage(ctx: Ctx): Hono<DashEnv> {
  return new Hono<DashEnv>()
    .get('/endpoints/:id', (c) => showEndpoint(ctx, c))
    .post('/endpoints/:id', (c) => post(ctx, c));
}
