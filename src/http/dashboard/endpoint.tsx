// /dashboard/endpoints/:id: one endpoint — edit, enable/disable, reveal and rotate its secret, send a test event, recover, delete.
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Ctx } from '../../context.ts';
import { listEventViews, sendTestEvent } from '../../actions/events.ts';
import {
  endpointSecret,
  endpointView,
  recoverEndpoint,
  removeEndpoint,
  requireEndpoint,
  rotateEndpointSecret,
  updateEndpointFromInput,
  type EndpointView,
} from '../../actions/endpoints.ts';
import { listSubscriptionViews } from '../../actions/subscriptions.ts';
import { ActionButton, Badge, ConfirmDelete, Csrf, Empty, Time } from './components.tsx';
import { Field } from './fields.tsx';
import { render } from './errors.tsx';
import { EventsTable } from './events-table.tsx';
import {
  formStateFrom,
  isFormError,
  noticeOf,
  readPostedForm,
  statusOf,
  unconfirmedDelete,
  unknownAction,
  type FormState,
} from './form.ts';
import { Layout } from './layout.tsx';
import { viewer, type DashEnv } from './session.ts';

/** What a re-render after a failed POST shows: which form failed, with its values and errors. */
export type EndpointState = {
  edit?: FormState;
  remove?: FormState;
  recover?: FormState;
  message?: string | undefined;
};

function SecretBox(p: { ctx: Ctx; c: Context<DashEnv>; e: EndpointView }) {
  const s = viewer(p.c);
  const here = `/dashboard/endpoints/${p.e.id}`;
  if (p.c.req.query('reveal') !== '1') {
    return (
      <div class="actions">
        <a href={`${here}?reveal=1`}>Reveal secret</a>
        <ActionButton
          to={here}
          csrf={s.csrfToken}
          action="rotate"
          label="Rotate secret"
          variant="secondary"
        />
      </div>
    );
  }
  const secret = endpointSecret(p.ctx, s.applicationId, p.e.id);
  return (
    <div>
      <p>
        Signing secret (Standard Webhooks): configure your receiver with it to verify{' '}
        <code>webhook-signature</code>.
      </p>
      <p class="secret" id="secret">
        {secret.secret}
      </p>
      {secret.previous_secret ? (
        <p>
          Previous secret, still signing until <Time at={secret.previous_secret_expires_at} />:{' '}
          <span class="secret">{secret.previous_secret}</span>
        </p>
      ) : null}
      <div class="actions">
        <a href={here}>Hide secret</a>
        <ActionButton
          to={here}
          csrf={s.csrfToken}
          action="rotate"
          label="Rotate secret"
          variant="secondary"
        />
      </div>
    </div>
  );
}

function RecoverForm(p: { here: string; csrf: string; form: FormState }) {
  return (
    <form method="post" action={p.here} class="card">
      <Csrf token={p.csrf} />
      <input type="hidden" name="_action" value="recover" />
      <Field
        name="since"
        label="Re-send every failed or dead event created since"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="recover"
        required
        hint="An ISO 8601 UTC time, e.g. 2026-01-01T00:00:00Z. Each is sent again with its webhook-id, in order per subscription."
      />
      <button type="submit" class="secondary">
        Recover events
      </button>
    </form>
  );
}

function page(
  ctx: Ctx,
  c: Context<DashEnv>,
  state: EndpointState = {},
  status: ContentfulStatusCode = 200,
) {
  const s = viewer(c);
  const e = endpointView(requireEndpoint(ctx, s.applicationId, c.req.param('id') ?? ''));
  const here = `/dashboard/endpoints/${e.id}`;
  const subs = listSubscriptionViews(ctx, s.applicationId, { limit: 50, endpoint: e.id });
  const events = listEventViews(ctx, s.applicationId, { limit: 10, endpoint: e.id });
  const edit = state.edit ?? { values: { title: e.title, url: e.url }, errors: {} };
  const recover = state.recover ?? {
    values: { since: new Date(ctx.clock.now().getTime() - 7 * 86_400_000).toISOString() },
    errors: {},
  };
  return render(
    c,
    <Layout
      title={e.title}
      section="endpoints"
      session={s}
      notice={noticeOf(c)}
      error={
        state.message ?? state.edit?.message ?? state.remove?.message ?? state.recover?.message
      }
    >
      <p class="muted">
        <a href="/dashboard/endpoints">Endpoints</a> /
      </p>
      <h1>{e.title}</h1>
      <section class="card">
        <dl class="facts">
          <dt>URL</dt>
          <dd class="mono">{e.url}</dd>
          <dt>Status</dt>
          <dd>
            <Badge status={e.status} />{' '}
            {e.disabled_reason ? <span>— {e.disabled_reason}</span> : null}
          </dd>
          <dt>Id</dt>
          <dd class="mono">{e.id}</dd>
          <dt>Created</dt>
          <dd>
            <Time at={e.created_at} />
          </dd>
          <dt>Updated</dt>
          <dd>
            <Time at={e.updated_at} />
          </dd>
        </dl>
        <div class="actions spaced">
          {e.status === 'active' ? (
            <ActionButton
              to={here}
              csrf={s.csrfToken}
              action="disable"
              label="Disable"
              variant="secondary"
            />
          ) : (
            <ActionButton to={here} csrf={s.csrfToken} action="enable" label="Enable" />
          )}
          <ActionButton
            to={here}
            csrf={s.csrfToken}
            action="test"
            label="Send test event"
            variant="secondary"
          />
        </div>
      </section>
      <h2>Signing secret</h2>
      <section class="card">
        <SecretBox ctx={ctx} c={c} e={e} />
      </section>
      <h2>Edit</h2>
      <form method="post" action={here} class="card">
        <Csrf token={s.csrfToken} />
        <input type="hidden" name="_action" value="update" />
        <Field
          name="title"
          label="Title"
          values={edit.values}
          errors={edit.errors}
          idPrefix="edit"
          required
        />
        <Field
          name="url"
          label="URL"
          type="url"
          values={edit.values}
          errors={edit.errors}
          idPrefix="edit"
          required
        />
        <button type="submit">Save</button>
      </form>
      <h2>Recover failed deliveries</h2>
      <RecoverForm here={here} csrf={s.csrfToken} form={recover} />
      <h2>Subscriptions using it</h2>
      {subs.data.length === 0 ? (
        <Empty>
          No subscription sends to this endpoint yet.{' '}
          <a href="/dashboard/subscriptions">Subscribe it to a feed</a>.
        </Empty>
      ) : (
        <ul>
          {subs.data.map((x) => (
            <li>
              <a href={`/dashboard/subscriptions/${x.id}`}>{x.url}</a> <Badge status={x.status} />
            </li>
          ))}
        </ul>
      )}
      <h2>Recent events</h2>
      <EventsTable rows={events.data} empty="No events sent to this endpoint yet." />
      <p>
        <a href={`/dashboard/events?endpoint=${e.id}`}>All events of this endpoint →</a>
      </p>
      <h2>Delete</h2>
      <ConfirmDelete
        to={here}
        csrf={s.csrfToken}
        confirm="Yes, delete this endpoint and its events"
        button="Delete endpoint"
        error={state.remove?.errors.confirm}
      />
    </Layout>,
    status,
  );
}

async function post(ctx: Ctx, c: Context<DashEnv>): Promise<Response> {
  const { session: s, form } = await readPostedForm(c);
  const id = c.req.param('id') ?? '';
  requireEndpoint(ctx, s.applicationId, id);
  const here = `/dashboard/endpoints/${id}`;
  const action = form._action ?? '';
  const values = { title: form.title ?? '', url: form.url ?? '' };
  try {
    switch (action) {
      case 'update':
        updateEndpointFromInput(ctx, s.applicationId, id, values);
        return c.redirect(`${here}?notice=endpoint-updated`, 303);
      case 'enable':
      case 'disable':
        updateEndpointFromInput(ctx, s.applicationId, id, {
          status: action === 'enable' ? 'active' : 'disabled',
        });
        return c.redirect(`${here}?notice=endpoint-${action}d`, 303);
      case 'delete':
        if (form.confirm !== 'yes') return page(ctx, c, { remove: unconfirmedDelete() }, 400);
        removeEndpoint(ctx, s.applicationId, id);
        return c.redirect('/dashboard/endpoints?notice=endpoint-deleted', 303);
      case 'rotate':
        rotateEndpointSecret(ctx, s.applicationId, id);
        return c.redirect(`${here}?reveal=1&notice=secret-rotated`, 303);
      case 'test': {
        const sent = await sendTestEvent(ctx, s.applicationId, id);
        return c.redirect(
          `/dashboard/events?event=${sent.event}&notice=${sent.delivered ? 'test-delivered' : 'test-failed'}`,
          303,
        );
      }
      case 'recover': {
        const { count } = recoverEndpoint(ctx, s.applicationId, id, { since: form.since ?? '' });
        return c.redirect(
          `${here}?notice=${count > 0 ? 'events-recovered' : 'nothing-to-recover'}`,
          303,
        );
      }
      default:
        throw unknownAction();
    }
  } catch (err) {
    if (!isFormError(err)) throw err;
    const state: EndpointState =
      action === 'update'
        ? { edit: formStateFrom(err, values) }
        : action === 'recover'
          ? { recover: formStateFrom(err, { since: form.since ?? '' }) }
          : { message: err.message };
    return page(ctx, c, state, statusOf(err));
  }
}

/** The endpoint page: GET shows it (404 for another application's id), POST runs the `_action` and redirects (303). */
export function endpointPage(ctx: Ctx): Hono<DashEnv> {
  return new Hono<DashEnv>()
    .get('/endpoints/:id', (c) => page(ctx, c))
    .post('/endpoints/:id', (c) => post(ctx, c));
}
