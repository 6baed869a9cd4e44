// The endpoint page's forms: the signing secret (hidden until asked for) with its rotation, edit, and recover.
import type { Context } from 'hono';
import type { Ctx } from '../../context.ts';
import { endpointSecret, type EndpointView } from '../../actions/endpoints.ts';
import { ActionButton, ActionForm, Time } from './components.tsx';
import { Field } from './fields.tsx';
import type { FormState } from './form.ts';
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
export function SecretBox(p: { ctx: Ctx; c: Context<DashEnv>; e: EndpointView }) {
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
  const secret = endpointSecret(p.ctx, s.applicationId, p.e.id);
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

/** The title and URL form, showing what the user typed when it failed. */
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
