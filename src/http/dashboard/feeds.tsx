// /dashboard/feeds: the health of every feed the application's subscriptions use — failing, gone, identity changed first in the tabs.
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Ctx } from '../../context.ts';
import {
  countApplicationFeeds,
  listApplicationFeeds,
  requireFeedView,
  resolveIdentityChange,
} from '../../actions/feeds.ts';
import type { FeedStatus } from '../../store/feeds.ts';
import { ActionButton, Badge, Empty, Pager, Time } from './components.tsx';
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

const TABS: { status: FeedStatus | ''; label: string; empty: string }[] = [
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
    status: 'pending',
    label: 'Waiting for a first fetch',
    empty: 'Every feed has been fetched at least once.',
  },
  { status: 'active', label: 'Healthy', empty: 'No feed has been fetched successfully yet.' },
];

/** For a feed whose entries were suddenly replaced: how many are held, and the two ways to release them. */
function HeldEntries(p: { ctx: Ctx; c: Context<DashEnv>; feedId: string }) {
  const s = viewer(p.c);
  const held = requireFeedView(p.ctx, s.applicationId, p.feedId).held_entries;
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

function page(ctx: Ctx, c: Context<DashEnv>, error?: string, status: ContentfulStatusCode = 200) {
  const s = viewer(c);
  const tab = TABS.find((t) => t.status === (c.req.query('status') ?? '')) ?? TABS[0]!;
  const counts = countApplicationFeeds(ctx, s.applicationId);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const list = listApplicationFeeds(ctx, s.applicationId, {
    limit: 50,
    after: afterCursor(c),
    statuses: tab.status ? [tab.status] : undefined,
  });
  const base = tab.status ? `/dashboard/feeds?status=${tab.status}` : '/dashboard/feeds';
  return render(
    c,
    <Layout title="Feeds" section="feeds" session={s} notice={noticeOf(c)} error={error}>
      <h1>Feeds health</h1>
      <p class="muted">
        Every feed your subscriptions use. A failing feed keeps being retried with back-off; a gone
        feed (410) is no longer polled.
      </p>
      <nav class="tabs" aria-label="Filter by status">
        {TABS.map((t) => (
          <a
            href={t.status ? `/dashboard/feeds?status=${t.status}` : '/dashboard/feeds'}
            aria-current={t === tab ? 'page' : undefined}
          >
            {t.label} ({t.status ? counts[t.status] : total})
          </a>
        ))}
      </nav>
      {list.data.length === 0 ? (
        <Empty>{tab.empty}</Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Feed</th>
              <th>Status</th>
              <th>Last poll</th>
              <th>Next poll</th>
              <th>HTTP</th>
              <th>Entries</th>
              <th>Last error</th>
              <th>Subscriptions</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((f) => (
              <tr>
                <td class="url">
                  {f.title ? (
                    <div>
                      <strong>{f.title}</strong>
                    </div>
                  ) : null}
                  {f.url}
                  {f.discovered_url ? <div class="muted">discovered {f.discovered_url}</div> : null}
                </td>
                <td>
                  <Badge status={f.status} />
                  {f.error_count > 0 ? <div class="muted">{f.error_count} in a row</div> : null}
                  {f.status === 'identity_changed' ? (
                    <HeldEntries ctx={ctx} c={c} feedId={f.id} />
                  ) : null}
                </td>
                <td>
                  <Time at={f.last_polled_at} empty="not yet" />
                </td>
                <td>
                  <Time at={f.next_poll_at} empty="never" />
                </td>
                <td>{f.last_http_status ?? '—'}</td>
                <td>{f.entry_count}</td>
                <td>
                  {f.last_error ? <span class="error-text">{f.last_error}</span> : '—'}
                  {f.degraded ? <div class="muted">{f.degraded}</div> : null}
                </td>
                <td>{f.subscription_count}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager next={list.next} base={base} />
    </Layout>,
    status,
  );
}

/** The feeds page: GET shows health; POST releases a feed's held entries (`_action` deliver or discard) and redirects. */
export function feedsPage(ctx: Ctx): Hono<DashEnv> {
  return new Hono<DashEnv>()
    .get('/feeds', (c) => page(ctx, c))
    .post('/feeds', async (c) => {
      const { session: s, form } = await readPostedForm(c);
      if (form._action !== 'deliver' && form._action !== 'discard') throw unknownAction();
      try {
        resolveIdentityChange(ctx, s.applicationId, form.feed ?? '', { action: form._action }); // 404 page for another application's feed
      } catch (err) {
        if (isFormError(err)) return page(ctx, c, err.message, statusOf(err));
        throw err;
      }
      return c.redirect(
        `/dashboard/feeds?notice=held-${form._action === 'deliver' ? 'delivered' : 'discarded'}`,
        303,
      );
    });
}
