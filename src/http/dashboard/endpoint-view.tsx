// The endpoint page as rendered: facts and buttons, secret, edit and recover forms, its subscriptions and events, delete.
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Ctx } from '../../context.ts';
import { listEventViews } from '../../actions/events.ts';
import { endpointView, requireEndpoint, type EndpointView } from '../../actions/endpoints.ts';
import { listSubscriptionViews, type SubscriptionApiView } from '../../actions/subscriptions.ts';
import {
  ActionButton,
  Badge,
  Breadcrumb,
  ConfirmDelete,
  Empty,
  Fact,
  OnOffButton,
  Time,
} from './components.tsx';
import { attemptHours } from '../../store/attempts.ts';
import { HourChart } from './chart.tsx';
import { chartSince, deliveryChart } from './charts.ts';
import {
  EditForm,
  filterFormValues,
  headersFormValue,
  RecoverForm,
  SecretBox,
} from './endpoint-forms.tsx';
import { render } from './errors.tsx';
import { summariesOf } from './event-about.tsx';
import { EventsTable } from './events-table.tsx';
import { noticeOf, type FormState } from './form.ts';
import { Layout } from './layout.tsx';
import { viewer, type DashEnv } from './session.ts';

/** What a re-render after a failed POST shows: which form failed, with its values and errors. */
export type EndpointState = {
  edit?: FormState;
  remove?: FormState;
  recover?: FormState;
  message?: string | undefined;
};

const DAY_MS = 86_400_000;

/** The endpoint's facts, with the buttons that switch it on or off and send it a test event. */
function EndpointFacts(p: { e: EndpointView; csrf: string }) {
  const e = p.e;
  const here = `/dashboard/endpoints/${e.id}`;
  return (
    <section class="card">
      <dl class="facts">
        <Fact label="URL" class="mono">
          {e.url}
        </Fact>
        <Fact label="Status">
          <Badge status={e.status} />{' '}
          {e.disabled_reason ? <span>— {e.disabled_reason}</span> : null}
        </Fact>
        <Fact label="Receives">
          {e.filter_types === null ? 'every event type' : e.filter_types.join(', ')}
        </Fact>
        <Fact label="Extra headers" class="mono">
          {e.headers === null
            ? 'none'
            : Object.entries(e.headers).map(([name, value]) => (
                <div>
                  {name}: {value}
                </div>
              ))}
        </Fact>
        <Fact label="Rate limit">
          {e.rate_limit === null ? 'none' : `${e.rate_limit} deliveries a second`}
        </Fact>
        <Fact label="Id" class="mono">
          {e.id}
        </Fact>
        <Fact label="Created">
          <Time at={e.created_at} />
        </Fact>
        <Fact label="Updated">
          <Time at={e.updated_at} />
        </Fact>
      </dl>
      <div class="actions spaced">
        <OnOffButton
          to={here}
          csrf={p.csrf}
          on={e.status === 'active'}
          turnOff={['disable', 'Disable']}
          turnOn={['enable', 'Enable']}
        />
        <ActionButton
          to={here}
          csrf={p.csrf}
          action="test"
          label="Send test event"
          variant="secondary"
        />
      </div>
    </section>
  );
}

/** The subscriptions that send to this endpoint, or where to make the first. */
function EndpointSubscriptions(p: { rows: SubscriptionApiView[] }) {
  if (p.rows.length === 0)
    return (
      <Empty>
        No subscription sends to this endpoint yet.{' '}
        <a href="/dashboard/subscriptions">Subscribe it to a feed</a>.
      </Empty>
    );
  return (
    <ul>
      {p.rows.map((x) => (
        <li>
          <a href={`/dashboard/subscriptions/${x.id}`}>{x.url}</a> <Badge status={x.status} />
        </li>
      ))}
    </ul>
  );
}

/** The endpoint's recent events, then its test pings apart: a failed ping is not a lost entry. */
async function EndpointEvents(p: { ctx: Ctx; applicationId: string; endpoint: string }) {
  const scope = { endpoint: p.endpoint };
  const events = await listEventViews(p.ctx, p.applicationId, {
    limit: 10,
    ...scope,
    tests: false,
  });
  const pings = await listEventViews(p.ctx, p.applicationId, { limit: 5, ...scope, tests: true });
  return (
    <>
      <h2>Recent events</h2>
      <EventsTable
        rows={events.data}
        summaries={await summariesOf(p.ctx, events.data)}
        empty="No events sent to this endpoint yet."
      />
      <p>
        <a href={`/dashboard/events?endpoint=${p.endpoint}`}>All events of this endpoint →</a>
      </p>
      <h2>Test pings</h2>
      <EventsTable
        rows={pings.data}
        summaries={new Map()}
        empty="No test ping sent yet: Send test event, above, sends one now."
      />
      {pings.next ? (
        <p>
          <a href={`/dashboard/events?endpoint=${p.endpoint}&kind=tests`}>All test pings →</a>
        </p>
      ) : null}
    </>
  );
}

/** GET /dashboard/endpoints/:id (404 for another application's id); `state` re-shows the form that failed. */
export async function showEndpoint(
  ctx: Ctx,
  c: Context<DashEnv>,
  state: EndpointState = {},
  status: ContentfulStatusCode = 200,
) {
  const s = viewer(c);
  const e = endpointView(await requireEndpoint(ctx, s.applicationId, c.req.param('id') ?? ''));
  const here = `/dashboard/endpoints/${e.id}`;
  const subs = await listSubscriptionViews(ctx, s.applicationId, { limit: 50, endpoint: e.id });
  const edit = state.edit ?? {
    values: {
      title: e.title,
      url: e.url,
      ...filterFormValues(e.filter_types),
      headers: headersFormValue(e.headers),
      rate_limit: e.rate_limit === null ? '' : String(e.rate_limit),
    },
    errors: {},
  };
  const now = ctx.clock.now();
  const since = new Date(now.getTime() - 7 * DAY_MS).toISOString();
  const recover = state.recover ?? { values: { since }, errors: {} };
  const error =
    state.message ?? state.edit?.message ?? state.remove?.message ?? state.recover?.message;
  return render(
    c,
    <Layout title={e.title} section="endpoints" session={s} notice={noticeOf(c)} error={error}>
      <Breadcrumb href="/dashboard/endpoints" label="Endpoints" />
      <h1>{e.title}</h1>
      <EndpointFacts e={e} csrf={s.csrfToken} />
      <HourChart
        id="deliveries-chart"
        title="Deliveries, last 24 h"
        chart={deliveryChart(await attemptHours(ctx.db, e.id, chartSince(now).toISOString()), now)}
      />
      <h2>Signing secret</h2>
      <section class="card">
        <SecretBox ctx={ctx} c={c} e={e} />
      </section>
      <h2>Edit</h2>
      <EditForm here={here} csrf={s.csrfToken} form={edit} />
      <h2>Recover failed deliveries</h2>
      <RecoverForm here={here} csrf={s.csrfToken} form={recover} />
      <h2>Subscriptions using it</h2>
      <EndpointSubscriptions rows={subs.data} />
      <EndpointEvents ctx={ctx} applicationId={s.applicationId} endpoint={e.id} />
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
