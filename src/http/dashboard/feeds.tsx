// /dashboard/feeds: the health of every feed the application's subscriptions use — failing, gone, identity changed, over
// budget first in the tabs — and what the application keeps against its storage budget.
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Ctx } from '../../context.ts';
import {
  countApplicationFeeds,
  listApplicationFeeds,
  requestFeedRefresh,
  requireFeedView,
  resolveIdentityChange,
  type FeedView,
} from '../../actions/feeds.ts';
import type { FeedStatus } from '../../store/feeds.ts';
import { ActionButton, Badge, DataTable, Empty, Pager, Time } from './components.tsx';
import { storageView } from '../../actions/budget.ts';
import { feedPollHours } from '../../actions/poll-counts.ts';
import { HourSparkline } from './chart.tsx';
import { chartHours, pollChart } from './charts.ts';
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

type Tab = { status: FeedStatus | ''; label: string; empty: string };

const TABS: Tab[] = [
  {
    status: '',
    label: 'All',
    empty: 'No feeds yet: feeds appear here when you subscribe to them on the Subscriptions page.',
  },
  { status: 'error', label: 'Failing', empty: 'No feed is failing.' },
  { status: 'gone', label: 'Gone', empty: 'No feed has answered 410 Gone.' },
  {
    status: 'identity_changed',
    label: 'Identity changed',
    empty: 'No feed has suddenly replaced its entries.',
  },
  {
    status: 'over_budget',
    label: 'Over budget',
    empty: 'No feed is held for your storage budget.',
  },
  {
    status: 'pending',
    label: 'Waiting for a first fetch',
    empty: 'Every feed has been fetched at least once.',
  },
  { status: 'active', label: 'Healthy', empty: 'No feed has been fetched successfully yet.' },
];

/** For a feed whose entries were suddenly replaced: how many are held, and the two ways to release them. */
async function HeldEntries(p: { ctx: Ctx; c: Context<DashEnv>; feedId: string }) {
  const s = viewer(p.c);
  const held = (await requireFeedView(p.ctx, s.applicationId, p.feedId)).held_entries;
  if (held === 0) return null;
  return (
    <div class="spaced">
      <div>{held} entries held back (the feed replaced most of its entry ids at once).</div>
      <div class="actions">
        <ActionButton
          to="/dashboard/feeds"
          csrf={s.csrfToken}
          action="deliver"
          label="Send held entries"
          variant="secondary"
          fields={{ feed: p.feedId }}
        />
        <ActionButton
          to="/dashboard/feeds"
          csrf={s.csrfToken}
          action="discard"
          label="Discard held entries"
          variant="danger"
          fields={{ feed: p.feedId }}
        />
      </div>
    </div>
  );
}

/** What the application keeps against its storage budget, in MB. */
async function StorageLine(p: { ctx: Ctx; applicationId: string }) {
  const s = await storageView(p.ctx, p.applicationId);
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
  return (
    <p class="muted">
      Storage: {mb(s.used_bytes)} ({mb(s.feed_bytes)} for feeds only your subscriptions use,{' '}
      {mb(s.event_bytes)} of events)
      {s.budget_bytes > 0 ? `, of a budget of ${mb(s.budget_bytes)}` : ', no budget'}
      {s.held_feeds > 0 ? `; ${s.held_feeds} feeds held until there is room` : ''}.
    </p>
  );
}

/** A tab's link: the feeds page filtered by `status`, or unfiltered for "All". */
function tabHref(status: FeedStatus | ''): string {
  return status ? `/dashboard/feeds?status=${status}` : '/dashboard/feeds';
}

/** One tab per status, each with its count; "All" counts every feed. */
function FeedTabs(p: { current: Tab; counts: Record<FeedStatus, number> }) {
  const total = Object.values(p.counts).reduce((a, b) => a + b, 0);
  return (
    <nav class="tabs" aria-label="Filter by status">
      {TABS.map((t) => (
        <a href={tabHref(t.status)} aria-current={t === p.current ? 'page' : undefined}>
          {t.label} ({t.status ? p.counts[t.status] : total})
        </a>
      ))}
    </nav>
  );
}

async function FeedTableRow(p: {
  ctx: Ctx;
  c: Context<DashEnv>;
  f: FeedView & { subscription_count: number };
}) {
  const f = p.f;
  const now = p.ctx.clock.now();
  return (
    <tr>
      <td data-label="Feed" class="url">
        {f.title ? (
          <div>
            <strong>{f.title}</strong>
          </div>
        ) : null}
        {f.url}
        {f.discovered_url ? <div class="muted">discovered {f.discovered_url}</div> : null}
      </td>
      <td data-label="Status">
        <Badge status={f.status} />
        {f.error_count > 0 ? <div class="muted">{f.error_count} in a row</div> : null}
        {f.status === 'identity_changed' ? <HeldEntries ctx={p.ctx} c={p.c} feedId={f.id} /> : null}
        {f.over_budget ? <div class="muted">{f.over_budget.detail}</div> : null}
      </td>
      <td data-label="Last poll">
        <Time at={f.last_polled_at} empty="not yet" />
      </td>
      <td data-label="Next poll">
        <Time at={f.next_poll_at} empty="never" />
        <div>
          <ActionButton
            to="/dashboard/feeds"
            csrf={viewer(p.c).csrfToken}
            action="refresh"
            label="Refresh now"
            variant="secondary"
            fields={{ feed: f.id }}
          />
        </div>
      </td>
      <td data-label="HTTP">{f.last_http_status ?? '—'}</td>
      <td data-label="Entries">{f.entry_count}</td>
      <td data-label="Last error">
        {f.last_error ? <span class="error-text">{f.last_error}</span> : '—'}
        {f.degraded ? <div class="muted">{f.degraded}</div> : null}
      </td>
      <td data-label="Subscriptions">{f.subscription_count}</td>
      <td data-label="Polls, last 24 h">
        <HourSparkline
          title="Polls, last 24 h"
          chart={pollChart(await feedPollHours(p.ctx, f.id, chartHours(now)), now)}
        />
      </td>
    </tr>
  );
}

const COLUMNS = [
  'Feed',
  'Status',
  'Last poll',
  'Next poll',
  'HTTP',
  'Entries',
  'Last error',
  'Subscriptions',
  'Polls, last 24 h',
];

async function page(
  ctx: Ctx,
  c: Context<DashEnv>,
  error?: string,
  status: ContentfulStatusCode = 200,
) {
  const s = viewer(c);
  const tab = TABS.find((t) => t.status === (c.req.query('status') ?? '')) ?? TABS[0]!;
  const counts = await countApplicationFeeds(ctx, s.applicationId);
  const list = await listApplicationFeeds(ctx, s.applicationId, {
    limit: 50,
    after: afterCursor(c),
    statuses: tab.status ? [tab.status] : undefined,
  });
  return render(
    c,
    <Layout title="Feeds" section="feeds" session={s} notice={noticeOf(c)} error={error}>
      <h1>Feeds health</h1>
      <p class="muted">
        Every feed your subscriptions use. A failing feed keeps being retried with back-off; a gone
        feed (410) is no longer polled until you refresh it. Refresh now fetches a feed within
        seconds (at most once per minimum poll interval).
      </p>
      <StorageLine ctx={ctx} applicationId={s.applicationId} />
      <FeedTabs current={tab} counts={counts} />
      {list.data.length === 0 ? (
        <Empty>{tab.empty}</Empty>
      ) : (
        <DataTable head={COLUMNS}>
          {list.data.map((f) => (
            <FeedTableRow ctx={ctx} c={c} f={f} />
          ))}
        </DataTable>
      )}
      <Pager next={list.next} base={tabHref(tab.status)} />
    </Layout>,
    status,
  );
}

/** POST /dashboard/feeds: sends or discards a feed's held entries (`_action` deliver or discard), or asks for a fetch
 *  now (`refresh`), then 303; a refused refresh (too soon, not polled) shows the page with why. */
async function release(ctx: Ctx, c: Context<DashEnv>): Promise<Response> {
  const { session: s, form } = await readPostedForm(c);
  const action = form._action;
  if (action !== 'deliver' && action !== 'discard' && action !== 'refresh') throw unknownAction();
  try {
    // A 404 page for another application's feed.
    if (action === 'refresh') await requestFeedRefresh(ctx, s.applicationId, form.feed ?? '');
    else await resolveIdentityChange(ctx, s.applicationId, form.feed ?? '', { action });
  } catch (err) {
    if (isFormError(err)) return page(ctx, c, err.message, statusOf(c, err));
    throw err;
  }
  const notice = {
    deliver: 'held-delivered',
    discard: 'held-discarded',
    refresh: 'feed-refreshed',
  };
  return c.redirect(`/dashboard/feeds?notice=${notice[action]}`, 303);
}

/** The feeds page: GET shows health; POST releases a feed's held entries (`_action` deliver or discard) or refreshes
 *  it, and redirects. */
export function feedsPage(ctx: Ctx): Hono<DashEnv> {
  return new Hono<DashEnv>()
    .get('/feeds', (c) => page(ctx, c))
    .post('/feeds', (c) => release(ctx, c));
}
