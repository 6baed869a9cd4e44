// /dashboard/endpoints: the application's webhook endpoints and the form that creates one.
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Ctx } from '../../context.ts';
import { createEndpoint, listEndpointViews, type EndpointView } from '../../actions/endpoints.ts';
import { ActionForm, Badge, DataTable, Empty, Pager, Time } from './components.tsx';
import { filterFields, filterInput, FilterTypesField } from './endpoint-forms.tsx';
import { Field } from './fields.tsx';
import { render } from './errors.tsx';
import {
  afterCursor,
  formStateFrom,
  isFormError,
  noticeOf,
  readPostedForm,
  statusOf,
  type FormState,
} from './form.ts';
import { Layout } from './layout.tsx';
import { viewer, type DashEnv } from './session.ts';

function EndpointsTable(p: { rows: EndpointView[] }) {
  return (
    <DataTable head={['Title', 'URL', 'Status', 'Created']}>
      {p.rows.map((e) => (
        <tr>
          <td data-label="Title">
            <a href={`/dashboard/endpoints/${e.id}`}>{e.title}</a>
          </td>
          <td data-label="URL" class="url">
            {e.url}
          </td>
          <td data-label="Status">
            <Badge status={e.status} />
            {e.disabled_reason ? <div class="muted">{e.disabled_reason}</div> : null}
          </td>
          <td data-label="Created">
            <Time at={e.created_at} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

/** The form that creates an endpoint from a title and the receiver's URL. */
function CreateForm(p: { csrf: string; form: FormState }) {
  return (
    <ActionForm to="/dashboard/endpoints" csrf={p.csrf} action="create">
      <Field
        name="title"
        label="Title"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="new"
        required
        hint="1 to 200 characters, for you to recognise it."
      />
      <Field
        name="url"
        label="URL"
        type="url"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="new"
        required
        placeholder="https://example.com/webhooks/feedsub"
        hint="An absolute http(s) URL; feedsub POSTs each event here."
      />
      <FilterTypesField form={p.form} idPrefix="new" />
      <button type="submit">Create endpoint</button>
    </ActionForm>
  );
}

async function page(
  ctx: Ctx,
  c: Context<DashEnv>,
  form: FormState,
  status: ContentfulStatusCode = 200,
) {
  const s = viewer(c);
  const list = await listEndpointViews(ctx, s.applicationId, { limit: 50, after: afterCursor(c) });
  return render(
    c,
    <Layout
      title="Endpoints"
      section="endpoints"
      session={s}
      notice={noticeOf(c)}
      error={form.message}
    >
      <h1>Endpoints</h1>
      <p class="muted">
        An endpoint is a URL that receives signed webhooks. Subscriptions send each feed's new
        entries to one endpoint.
      </p>
      {list.data.length === 0 && !afterCursor(c) ? (
        <Empty>
          No endpoints yet. Create one below with the URL of your webhook receiver; you will get its
          signing secret.
        </Empty>
      ) : (
        <EndpointsTable rows={list.data} />
      )}
      <Pager next={list.next} base="/dashboard/endpoints" />
      <h2>Create an endpoint</h2>
      <CreateForm csrf={s.csrfToken} form={form} />
    </Layout>,
    status,
  );
}

/** POST /dashboard/endpoints: creates one and shows it with its secret (303), or shows the form again with its errors. */
async function create(ctx: Ctx, c: Context<DashEnv>): Promise<Response> {
  const { session: s, form } = await readPostedForm(c);
  const values = { title: form.title ?? '', url: form.url ?? '' };
  try {
    const made = await createEndpoint(ctx, s.applicationId, { ...values, ...filterInput(form) });
    return c.redirect(`/dashboard/endpoints/${made.id}?reveal=1&notice=endpoint-created`, 303);
  } catch (err) {
    if (isFormError(err))
      return page(
        ctx,
        c,
        formStateFrom(err, { ...values, ...filterFields(form) }),
        statusOf(c, err),
      );
    throw err;
  }
}

/** The endpoints page: GET lists, POST creates (then 303 to the new endpoint with its secret shown). */
export function endpointsPage(ctx: Ctx): Hono<DashEnv> {
  return new Hono<DashEnv>()
    .get('/endpoints', (c) => page(ctx, c, { values: {}, errors: {} }))
    .post('/endpoints', (c) => create(ctx, c));
}
