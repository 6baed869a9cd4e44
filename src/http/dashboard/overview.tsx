// The overview at /dashboard once signed in: counts, what needs attention (disabled endpoints, failing feeds, failed
// events), and the service's live nodes.
import type { Context } from 'hono';
import type { Child } from 'hono/jsx';
import type { Ctx } from '../../context.ts';
import { listEventViews, type EventView } from '../../actions/events.ts';
import { listEndpointViews, type EndpointView } from '../../actions/endpoints.ts';
import { countApplicationFeeds, listApplicationFeeds, type FeedView } from '../../actions/feeds.ts';
import { listLiveNodes } from '../../actions/nodes.ts';
import { listSubscriptionViews } from '../../actions/subscriptions.ts';
import type { NodeRow } from '../../store/nodes.ts';
import type { FeedStatus } from '../../store/feeds.ts';
import type { EventSummary } from '../../store/events-summary.ts';
import { Badge, DataTable, Empty, Time } from './components.tsx';
import { EventAbout, summariesOf, type Summaries } from './event-about.tsx';
import { render } from './errors.tsx';
import { noticeOf } from './form.ts';
import { Layout } from './layout.tsx';
import { viewer, type DashEnv } from './session.ts';

const CAP = 200;
const counted = (n: number, more: boolean) => (more ? `${n}+` : String(n));

/** A count of up to CAP items: how many were read, and whether there are more. */
type Counted = { n: number; more: boolean };

/** The next step for a new application: an endpoint first, then a subscription. */
function GettingStarted(p: { endpoints: number; subscriptions: number }) {
  if (p.endpoints === 0)
    return (
      <Empty>
        Start here: <a href="/dashboard/endpoints">create an endpoint</a> (the URL that receives
        webhooks), then subscribe it to a feed on the Subscriptions page.
      </Empty>
    );
  if (p.subscriptions === 0)
    return (
      <Empty>
        You have an endpoint. Next, <a href="/dashboard/subscriptions">subscribe it to a feed</a>:
        new entries will be sent to it as signed webhooks.
      </Empty>
    );
  return null;
}

/** The four counts, each a link to its page. */
function Stats(p: {
  endpoints: Counted;
  disabled: number;
  subscriptions: Counted;
  paused: number;
  feeds: Record<FeedStatus, number>;
}) {
  const feeds = p.feeds;
  return (
    <div class="stats">
      <a href="/dashboard/endpoints">
        <strong>{counted(p.endpoints.n, p.endpoints.more)}</strong>endpoints
        {p.disabled ? `, ${p.disabled} disabled` : ''}
      </a>
      <a href="/dashboard/subscriptions">
        <strong>{counted(p.subscriptions.n, p.subscriptions.more)}</strong>
        subscriptions{p.paused ? `, ${p.paused} paused` : ''}
      </a>
      <a href="/dashboard/feeds?status=active">
        <strong>{feeds.active}</strong>healthy feeds
        {feeds.pending ? `, ${feeds.pending} waiting for a first fetch` : ''}
      </a>
      <a href="/dashboard/feeds?status=error">
        <strong>{feeds.error + feeds.gone + feeds.identity_changed + feeds.over_budget}</strong>
        feeds with problems
      </a>
    </div>
  );
}

function AttentionRow(p: { what: Child; status: string; detail: string; since: string | null }) {
  return (
    <tr>
      <td data-label="What">{p.what}</td>
      <td data-label="Status">
        <Badge status={p.status} />
      </td>
      <td data-label="Detail">{p.detail}</td>
      <td data-label="Since">
        <Time at={p.since} />
      </td>
    </tr>
  );
}

function DisabledEndpointRow(p: { e: EndpointView }) {
  return (
    <AttentionRow
      what={
        <>
          Endpoint <a href={`/dashboard/endpoints/${p.e.id}`}>{p.e.title}</a>
        </>
      }
      status="disabled"
      detail={p.e.disabled_reason ?? ''}
      since={p.e.updated_at}
    />
  );
}

function TroubledFeedRow(p: { f: FeedView }) {
  return (
    <AttentionRow
      what={
        <>
          Feed <a href="/dashboard/feeds">{p.f.title ?? p.f.url}</a>
        </>
      }
      status={p.f.status}
      detail={p.f.over_budget?.detail ?? p.f.last_error ?? ''}
      since={p.f.over_budget?.held_at ?? p.f.last_error_at}
    />
  );
}

function FailedEventRow(p: { ev: EventView; summary: EventSummary | undefined }) {
  const ev = p.ev;
  return (
    <AttentionRow
      what={
        <>
          Event{' '}
          <a href={`/dashboard/events?event=${ev.id}#event-${ev.id}`}>
            <EventAbout e={ev} summary={p.summary} />
          </a>
        </>
      }
      status={ev.status}
      detail={ev.last_error ?? (ev.last_status_code ? `HTTP ${ev.last_status_code}` : '')}
      since={ev.created_at}
    />
  );
}

/** Disabled endpoints, troubled feeds and failed events, one row each; or a line saying all is well. */
function NeedsAttention(p: {
  disabled: EndpointView[];
  troubled: FeedView[];
  failed: EventView[];
  summaries: Summaries;
}) {
  if (p.disabled.length + p.troubled.length + p.failed.length === 0)
    return (
      <Empty>
        Nothing needs attention: every endpoint is enabled, no feed is failing and no event has
        failed.
      </Empty>
    );
  return (
    <DataTable head={['What', 'Status', 'Detail', 'Since']}>
      {p.disabled.map((e) => (
        <DisabledEndpointRow e={e} />
      ))}
      {p.troubled.map((f) => (
        <TroubledFeedRow f={f} />
      ))}
      {p.failed.map((ev) => (
        <FailedEventRow ev={ev} summary={p.summaries.get(ev.id)} />
      ))}
    </DataTable>
  );
}

/** The live nodes of the service, each with what it was working on at its last heartbeat. */
function Nodes(p: { nodes: NodeRow[] }) {
  if (p.nodes.length === 0) return <Empty>No node has reported in yet.</Empty>;
  return (
    <DataTable head={['Node', 'Version', 'Fetching', 'Delivering', 'Up since', 'Last seen']}>
      {p.nodes.map((n) => (
        <tr>
          <td data-label="Node">{n.name}</td>
          <td data-label="Version">{n.version}</td>
          <td data-label="Fetching">{Number(n.polls)} feeds</td>
          <td data-label="Delivering">{Number(n.deliveries)} events</td>
          <td data-label="Up since">
            <Time at={n.started_at} />
          </td>
          <td data-label="Last seen">
            <Time at={n.seen_at} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

/** GET /dashboard with a session. */
export async function showOverview(
  ctx: Ctx,
  c: Context<DashEnv>,
): Promise<Response | Promise<Response>> {
  const s = viewer(c);
  const endpoints = await listEndpointViews(ctx, s.applicationId, { limit: CAP });
  const subscriptions = await listSubscriptionViews(ctx, s.applicationId, { limit: CAP });
  const feeds = await countApplicationFeeds(ctx, s.applicationId);
  const troubled = (
    await listApplicationFeeds(ctx, s.applicationId, {
      limit: 5,
      statuses: ['error', 'gone', 'identity_changed', 'over_budget'],
    })
  ).data;
  // Test pings are never retried and need nothing done: a failed one is shown on its endpoint's page, not here.
  const failed = [
    ...(await listEventViews(ctx, s.applicationId, { limit: 5, status: 'dead', tests: false }))
      .data,
    ...(await listEventViews(ctx, s.applicationId, { limit: 5, status: 'failed', tests: false }))
      .data,
  ];
  const disabled = endpoints.data.filter((e) => e.status === 'disabled');
  return render(
    c,
    <Layout title="Overview" section="overview" session={s} notice={noticeOf(c)}>
      <h1>Overview</h1>
      <GettingStarted endpoints={endpoints.data.length} subscriptions={subscriptions.data.length} />
      <Stats
        endpoints={{ n: endpoints.data.length, more: endpoints.next !== null }}
        disabled={disabled.length}
        subscriptions={{ n: subscriptions.data.length, more: subscriptions.next !== null }}
        paused={subscriptions.data.filter((x) => x.status === 'paused').length}
        feeds={feeds}
      />
      <h2>Needs attention</h2>
      <NeedsAttention
        disabled={disabled}
        troubled={troubled}
        failed={failed}
        summaries={await summariesOf(ctx, failed)}
      />
      <h2>Service</h2>
      <Nodes nodes={await listLiveNodes(ctx)} />
    </Layout>,
  );
}
