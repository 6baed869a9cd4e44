// /dashboard/events: the application's webhook events filtered by status, with their attempts and response snippets; resend.
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Ctx } from '../../context.ts';
import {
  listEventViews,
  requireEventDetail,
  resendEvent,
  type AttemptView,
  type EventView,
} from '../../actions/events.ts';
import { ActionButton, Badge, Empty, Pager, Time } from './components.tsx';
import { Select } from './fields.tsx';
import { render } from './errors.tsx';
import {
  afterCursor,
  isFormError,
  noticeOf,
  readPostedForm,
  statusOf,
  unknownAction,
} from './form.ts';
import { Layout } from './layout.tsx';
import { viewer, type DashEnv } from './session.ts';

const STATUSES = ['pending', 'delivered', 'failed', 'dead'] as const;
type Filters = { status: string; subscription: string; endpoint: string; event: string };

function filtersOf(get: (name: string) => string | undefined): Filters {
  const status = get('status') ?? '';
  const id = (v: string | undefined) => (v && /^[0-9a-f]{24}$/.test(v) ? v : '');
  return {
    status: (STATUSES as readonly string[]).includes(status) ? status : '',
    subscription: id(get('subscription')),
    endpoint: id(get('endpoint')),
    event: id(get('event')),
  };
}

function queryOf(f: Filters): string {
  const q = new URLSearchParams(Object.entries(f).filter(([, v]) => v !== ''));
  return q.size ? `?${q}` : '';
}

function Attempts(p: { attempts: AttemptView[] }) {
  if (p.attempts.length === 0) return <p class="muted">Not tried yet.</p>;
  return (
    <table>
      <thead>
        <tr>
          <th>Started</th>
          <th>Result</th>
          <th>Duration</th>
          <th>Response (first 4 KiB)</th>
        </tr>
      </thead>
      <tbody>
        {p.attempts.map((a) => (
          <tr>
            <td>
              <Time at={a.started_at} />
            </td>
            <td>
              {a.status_code !== null ? `HTTP ${a.status_code}` : 'no response'}
              {a.error ? <div class="error-text">{a.error}</div> : null}
            </td>
            <td>{a.duration_ms} ms</td>
            <td>
              {a.response_body ? <pre>{a.response_body}</pre> : <span class="muted">empty</span>}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function EventCard(p: {
  ctx: Ctx;
  c: Context<DashEnv>;
  e: EventView;
  filters: Filters;
  open: boolean;
}) {
  const s = viewer(p.c);
  const detail =
    p.e.attempt_count > 0 || p.open
      ? requireEventDetail(p.ctx, s.applicationId, p.e.id)
      : undefined;
  const hidden = Object.fromEntries(
    Object.entries({ ...p.filters, event: p.open ? p.e.id : p.filters.event }).filter(
      ([, v]) => v !== '',
    ),
  );
  return (
    <section class="card" id={`event-${p.e.id}`}>
      <div class="actions">
        <Badge status={p.e.status} /> <strong>{p.e.type}</strong> <span class="mono">{p.e.id}</span>
        {p.e.sequence !== null ? <span class="muted">sequence {p.e.sequence}</span> : null}
        <span class="muted">
          created <Time at={p.e.created_at} />
        </span>
      </div>
      <dl class="facts spaced">
        {p.e.subscription ? (
          <>
            <dt>Subscription</dt>
            <dd>
              <a href={`/dashboard/subscriptions/${p.e.subscription}`} class="mono">
                {p.e.subscription}
              </a>
            </dd>
          </>
        ) : null}
        <dt>Endpoint</dt>
        <dd>
          <a href={`/dashboard/endpoints/${p.e.endpoint}`} class="mono">
            {p.e.endpoint}
          </a>
        </dd>
        <dt>Attempts</dt>
        <dd>
          {detail?.attempts.length ?? 0}
          {detail && detail.attempts.length !== p.e.attempt_count ? (
            <span class="muted"> ({p.e.attempt_count} since it was last queued)</span>
          ) : null}
          {p.e.next_attempt_at ? (
            <span class="muted">
              {' '}
              — next <Time at={p.e.next_attempt_at} />
            </span>
          ) : null}
        </dd>
        {p.e.delivered_at ? (
          <>
            <dt>Delivered</dt>
            <dd>
              <Time at={p.e.delivered_at} />
            </dd>
          </>
        ) : null}
        {p.e.last_error ? (
          <>
            <dt>Last error</dt>
            <dd class="error-text">{p.e.last_error}</dd>
          </>
        ) : null}
      </dl>
      {detail ? (
        <details open={p.open}>
          <summary>Attempts ({detail.attempts.length})</summary>
          <Attempts attempts={detail.attempts} />
        </details>
      ) : null}
      {p.open && detail ? (
        <details>
          <summary>Payload (the exact body of every attempt)</summary>
          <pre>{detail.payload.text}</pre>
        </details>
      ) : null}
      {p.e.status !== 'pending' ? (
        <div class="actions spaced">
          <ActionButton
            to="/dashboard/events"
            csrf={s.csrfToken}
            action="resend"
            label="Resend"
            variant="secondary"
            fields={{ id: p.e.id, ...hidden }}
          />
        </div>
      ) : null}
    </section>
  );
}

function page(
  ctx: Ctx,
  c: Context<DashEnv>,
  filters: Filters,
  error?: string,
  status: ContentfulStatusCode = 200,
) {
  const s = viewer(c);
  const single = filters.event
    ? [requireEventDetail(ctx, s.applicationId, filters.event)]
    : undefined;
  const list = single
    ? { data: single, next: null }
    : listEventViews(ctx, s.applicationId, {
        limit: 25,
        after: afterCursor(c),
        status: filters.status || undefined,
        subscription: filters.subscription || undefined,
        endpoint: filters.endpoint || undefined,
      });
  const options = [
    { value: '', label: 'Any status' },
    ...STATUSES.map((x) => ({ value: x, label: x })),
  ];
  const scope = filters.subscription
    ? 'of this subscription '
    : filters.endpoint
      ? 'of this endpoint '
      : '';
  return render(
    c,
    <Layout title="Events" section="events" session={s} notice={noticeOf(c)} error={error}>
      <h1>Events</h1>
      <p class="muted">
        One event is one webhook message. Failed events are retried on a schedule; dead ones have
        used every retry.
      </p>
      {single ? (
        <p>
          <a href="/dashboard/events">← All events</a>
        </p>
      ) : (
        <form method="get" action="/dashboard/events" class="card actions">
          {filters.subscription ? (
            <input type="hidden" name="subscription" value={filters.subscription} />
          ) : null}
          {filters.endpoint ? (
            <input type="hidden" name="endpoint" value={filters.endpoint} />
          ) : null}
          <Select
            name="status"
            label="Status"
            values={{ status: filters.status }}
            errors={{}}
            idPrefix="filter"
            options={options}
          />
          <button type="submit" class="secondary">
            Filter
          </button>
          {filters.subscription || filters.endpoint ? (
            <a href="/dashboard/events">Show every event</a>
          ) : null}
        </form>
      )}
      {list.data.length === 0 ? (
        <Empty>
          No events {scope}
          {filters.status ? `with status ${filters.status} ` : ''}yet. Events appear when a
          subscribed feed gets new entries, or when you send a test event from an endpoint's page.
        </Empty>
      ) : (
        list.data.map((e) => (
          <EventCard ctx={ctx} c={c} e={e} filters={filters} open={single !== undefined} />
        ))
      )}
      <Pager next={list.next} base={`/dashboard/events${queryOf({ ...filters, event: '' })}`} />
    </Layout>,
    status,
  );
}

/** The events page: GET lists (filters in the query string), POST resends one (303 back to the same filters). */
export function eventsPage(ctx: Ctx): Hono<DashEnv> {
  return new Hono<DashEnv>()
    .get('/events', (c) =>
      page(
        ctx,
        c,
        filtersOf((n) => c.req.query(n)),
      ),
    )
    .post('/events', async (c) => {
      const { session: s, form } = await readPostedForm(c);
      const filters = filtersOf((n) => form[n]);
      if (form._action !== 'resend') throw unknownAction();
      try {
        resendEvent(ctx, s.applicationId, form.id ?? ''); // 404 page for an unknown or another application's id
      } catch (err) {
        if (isFormError(err)) return page(ctx, c, filters, err.message, statusOf(err));
        throw err;
      }
      const q = queryOf(filters);
      return c.redirect(`/dashboard/events${q}${q ? '&' : '?'}notice=event-resent`, 303);
    });
}
