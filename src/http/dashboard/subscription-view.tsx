// The subscription page as rendered: facts, pause/resume and updates on/off, its feed's health, recent events, the
// feed's entries and the "Why?" trace, edit, delete.
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Ctx } from '../../context.ts';
import { listEventViews } from '../../actions/events.ts';
import { listEndpointViews, type EndpointView } from '../../actions/endpoints.ts';
import { requireFeedView } from '../../actions/feeds.ts';
import {
  requireSubscription,
  subscriptionView,
  type SubscriptionApiView,
} from '../../actions/subscriptions.ts';
import {
  ActionForm,
  Badge,
  Breadcrumb,
  ConfirmDelete,
  Fact,
  OnOffButton,
  Time,
} from './components.tsx';
import { render } from './errors.tsx';
import { summariesOf } from './event-about.tsx';
import { EventsTable } from './events-table.tsx';
import { feedPollHours } from '../../actions/poll-counts.ts';
import { HourChart } from './chart.tsx';
import { chartHours, pollChart } from './charts.ts';
import { FeedHealth } from './feed-health.tsx';
import { Select, TextArea } from './fields.tsx';
import { noticeOf, type FormState } from './form.ts';
import { Layout } from './layout.tsx';
import { prettyJson } from './pretty-json.ts';
import { viewer, type DashEnv } from './session.ts';
import { EntriesList, WhySection } from './subscription-history.tsx';
import { endpointOptions } from './subscription-input.ts';
import type { PreviewRow } from '../../actions/filter-preview.ts';
import { FilterForm, FilterPreview, filterTextOf } from './subscription-filter.tsx';

/** What a re-render after a failed POST shows: which form failed, with its values and errors. */
export type SubscriptionState = {
  edit?: FormState;
  remove?: FormState;
  filter?: FormState;
  /** What the filter typed would do with the feed's recent entries (a test, not saved). */
  preview?: PreviewRow[];
  message?: string | undefined;
};

/** The subscription's facts, with the button that pauses or resumes it. */
function SubscriptionFacts(p: {
  sub: SubscriptionApiView;
  endpoint: EndpointView | undefined;
  csrf: string;
}) {
  const sub = p.sub;
  return (
    <section class="card">
      <dl class="facts">
        <Fact label="Status">
          <Badge status={sub.status} />
        </Fact>
        <Fact label="Endpoint">
          <a href={`/dashboard/endpoints/${sub.endpoint}`}>{p.endpoint?.title ?? sub.endpoint}</a>
        </Fact>
        <Fact label="Metadata">
          {sub.metadata ? (
            <pre>{prettyJson(sub.metadata.text)}</pre>
          ) : (
            <span class="muted">none</span>
          )}
        </Fact>
        <Fact label="Id" class="mono">
          {sub.id}
        </Fact>
        <Fact label="Created">
          <Time at={sub.created_at} />
        </Fact>
        <Fact label="Updated entries">{sub.updates ? 'sent' : 'not sent'}</Fact>
        <Fact label="Filter">
          {sub.filter ? (
            <a href="#filter">
              {sub.filter.keep.length} keep, {sub.filter.block.length} block rules
            </a>
          ) : (
            <span class="muted">none: every entry is sent</span>
          )}
        </Fact>
        <Fact label="Entries filtered out">{sub.entries_filtered.toLocaleString('en')}</Fact>
      </dl>
      <div class="actions spaced">
        <OnOffButton
          to={`/dashboard/subscriptions/${sub.id}`}
          csrf={p.csrf}
          on={sub.status === 'active'}
          turnOff={['pause', 'Pause']}
          turnOn={['resume', 'Resume']}
        />
        <OnOffButton
          to={`/dashboard/subscriptions/${sub.id}`}
          csrf={p.csrf}
          on={sub.updates}
          turnOff={['updates-off', 'Stop sending updated entries']}
          turnOn={['updates-on', 'Send updated entries']}
        />
      </div>
    </section>
  );
}

/** The endpoint and metadata form, showing what the user typed when it failed. */
function EditForm(p: { here: string; csrf: string; form: FormState; endpoints: EndpointView[] }) {
  return (
    <ActionForm to={p.here} csrf={p.csrf} action="update">
      <Select
        name="endpoint"
        label="Endpoint"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="edit"
        options={endpointOptions(p.endpoints, false)}
      />
      <TextArea
        name="metadata"
        label="Metadata (JSON object; empty to clear)"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="edit"
      />
      <button type="submit">Save</button>
    </ActionForm>
  );
}

/** What an empty events table says: a pending feed's first fetch is a baseline and sends nothing. */
function noEvents(feedStatus: string): string {
  return feedStatus === 'pending'
    ? 'No events yet: the feed has not been fetched. Its first fetch records the current entries as a baseline; later entries are sent.'
    : 'No events yet: new entries of the feed will be sent here.';
}

/** The feed's polls over the last 24 h and its health, then the subscription's ten latest events. */
async function HealthAndEvents(props: {
  ctx: Ctx;
  applicationId: string;
  subscriptionId: string;
  feed: Awaited<ReturnType<typeof requireFeedView>>;
}) {
  const { ctx, feed } = props;
  const now = ctx.clock.now();
  const polls = pollChart(await feedPollHours(ctx, feed.id, chartHours(now)), now);
  const events = await listEventViews(ctx, props.applicationId, {
    limit: 10,
    subscription: props.subscriptionId,
  });
  return (
    <>
      <h2>Feed health</h2>
      <HourChart id="polls-chart" title="Polls of the feed, last 24 h" chart={polls} />
      <section class="card" id="feed-health">
        <FeedHealth f={feed} />
      </section>
      <h2>Recent events</h2>
      <EventsTable
        rows={events.data}
        summaries={await summariesOf(ctx, events.data)}
        empty={noEvents(feed.status)}
      />
      <p>
        <a href={`/dashboard/events?subscription=${props.subscriptionId}`}>
          All events of this subscription →
        </a>
      </p>
    </>
  );
}

/** GET /dashboard/subscriptions/:id (404 for another application's id); `state` re-shows the form that failed. */
export async function showSubscription(
  ctx: Ctx,
  c: Context<DashEnv>,
  state: SubscriptionState = {},
  status: ContentfulStatusCode = 200,
) {
  const s = viewer(c);
  const sub = subscriptionView(
    await requireSubscription(ctx, s.applicationId, c.req.param('id') ?? ''),
  );
  const feed = await requireFeedView(ctx, s.applicationId, sub.feed);
  const endpoints = (await listEndpointViews(ctx, s.applicationId, { limit: 200 })).data;
  const here = `/dashboard/subscriptions/${sub.id}`;
  const edit = state.edit ?? {
    values: { endpoint: sub.endpoint, metadata: sub.metadata?.text ?? '' },
    errors: {},
  };
  const filter = state.filter ?? { values: { filter: filterTextOf(sub.filter) }, errors: {} };
  const error =
    state.message ?? state.edit?.message ?? state.filter?.message ?? state.remove?.message;
  return render(
    c,
    <Layout title={sub.url} section="subscriptions" session={s} notice={noticeOf(c)} error={error}>
      <Breadcrumb href="/dashboard/subscriptions" label="Subscriptions" />
      <h1 class="mono">{sub.url}</h1>
      <SubscriptionFacts
        sub={sub}
        endpoint={endpoints.find((e) => e.id === sub.endpoint)}
        csrf={s.csrfToken}
      />
      <HealthAndEvents
        ctx={ctx}
        applicationId={s.applicationId}
        subscriptionId={sub.id}
        feed={feed}
      />
      <h2>Entries</h2>
      <EntriesList ctx={ctx} feedId={sub.feed} here={here} />
      <h2>Why was (or wasn't) an entry delivered?</h2>
      <WhySection
        ctx={ctx}
        applicationId={s.applicationId}
        subscriptionId={sub.id}
        here={here}
        query={c.req.query('entry')}
      />
      <h2>Filter</h2>
      <FilterForm here={here} csrf={s.csrfToken} form={filter} />
      {state.preview ? <FilterPreview rows={state.preview} /> : null}
      <h2>Edit</h2>
      <EditForm here={here} csrf={s.csrfToken} form={edit} endpoints={endpoints} />
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
