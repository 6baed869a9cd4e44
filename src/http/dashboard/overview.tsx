// The overview at /dashboard once signed in: counts, and what needs attention (disabled endpoints, failing feeds, failed events).
import type { Context } from 'hono';
import type { Ctx } from '../../context.ts';
import { listEventViews } from '../../actions/events.ts';
import { listEndpointViews } from '../../actions/endpoints.ts';
import { countApplicationFeeds, listApplicationFeeds } from '../../actions/feeds.ts';
import { listSubscriptionViews } from '../../actions/subscriptions.ts';
import { Badge, Empty, Time } from './components.tsx';
import { render } from './errors.tsx';
import { noticeOf } from './form.ts';
import { Layout } from './layout.tsx';
import { viewer, type DashEnv } from './session.ts';

const CAP = 200;
const counted = (n: number, more: boolean) => (more ? `${n}+` : String(n));

/** GET /dashboard with a session. */
export function showOverview(ctx: Ctx, c: Context<DashEnv>): Response | Promise<Response> {
  const s = viewer(c);
  const endpoints = listEndpointViews(ctx, s.applicationId, { limit: CAP });
  const subscriptions = listSubscriptionViews(ctx, s.applicationId, { limit: CAP });
  const feeds = countApplicationFeeds(ctx, s.applicationId);
  const troubled = listApplicationFeeds(ctx, s.applicationId, {
    limit: 5,
    statuses: ['error', 'gone', 'identity_changed'],
  }).data;
  const failed = [
    ...listEventViews(ctx, s.applicationId, { limit: 5, status: 'dead' }).data,
    ...listEventViews(ctx, s.applicationId, { limit: 5, status: 'failed' }).data,
  ];
  const disabled = endpoints.data.filter((e) => e.status === 'disabled');
  const paused = subscriptions.data.filter((x) => x.status === 'paused').length;
  const attention = disabled.length + troubled.length + failed.length;
  return render(
    c,
    <Layout title="Overview" section="overview" session={s} notice={noticeOf(c)}>
      <h1>Overview</h1>
      {endpoints.data.length === 0 ? (
        <Empty>
          Start here: <a href="/dashboard/endpoints">create an endpoint</a> (the URL that receives
          webhooks), then subscribe it to a feed on the Subscriptions page.
        </Empty>
      ) : subscriptions.data.length === 0 ? (
        <Empty>
          You have an endpoint. Next, <a href="/dashboard/subscriptions">subscribe it to a feed</a>:
          new entries will be sent to it as signed webhooks.
        </Empty>
      ) : null}
      <div class="stats">
        <a href="/dashboard/endpoints">
          <strong>{counted(endpoints.data.length, endpoints.next !== null)}</strong>endpoints
          {disabled.length ? `, ${disabled.length} disabled` : ''}
        </a>
        <a href="/dashboard/subscriptions">
          <strong>{counted(subscriptions.data.length, subscriptions.next !== null)}</strong>
          subscriptions{paused ? `, ${paused} paused` : ''}
        </a>
        <a href="/dashboard/feeds?status=active">
          <strong>{feeds.active}</strong>healthy feeds
          {feeds.pending ? `, ${feeds.pending} waiting for a first fetch` : ''}
        </a>
        <a href="/dashboard/feeds?status=error">
          <strong>{feeds.error + feeds.gone + feeds.identity_changed}</strong>feeds with problems
        </a>
      </div>
      <h2>Needs attention</h2>
      {attention === 0 ? (
        <Empty>
          Nothing needs attention: every endpoint is enabled, no feed is failing and no event has
          failed.
        </Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>What</th>
              <th>Status</th>
              <th>Detail</th>
              <th>Since</th>
            </tr>
          </thead>
          <tbody>
            {disabled.map((e) => (
              <tr>
                <td>
                  Endpoint <a href={`/dashboard/endpoints/${e.id}`}>{e.title}</a>
                </td>
                <td>
                  <Badge status="disabled" />
                </td>
                <td>{e.disabled_reason ?? ''}</td>
                <td>
                  <Time at={e.updated_at} />
                </td>
              </tr>
            ))}
            {troubled.map((f) => (
              <tr>
                <td>
                  Feed <a href="/dashboard/feeds">{f.title ?? f.url}</a>
                </td>
                <td>
                  <Badge status={f.status} />
                </td>
                <td>{f.last_error ?? ''}</td>
                <td>
                  <Time at={f.last_error_at} />
                </td>
              </tr>
            ))}
            {failed.map((ev) => (
              <tr>
                <td>
                  Event{' '}
                  <a href={`/dashboard/events?status=${ev.status}`} class="mono">
                    {ev.id}
                  </a>
                </td>
                <td>
                  <Badge status={ev.status} />
                </td>
                <td>
                  {ev.last_error ?? (ev.last_status_code ? `HTTP ${ev.last_status_code}` : '')}
                </td>
                <td>
                  <Time at={ev.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Layout>,
  );
}
