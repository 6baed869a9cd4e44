// /dashboard/subscriptions: the application's subscriptions with their feed's status, the form that creates one, and
// OPML import and export.
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import * as v from 'valibot';
import type { Ctx } from '../../context.ts';
import { listEndpointViews, type EndpointView } from '../../actions/endpoints.ts';
import {
  CreateSubscriptionInput,
  createSubscription,
  listSubscriptionViews,
  type SubscriptionApiView,
} from '../../actions/subscriptions.ts';
import { toFieldIssues } from '../../actions/validate.ts';
import { ActionForm, Badge, DataTable, Empty, Pager, Time } from './components.tsx';
import { render } from './errors.tsx';
import { Field, Select, TextArea } from './fields.tsx';
import {
  afterCursor,
  formStateFrom,
  invalidForm,
  isFormError,
  noticeOf,
  readPostedForm,
  statusOf,
  type FieldErrors,
  type FormState,
} from './form.ts';
import { Layout } from './layout.tsx';
import { viewer, type DashEnv } from './session.ts';
import { endpointOptions, parseMetadata } from './subscription-input.ts';
import { parseFilterText, withFilterErrors } from './subscription-filter.tsx';
import { exportOpml, importOpml, OpmlForms } from './subscriptions-opml.tsx';

function SubscriptionsTable(p: {
  rows: SubscriptionApiView[];
  endpoints: Map<string, EndpointView>;
}) {
  return (
    <DataTable head={['Feed URL', 'Endpoint', 'Feed status', 'Subscription', 'Created']}>
      {p.rows.map((x) => (
        <tr>
          <td data-label="Feed URL" class="url">
            <a href={`/dashboard/subscriptions/${x.id}`}>{x.url}</a>
            {x.feed_url !== x.url ? <div class="muted">fetches {x.feed_url}</div> : null}
          </td>
          <td data-label="Endpoint">
            <a href={`/dashboard/endpoints/${x.endpoint}`}>
              {p.endpoints.get(x.endpoint)?.title ?? x.endpoint}
            </a>
          </td>
          <td data-label="Feed status">
            <Badge status={x.feed_status} />
          </td>
          <td data-label="Subscription">
            <Badge status={x.status} />
          </td>
          <td data-label="Created">
            <Time at={x.created_at} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

/** The empty list: what to do first, which depends on whether an endpoint exists yet. */
function NoSubscriptions(p: { hasEndpoints: boolean }) {
  return (
    <Empty>
      No subscriptions yet.{' '}
      {p.hasEndpoints ? (
        'Subscribe an endpoint to a feed with the form below.'
      ) : (
        <span>
          First <a href="/dashboard/endpoints">create an endpoint</a>, then come back to subscribe
          it to a feed.
        </span>
      )}
    </Empty>
  );
}

/** The form that subscribes one of the application's endpoints to a feed URL. */
function CreateForm(p: { csrf: string; form: FormState; endpoints: EndpointView[] }) {
  return (
    <ActionForm to="/dashboard/subscriptions" csrf={p.csrf} action="create">
      <Select
        name="endpoint"
        label="Endpoint"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="new"
        options={endpointOptions(p.endpoints, true)}
      />
      <Field
        name="url"
        label="Feed URL"
        type="url"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="new"
        required
        placeholder="https://example.com/feed.xml"
        hint="An RSS, Atom, RDF or JSON feed, or a web page that links to one."
      />
      <TextArea
        name="metadata"
        label="Metadata (JSON object, optional)"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="new"
        placeholder='{"user_id": 42}'
        hint="Sent in every event of this subscription exactly as written; at most 16 KiB."
      />
      <TextArea
        name="filter"
        label="Filter (JSON, optional)"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="new"
        placeholder='{"keep": [{"field": "title", "contains": "security"}]}'
        hint="Which entries are sent: keep and block rules (see the README). Once the feed has entries, its page tests a filter against them."
      />
      <button type="submit">Create subscription</button>
    </ActionForm>
  );
}

const BLANK: FormState = { values: {}, errors: {} };

async function page(
  ctx: Ctx,
  c: Context<DashEnv>,
  form: FormState,
  status: ContentfulStatusCode = 200,
  importForm: FormState = BLANK,
) {
  const s = viewer(c);
  const list = await listSubscriptionViews(ctx, s.applicationId, {
    limit: 50,
    after: afterCursor(c),
  });
  const endpoints = (await listEndpointViews(ctx, s.applicationId, { limit: 200 })).data;
  const byId = new Map(endpoints.map((e) => [e.id, e]));
  return render(
    c,
    <Layout
      title="Subscriptions"
      section="subscriptions"
      session={s}
      notice={noticeOf(c)}
      error={form.message ?? importForm.message}
    >
      <h1>Subscriptions</h1>
      <p class="muted">
        A subscription watches a feed URL and sends its new entries, with your metadata, to one
        endpoint. <a href="/dashboard/subscriptions/export">Export OPML</a> ·{' '}
        <a href="#import">Import OPML</a>
      </p>
      {list.data.length === 0 && !afterCursor(c) ? (
        <NoSubscriptions hasEndpoints={endpoints.length > 0} />
      ) : (
        <SubscriptionsTable rows={list.data} endpoints={byId} />
      )}
      <Pager next={list.next} base="/dashboard/subscriptions" />
      <h2>Create a subscription</h2>
      {endpoints.length === 0 ? (
        <Empty>
          You need an endpoint before you can subscribe:{' '}
          <a href="/dashboard/endpoints">create one</a>.
        </Empty>
      ) : (
        <>
          <CreateForm csrf={s.csrfToken} form={form} endpoints={endpoints} />
          <OpmlForms csrf={s.csrfToken} form={importForm} endpoints={endpoints} />
        </>
      )}
    </Layout>,
    status,
  );
}

/** Every invalid field of a create form whose metadata or filter is not JSON (so the user sees all of them at once). */
function otherIssues(
  values: Record<string, string>,
  metadataError: string | undefined,
  filterError: string | undefined,
): FieldErrors {
  const result = v.safeParse(
    CreateSubscriptionInput,
    { endpoint: values.endpoint, url: values.url },
    { abortEarly: false },
  );
  const errors: FieldErrors = result.success
    ? {}
    : Object.fromEntries(toFieldIssues(result.issues).map((i) => [i.path, i.message]));
  return {
    ...errors,
    ...(metadataError ? { metadata: metadataError } : {}),
    ...(filterError ? { filter: filterError } : {}),
  };
}

/** A blank endpoint choice reads "choose an endpoint" rather than the id check's message. */
function withBlankEndpoint(values: Record<string, string>, errors: FieldErrors): FieldErrors {
  return values.endpoint === '' ? { ...errors, endpoint: 'choose an endpoint' } : errors;
}

/** POST /dashboard/subscriptions: creates one and goes to it (303), or shows the form again with every error. */
async function create(ctx: Ctx, c: Context<DashEnv>): Promise<Response> {
  const { session: s, form } = await readPostedForm(c);
  const values = {
    endpoint: form.endpoint ?? '',
    url: form.url ?? '',
    metadata: form.metadata ?? '',
    filter: form.filter ?? '',
  };
  const metadata = parseMetadata(values.metadata);
  const filter = parseFilterText(values.filter);
  if (metadata.error || filter.error) {
    const errors = withBlankEndpoint(values, otherIssues(values, metadata.error, filter.error));
    return page(ctx, c, invalidForm(values, errors), 400);
  }
  const input = {
    endpoint: values.endpoint,
    url: values.url,
    ...(metadata.value !== undefined ? { metadata: metadata.value } : {}),
    ...(filter.value !== null ? { filter: filter.value } : {}),
  };
  try {
    const made = await createSubscription(ctx, s.applicationId, input, { metadata: metadata.raw });
    return c.redirect(`/dashboard/subscriptions/${made.id}?notice=subscription-created`, 303);
  } catch (err) {
    if (!isFormError(err)) throw err;
    const state = formStateFrom(err, values);
    const errors = withFilterErrors(err, withBlankEndpoint(values, state.errors));
    return page(ctx, c, { ...state, errors }, statusOf(c, err));
  }
}

/** The subscriptions page: GET lists, POST creates (then 303 to the new subscription); OPML export and import. */
export function subscriptionsPage(ctx: Ctx): Hono<DashEnv> {
  return new Hono<DashEnv>()
    .get('/subscriptions', (c) => page(ctx, c, BLANK))
    .post('/subscriptions', (c) => create(ctx, c))
    .get('/subscriptions/export', (c) => exportOpml(ctx, c))
    .post('/subscriptions/import', (c) =>
      importOpml(ctx, c, (form, status) => page(ctx, c, BLANK, status, form)),
    );
}
