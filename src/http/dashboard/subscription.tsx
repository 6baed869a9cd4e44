// /dashboard/subscriptions/:id: one subscription — its feed's health, recent events, edit, pause/resume, delete.
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Ctx } from '../../context.ts';
import { listEventViews } from '../../actions/events.ts';
import { listEndpointViews } from '../../actions/endpoints.ts';
import { requireFeedView, type FeedView } from '../../actions/feeds.ts';
import {
  removeSubscription,
  requireSubscription,
  subscriptionView,
  updateSubscriptionFromInput,
} from '../../actions/subscriptions.ts';
import { ActionButton, Badge, ConfirmDelete, Csrf, Time } from './components.tsx';
import { Select, TextArea } from './fields.tsx';
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
import { endpointOptions, parseMetadata } from './subscriptions.tsx';

type State = { edit?: FormState; remove?: FormState; message?: string | undefined };

const seconds = (n: number | null) =>
  n === null ? '—' : n % 3600 === 0 ? `${n / 3600} h` : n % 60 === 0 ? `${n / 60} min` : `${n} s`;

/** The feed's health: what the poller knows about it. */
export function FeedHealth(p: { f: FeedView }) {
  const f = p.f;
  return (
    <dl class="facts">
      <dt>Status</dt>
      <dd>
        <Badge status={f.status} />
      </dd>
      <dt>Title</dt>
      <dd>{f.title ?? <span class="muted">not fetched yet</span>}</dd>
      <dt>Fetched URL</dt>
      <dd class="mono">{f.feed_url}</dd>
      <dt>Discovered URL</dt>
      <dd class="mono">
        {f.discovered_url ?? <span class="muted">none (the URL is the feed itself)</span>}
      </dd>
      <dt>Last poll</dt>
      <dd>
        <Time at={f.last_polled_at} empty="not polled yet" />
      </dd>
      <dt>Last success</dt>
      <dd>
        <Time at={f.last_success_at} empty="never" />
      </dd>
      <dt>Next poll</dt>
      <dd>
        <Time at={f.next_poll_at} empty={f.status === 'gone' ? 'never (gone)' : '—'} />{' '}
        <span class="muted">every {seconds(f.interval_seconds)}</span>
      </dd>
      <dt>HTTP status</dt>
      <dd>{f.last_http_status ?? '—'}</dd>
      <dt>Entries seen</dt>
      <dd>{f.entry_count}</dd>
      <dt>Errors in a row</dt>
      <dd>
        {f.error_count}{' '}
        <span class="muted">
          (total: {f.network_error_count} network, {f.http_error_count} HTTP, {f.parse_error_count}{' '}
          parse)
        </span>
      </dd>
      <dt>Last error</dt>
      <dd>
        {f.last_error ? <span class="error-text">{f.last_error}</span> : '—'}{' '}
        {f.last_error_at ? <Time at={f.last_error_at} /> : null}
      </dd>
      {f.degraded ? (
        <>
          <dt>Parsing</dt>
          <dd>{f.degraded}</dd>
        </>
      ) : null}
      {f.held_entries > 0 ? (
        <>
          <dt>Held entries</dt>
          <dd>
            {f.held_entries} — the feed replaced most of its entry ids at once;{' '}
            <a href="/dashboard/feeds?status=identity_changed">send or discard them</a>
          </dd>
        </>
      ) : null}
    </dl>
  );
}

function page(
  ctx: Ctx,
  c: Context<DashEnv>,
  state: State = {},
  status: ContentfulStatusCode = 200,
) {
  const s = viewer(c);
  const sub = subscriptionView(requireSubscription(ctx, s.applicationId, c.req.param('id') ?? ''));
  const feed = requireFeedView(ctx, s.applicationId, sub.feed);
  const endpoints = listEndpointViews(ctx, s.applicationId, { limit: 200 }).data;
  const endpoint = endpoints.find((e) => e.id === sub.endpoint);
  const events = listEventViews(ctx, s.applicationId, { limit: 10, subscription: sub.id });
  const here = `/dashboard/subscriptions/${sub.id}`;
  const edit = state.edit ?? {
    values: { endpoint: sub.endpoint, metadata: sub.metadata?.text ?? '' },
    errors: {},
  };
  return render(
    c,
    <Layout
      title={sub.url}
      section="subscriptions"
      session={s}
      notice={noticeOf(c)}
      error={state.message ?? state.edit?.message ?? state.remove?.message}
    >
      <p class="muted">
        <a href="/dashboard/subscriptions">Subscriptions</a> /
      </p>
      <h1 class="mono">{sub.url}</h1>
      <section class="card">
        <dl class="facts">
          <dt>Status</dt>
          <dd>
            <Badge status={sub.status} />
          </dd>
          <dt>Endpoint</dt>
          <dd>
            <a href={`/dashboard/endpoints/${sub.endpoint}`}>{endpoint?.title ?? sub.endpoint}</a>
          </dd>
          <dt>Metadata</dt>
          <dd>{sub.metadata ? <pre>{sub.metadata.text}</pre> : <span class="muted">none</span>}</dd>
          <dt>Id</dt>
          <dd class="mono">{sub.id}</dd>
          <dt>Created</dt>
          <dd>
            <Time at={sub.created_at} />
          </dd>
        </dl>
        <div class="actions spaced">
          {sub.status === 'active' ? (
            <ActionButton
              to={here}
              csrf={s.csrfToken}
              action="pause"
              label="Pause"
              variant="secondary"
            />
          ) : (
            <ActionButton to={here} csrf={s.csrfToken} action="resume" label="Resume" />
          )}
        </div>
      </section>
      <h2>Feed health</h2>
      <section class="card" id="feed-health">
        <FeedHealth f={feed} />
      </section>
      <h2>Recent events</h2>
      <EventsTable
        rows={events.data}
        empty={
          feed.status === 'pending'
            ? 'No events yet: the feed has not been fetched. Its first fetch records the current entries as a baseline; later entries are sent.'
            : 'No events yet: new entries of the feed will be sent here.'
        }
      />
      <p>
        <a href={`/dashboard/events?subscription=${sub.id}`}>All events of this subscription →</a>
      </p>
      <h2>Edit</h2>
      <form method="post" action={here} class="card">
        <Csrf token={s.csrfToken} />
        <input type="hidden" name="_action" value="update" />
        <Select
          name="endpoint"
          label="Endpoint"
          values={edit.values}
          errors={edit.errors}
          idPrefix="edit"
          options={endpointOptions(endpoints, false)}
        />
        <TextArea
          name="metadata"
          label="Metadata (JSON object; empty to clear)"
          values={edit.values}
          errors={edit.errors}
          idPrefix="edit"
        />
        <button type="submit">Save</button>
      </form>
      <h2>Delete</h2>
      <ConfirmDelete
        to={here}
        csrf={s.csrfToken}
        confirm="Yes, delete this subscription and its undelivered events"
        button="Delete subscription"
        error={state.remove?.errors.confirm}
      />
    </Layout>,
    status,
  );
}

async function post(ctx: Ctx, c: Context<DashEnv>): Promise<Response> {
  const { session: s, form } = await readPostedForm(c);
  const id = c.req.param('id') ?? '';
  requireSubscription(ctx, s.applicationId, id);
  const here = `/dashboard/subscriptions/${id}`;
  const values = { endpoint: form.endpoint ?? '', metadata: form.metadata ?? '' };
  try {
    switch (form._action) {
      case 'update': {
        const metadata = parseMetadata(values.metadata);
        if (metadata.error)
          return page(
            ctx,
            c,
            {
              edit: {
                values,
                errors: { metadata: metadata.error },
                message: 'Please correct the fields marked below.',
              },
            },
            400,
          );
        updateSubscriptionFromInput(
          ctx,
          s.applicationId,
          id,
          { endpoint: values.endpoint, metadata: metadata.value ?? null },
          { metadata: metadata.raw },
        );
        return c.redirect(`${here}?notice=subscription-updated`, 303);
      }
      case 'pause':
      case 'resume':
        updateSubscriptionFromInput(ctx, s.applicationId, id, {
          status: form._action === 'pause' ? 'paused' : 'active',
        });
        return c.redirect(`${here}?notice=subscription-${form._action}d`, 303);
      case 'delete':
        if (form.confirm !== 'yes') return page(ctx, c, { remove: unconfirmedDelete() }, 400);
        removeSubscription(ctx, s.applicationId, id);
        return c.redirect('/dashboard/subscriptions?notice=subscription-deleted', 303);
      default:
        throw unknownAction();
    }
  } catch (err) {
    if (!isFormError(err)) throw err;
    return page(
      ctx,
      c,
      form._action === 'update' ? { edit: formStateFrom(err, values) } : { message: err.message },
      statusOf(err),
    );
  }
}

/** The subscription page: GET shows it (404 for another application's id), POST runs the `_action` and redirects (303). */
export function subscriptionPage(ctx: Ctx): Hono<DashEnv> {
  return new Hono<DashEnv>()
    .get('/subscriptions/:id', (c) => page(ctx, c))
    .post('/subscriptions/:id', (c) => post(ctx, c));
}
