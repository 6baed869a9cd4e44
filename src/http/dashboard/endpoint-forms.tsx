// The endpoint page's forms: the signing secret (hidden until asked for) with its rotation, edit (with the event types
// it receives, also on the create form, its extra headers and rate limit), and recover.
import type { Context } from 'hono';
import type { Ctx } from '../../context.ts';
import { endpointSecret, type EndpointView } from '../../actions/endpoints.ts';
import { invalid } from '../../errors.ts';
import { SUBSCRIPTION_EVENT_TYPES, type SubscriptionEventType } from '../../webhook/event.ts';
import { ActionButton, ActionForm, Time } from './components.tsx';
import { Field, TextArea } from './fields.tsx';
import type { FieldErrors, FormState } from './form.ts';
import { viewer, type DashEnv } from './session.ts';

/** The link that shows or hides the secret, beside the button that rotates it. */
function SecretActions(p: { here: string; csrf: string; href: string; label: string }) {
  return (
    <div class="actions">
      <a href={p.href}>{p.label}</a>
      <ActionButton
        to={p.here}
        csrf={p.csrf}
        action="rotate"
        label="Rotate secret"
        variant="secondary"
      />
    </div>
  );
}

/** The signing secret, read only when `?reveal=1` asks for it (and the previous one while it still signs). */
export async function SecretBox(p: { ctx: Ctx; c: Context<DashEnv>; e: EndpointView }) {
  const s = viewer(p.c);
  const here = `/dashboard/endpoints/${p.e.id}`;
  if (p.c.req.query('reveal') !== '1') {
    return (
      <SecretActions
        here={here}
        csrf={s.csrfToken}
        href={`${here}?reveal=1`}
        label="Reveal secret"
      />
    );
  }
  const secret = await endpointSecret(p.ctx, s.applicationId, p.e.id);
  return (
    <div>
      <p>
        Signing secret (Standard Webhooks): configure your receiver with it to verify{' '}
        <code>webhook-signature</code>.
      </p>
      <p class="secret" id="secret">
        {secret.secret}
      </p>
      {secret.previous_secret ? (
        <p>
          Previous secret, still signing until <Time at={secret.previous_secret_expires_at} />:{' '}
          <span class="secret">{secret.previous_secret}</span>
        </p>
      ) : null}
      <SecretActions here={here} csrf={s.csrfToken} href={here} label="Hide secret" />
    </div>
  );
}

/** What each event type a subscription sends means, for the filter's checkboxes. */
const TYPE_LABELS: Record<SubscriptionEventType, string> = {
  'subscription.entries': 'new entries',
  'subscription.entries_updated': 'new versions of entries (subscriptions with updates on)',
  'feed.failing': 'the feed keeps failing',
  'feed.recovered': 'it works again',
  'feed.gone': 'it answered 410 Gone',
  'feed.moved': 'it moved to a new URL',
  'feed.identity_hold': 'its entries are held after an id change',
  'feed.over_budget': 'its polling is held: your application is over its storage budget',
  'feed.within_budget': 'its polling resumes within your storage budget',
};

/** The form fields showing `types`: the "every type" choice, or "only these" with each listed type ticked. */
export function filterFormValues(types: readonly string[] | null): Record<string, string> {
  if (types === null) return { filter: 'all' };
  return { filter: 'some', ...Object.fromEntries(types.map((t) => [`type.${t}`, 'on'])) };
}

/** The posted filter fields, to show them again after a refused form. */
export function filterFields(form: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(form).filter(([k]) => k === 'filter' || k.startsWith('type.')),
  );
}

/** filter_types from the posted fields: nothing when the form has no filter (unchanged), null for every type, else
 *  the ticked types (none ticked is refused by the action, beside the field). */
export function filterInput(form: Record<string, string>): {
  filter_types?: SubscriptionEventType[] | null;
} {
  if (form.filter === undefined) return {};
  if (form.filter !== 'some') return { filter_types: null };
  return { filter_types: SUBSCRIPTION_EVENT_TYPES.filter((t) => form[`type.${t}`] === 'on') };
}

/** One radio button of the filter: every type, or only the ticked ones. */
function FilterChoice(p: { id: string; value: string; checked: boolean; children: string }) {
  return (
    <div>
      <input type="radio" id={p.id} name="filter" value={p.value} checked={p.checked} />{' '}
      <label for={p.id} class="inline-label">
        {p.children}
      </label>
    </div>
  );
}

/** The event types an endpoint receives: every type, or only the ticked ones (checkboxes work without JavaScript). */
export function FilterTypesField(p: { form: FormState; idPrefix: string }) {
  const v = p.form.values;
  const error = p.form.errors.filter_types;
  const id = (x: string) => `${p.idPrefix}-${x}`;
  return (
    <fieldset class={error ? 'field choices invalid' : 'field choices'}>
      <legend>Event types</legend>
      <FilterChoice id={id('filter-all')} value="all" checked={v.filter !== 'some'}>
        Every type, including types added later
      </FilterChoice>
      <FilterChoice id={id('filter-some')} value="some" checked={v.filter === 'some'}>
        Only these:
      </FilterChoice>
      <ul>
        {SUBSCRIPTION_EVENT_TYPES.map((t) => (
          <li>
            <input
              type="checkbox"
              id={id(`type-${t}`)}
              name={`type.${t}`}
              value="on"
              checked={v[`type.${t}`] === 'on'}
            />{' '}
            <label for={id(`type-${t}`)} class="inline-label mono">
              {t}
            </label>{' '}
            <span class="muted">{TYPE_LABELS[t]}</span>
          </li>
        ))}
      </ul>
      {error ? (
        <p class="error" id={id('filter_types-error')}>
          {error}
        </p>
      ) : (
        <div class="hint">
          An event of a type left out is not created at all for this endpoint. Test events are
          always sent.
        </div>
      )}
    </fieldset>
  );
}

/** The headers as the form shows them: one `Name: value` a line. */
export function headersFormValue(headers: Record<string, string> | null): string {
  return Object.entries(headers ?? {})
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
}

/** headers from the posted text: nothing when the form has none (unchanged), null when it is blank, else one header a
 *  non-blank line, split at its first colon (the action checks names and values; a line with no colon is refused
 *  here, beside the field). */
export function headersInput(form: Record<string, string>): {
  headers?: Record<string, string> | null;
} {
  if (form.headers === undefined) return {};
  const lines = form.headers.split(/\r?\n/).filter((line) => line.trim() !== '');
  if (lines.length === 0) return { headers: null };
  const pairs = lines.map((line, i): [string, string] => {
    const colon = line.indexOf(':');
    if (colon < 0)
      throw invalid([
        { path: 'headers', message: `line ${i + 1} has no colon: write Name: value` },
      ]);
    return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
  });
  // Object.fromEntries makes every name an own property, `__proto__` too (assigning it would set the object's
  // prototype instead), so the action sees each name typed; a name typed twice keeps its last value.
  return { headers: Object.fromEntries(pairs) };
}

/** rate_limit from the posted field: nothing when the form has none (unchanged), null when blank, else the number typed
 *  (anything else goes to the action as typed, which refuses it beside the field). */
export function rateLimitInput(form: Record<string, string>): { rate_limit?: unknown } {
  if (form.rate_limit === undefined) return {};
  const typed = form.rate_limit.trim();
  if (typed === '') return { rate_limit: null };
  return { rate_limit: /^\d{1,9}$/.test(typed) ? Number(typed) : typed };
}

/** The action's errors about single headers (`headers.<name>`) shown beside the one headers field, each named. */
export function foldHeaderErrors(errors: FieldErrors): FieldErrors {
  const out: FieldErrors = {};
  for (const [path, message] of Object.entries(errors)) {
    if (!path.startsWith('headers.')) out[path] = message;
    else if (out.headers === undefined) out.headers = `${path.slice('headers.'.length)} ${message}`;
  }
  return out;
}

/** The title, URL, event types and headers form, showing what the user typed when it failed. */
export function EditForm(p: { here: string; csrf: string; form: FormState }) {
  return (
    <ActionForm to={p.here} csrf={p.csrf} action="update">
      <Field
        name="title"
        label="Title"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="edit"
        required
      />
      <Field
        name="url"
        label="URL"
        type="url"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="edit"
        required
      />
      <FilterTypesField form={p.form} idPrefix="edit" />
      <TextArea
        name="headers"
        label="Extra headers"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="edit"
        rows={3}
        placeholder="X-Tenant: acme"
        hint="One Name: value a line, sent with every delivery and test event; leave blank for none. Signing and transport headers (webhook-*, content-type, host, user-agent…) cannot be set."
      />
      <Field
        name="rate_limit"
        label="Rate limit (deliveries per second)"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="edit"
        hint="At most this many deliveries start in any one second (1–1000); blank for no limit. Others wait their turn, in order."
      />
      <button type="submit">Save</button>
    </ActionForm>
  );
}

/** The form that queues the endpoint's failed and dead events again, from a time on. */
export function RecoverForm(p: { here: string; csrf: string; form: FormState }) {
  return (
    <ActionForm to={p.here} csrf={p.csrf} action="recover">
      <Field
        name="since"
        label="Re-send every failed or dead event created since"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="recover"
        required
        hint="An ISO 8601 UTC time, e.g. 2026-01-01T00:00:00Z. Each is sent again with its webhook-id, in order per subscription."
      />
      <button type="submit" class="secondary">
        Recover events
      </button>
    </ActionForm>
  );
}
