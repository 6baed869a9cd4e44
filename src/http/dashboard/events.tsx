// /dashboard/events: the application's webhook events filtered by status, with their attempts and response snippets; resend.
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Ctx } from '../../context.ts';
import {
  listEventViews,
  requireEventDetail,
  resendEvent,
  type EventView,
} from '../../actions/events.ts';
import { Empty, Pager } from './components.tsx';
import { render } from './errors.tsx';
import { EventCard } from './event-card.tsx';
import { summariesOf } from './event-about.tsx';
import { FilterForm, filtersOf, KindTabs, queryOf, type Filters } from './event-filters.tsx';
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

/** The one event `?event=` names (404 for another application's), or a page of the filtered list. */
async function loadEvents(
  ctx: Ctx,
  c: Context<DashEnv>,
  filters: Filters,
): Promise<{ data: EventView[]; next: string | null; single: boolean }> {
  const applicationId = viewer(c).applicationId;
  if (filters.event)
    return {
      data: [await requireEventDetail(ctx, applicationId, filters.event)],
      next: null,
      single: true,
    };
  const list = await listEventViews(ctx, applicationId, {
    limit: 25,
    after: afterCursor(c),
    status: filters.status || undefined,
    subscription: filters.subscription || undefined,
    endpoint: filters.endpoint || undefined,
    tests: filters.kind === 'tests',
  });
  return { ...list, single: false };
}

/** An empty list says what it was filtered by, and where events come from. */
function NoEvents(p: { filters: Filters }) {
  const filters = p.filters;
  const scope = filters.subscription
    ? 'of this subscription '
    : filters.endpoint
      ? 'of this endpoint '
      : '';
  const status = filters.status ? `with status ${filters.status} ` : '';
  if (filters.kind === 'tests')
    return (
      <Empty>
        No test pings {scope}
        {status}yet. Send one from an endpoint's page.
      </Empty>
    );
  return (
    <Empty>
      No events {scope}
      {status}yet. Events appear when a subscribed feed gets new entries or changes health.
    </Empty>
  );
}

async function page(
  ctx: Ctx,
  c: Context<DashEnv>,
  filters: Filters,
  error?: string,
  status: ContentfulStatusCode = 200,
) {
  const s = viewer(c);
  const list = await loadEvents(ctx, c, filters);
  const summaries = await summariesOf(ctx, list.data);
  return render(
    c,
    <Layout title="Events" section="events" session={s} notice={noticeOf(c)} error={error}>
      <h1>Events</h1>
      <p class="muted">
        One event is one webhook message: new entries of a feed, or a change in its health. Failed
        events are retried on a schedule; dead ones have used every retry. Test pings, sent from an
        endpoint's page and never retried, are listed apart.
      </p>
      {list.single ? (
        <p>
          <a href="/dashboard/events">← All events</a>
        </p>
      ) : (
        <>
          <KindTabs filters={filters} />
          <FilterForm filters={filters} />
        </>
      )}
      {list.data.length === 0 ? (
        <NoEvents filters={filters} />
      ) : (
        list.data.map((e) => (
          <EventCard
            ctx={ctx}
            c={c}
            e={e}
            summary={summaries.get(e.id)}
            filters={filters}
            open={list.single}
          />
        ))
      )}
      <Pager next={list.next} base={`/dashboard/events${queryOf({ ...filters, event: '' })}`} />
    </Layout>,
    status,
  );
}

/** POST /dashboard/events: resends one event, then 303 back to the list with the same filters. */
async function resend(ctx: Ctx, c: Context<DashEnv>): Promise<Response> {
  const { session: s, form } = await readPostedForm(c);
  const filters = filtersOf((n) => form[n]);
  if (form._action !== 'resend') throw unknownAction();
  try {
    await resendEvent(ctx, s.applicationId, form.id ?? ''); // 404 page for an unknown or another application's id
  } catch (err) {
    if (isFormError(err)) return page(ctx, c, filters, err.message, statusOf(c, err));
    throw err;
  }
  const q = queryOf(filters);
  return c.redirect(`/dashboard/events${q}${q ? '&' : '?'}notice=event-resent`, 303);
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
    .post('/events', (c) => resend(ctx, c));
}
