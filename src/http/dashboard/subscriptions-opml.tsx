// The subscriptions page's OPML part: the import form (a file or pasted text, into one endpoint) and the page of its
// results, one row per feed outline; the export link and the form that exports one endpoint.
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { EndpointView } from '../../actions/endpoints.ts';
import { exportSubscriptionsOpml } from '../../actions/subscriptions-export.ts';
import {
  importSubscriptions,
  type ImportReport,
  type ImportResult,
  type ImportStatus,
} from '../../actions/subscriptions-import.ts';
import type { Ctx } from '../../context.ts';
import { decodeFeed } from '../../feed/parse/decode.ts';
import { sendOpml } from '../opml.ts';
import { Badge, Breadcrumb, Csrf, DataTable, Empty } from './components.tsx';
import { render } from './errors.tsx';
import { Select, TextArea } from './fields.tsx';
import {
  formStateFrom,
  invalidForm,
  isFormError,
  readPostedForm,
  statusOf,
  type FieldErrors,
  type FormState,
} from './form.ts';
import { Layout } from './layout.tsx';
import { viewer, type DashEnv } from './session.ts';
import { endpointOptions, parseMetadata } from './subscription-input.ts';

/** The file input, with its label and the error of a document that could not be imported. */
function FileField(p: { error: string | undefined }) {
  return (
    <div class={p.error ? 'field invalid' : 'field'}>
      <label for="import-file">OPML file</label>
      <input
        id="import-file"
        name="file"
        type="file"
        accept=".opml,.xml,text/x-opml,text/xml,application/xml"
        aria-invalid={p.error ? 'true' : undefined}
        aria-describedby={p.error ? 'import-file-error' : undefined}
      />
      {p.error ? (
        <p class="error" id="import-file-error">
          {p.error}
        </p>
      ) : null}
    </div>
  );
}

/** Import (multipart, for the file) and export, under the subscriptions list. */
export function OpmlForms(p: { csrf: string; form: FormState; endpoints: EndpointView[] }) {
  const { values, errors } = p.form;
  return (
    <>
      <h2 id="import">Import OPML</h2>
      <form
        method="post"
        action="/dashboard/subscriptions/import"
        enctype="multipart/form-data"
        class="card"
      >
        <Csrf token={p.csrf} />
        <Select
          name="endpoint"
          label="Endpoint"
          values={values}
          errors={errors}
          idPrefix="import"
          options={endpointOptions(p.endpoints, true)}
        />
        <FileField error={errors.file} />
        <TextArea
          name="opml"
          label="Or paste the document"
          values={values}
          errors={errors}
          idPrefix="import"
          placeholder='<opml version="2.0">…</opml>'
          hint="Every outline with an xmlUrl becomes a subscription of the endpoint; folders are not kept. At most 1,000 feeds."
        />
        <TextArea
          name="metadata"
          label="Metadata for every subscription (JSON object, optional)"
          values={values}
          errors={errors}
          idPrefix="import"
          rows={2}
        />
        <button type="submit">Import</button>
      </form>
      <h2>Export OPML</h2>
      <form method="get" action="/dashboard/subscriptions/export" class="card">
        <Select
          name="endpoint"
          label="Endpoint"
          values={{}}
          errors={{}}
          idPrefix="export"
          options={[{ value: '', label: 'All endpoints' }, ...endpointOptions(p.endpoints, false)]}
        />
        <button type="submit">Download OPML</button>
      </form>
    </>
  );
}

// What each result looks like: created in green, refused and invalid in red, exists in grey.
const BADGES: Record<ImportStatus, string> = {
  created: 'active',
  exists: 'exists',
  invalid: 'error',
  refused: 'error',
};

/** Why an outline was not imported: the problem's field messages, else its detail. */
function reason(r: ImportResult): string {
  const issues = (r.error?.errors ?? []) as { message: string }[];
  return issues.length ? issues.map((i) => i.message).join('; ') : (r.error?.detail ?? '');
}

function ResultRow(p: { r: ImportResult }) {
  const { r } = p;
  return (
    <tr>
      <td>
        {r.title ?? <span class="muted">(no title)</span>}
        <div class="url">{r.url ?? '(no xmlUrl)'}</div>
      </td>
      <td>
        <Badge status={BADGES[r.status]} label={r.status} />
      </td>
      <td>
        {r.subscription ? (
          <a href={`/dashboard/subscriptions/${r.subscription}`}>
            {r.status === 'exists' ? 'the existing subscription' : 'the subscription'}
          </a>
        ) : (
          reason(r)
        )}
      </td>
    </tr>
  );
}

function ImportResults(p: { c: Context<DashEnv>; report: ImportReport }) {
  const { counts, results } = p.report;
  return (
    <Layout title="OPML import" section="subscriptions" session={viewer(p.c)}>
      <Breadcrumb href="/dashboard/subscriptions" label="Subscriptions" />
      <h1>OPML import</h1>
      <p>
        {counts.created} created, {counts.exists} already subscribed, {counts.invalid} invalid,{' '}
        {counts.refused} refused.{' '}
        {counts.refused > 0
          ? 'Refused feeds were not subscribed: importing the same document again later subscribes them and reports the others as already subscribed.'
          : ''}
      </p>
      {results.length === 0 ? (
        <Empty>The document lists no feeds: none of its outlines has an xmlUrl.</Empty>
      ) : (
        <DataTable head={['Feed', 'Result', 'Details']}>
          {results.map((r) => (
            <ResultRow r={r} />
          ))}
        </DataTable>
      )}
    </Layout>
  );
}

/** Shows the subscriptions page again with the import form's state. */
export type ImportFormAgain = (
  form: FormState,
  status: ContentfulStatusCode,
) => Response | Promise<Response>;

/** The document from the form: an uploaded file (decoded by its BOM or XML declaration, as feeds are) wins over
 *  pasted text; `field` is where an error about it is shown. */
async function postedDocument(
  c: Context<DashEnv>,
  pasted: string,
): Promise<{ text: string; field: 'file' | 'opml' }> {
  const file = (await c.req.parseBody()).file;
  if (file instanceof File && file.size > 0)
    return { text: decodeFeed(new Uint8Array(await file.arrayBuffer()), null).text, field: 'file' };
  return { text: pasted, field: 'opml' };
}

/** The import action's field errors, with the document's shown where it came from and a blank endpoint asked for. */
function importErrors(errors: FieldErrors, values: Record<string, string>, field: string) {
  const { opml, ...rest } = errors;
  return {
    ...rest,
    ...(opml !== undefined ? { [field]: opml } : {}),
    ...(values.endpoint === '' ? { endpoint: 'choose an endpoint' } : {}),
  };
}

/** POST /dashboard/subscriptions/import: the results page, or the form again (`again`) with every error beside its
 *  field. The file is never echoed back; pasted text is. */
export async function importOpml(
  ctx: Ctx,
  c: Context<DashEnv>,
  again: ImportFormAgain,
): Promise<Response> {
  const { session, form } = await readPostedForm(c);
  const values = {
    endpoint: form.endpoint ?? '',
    opml: form.opml ?? '',
    metadata: form.metadata ?? '',
  };
  const doc = await postedDocument(c, values.opml);
  const metadata = parseMetadata(values.metadata);
  if (metadata.error || doc.text.trim() === '') {
    const errors: FieldErrors = {
      ...(metadata.error ? { metadata: metadata.error } : {}),
      ...(doc.text.trim() === '' ? { opml: 'choose a file or paste an OPML document' } : {}),
    };
    return again(invalidForm(values, importErrors(errors, values, doc.field)), 400);
  }
  const input = {
    endpoint: values.endpoint,
    opml: doc.text,
    ...(metadata.value !== undefined ? { metadata: metadata.value } : {}),
  };
  try {
    const report = await importSubscriptions(ctx, session.applicationId, input, {
      metadata: metadata.raw,
    });
    return render(c, <ImportResults c={c} report={report} />);
  } catch (err) {
    if (!isFormError(err)) throw err;
    const state = formStateFrom(err, values);
    return again(
      { ...state, errors: importErrors(state.errors, values, doc.field) },
      statusOf(c, err),
    );
  }
}

/** GET /dashboard/subscriptions/export[?endpoint=]: the OPML download (the error page when the endpoint is not the
 *  application's). */
export async function exportOpml(ctx: Ctx, c: Context<DashEnv>): Promise<Response> {
  const endpoint = c.req.query('endpoint') || undefined;
  return sendOpml(c, await exportSubscriptionsOpml(ctx, viewer(c).applicationId, endpoint));
}
