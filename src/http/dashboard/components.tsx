// Small pieces every dashboard page uses: times, labelled fields with their errors, action buttons, badges, empty states.
import type { Child } from 'hono/jsx';
import type { FieldErrors } from './form.ts';

/** A UTC timestamp; the optional script shows it in local time, the tooltip keeps the UTC value. */
export function Time(props: { at: string | null | undefined; empty?: string }) {
  if (!props.at) return <span class="muted">{props.empty ?? '—'}</span>;
  const utc = props.at
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC')
    .replace(/Z$/, ' UTC');
  return (
    <time datetime={props.at} title={`${utc}`}>
      {utc}
    </time>
  );
}

/** The hidden CSRF field every form carries. */
export function Csrf(props: { token: string }) {
  return <input type="hidden" name="_csrf" value={props.token} />;
}

type FieldProps = {
  name: string;
  label: string;
  values: Record<string, string>;
  errors: FieldErrors;
  idPrefix?: string;
  type?: 'text' | 'url' | 'password' | 'datetime-local';
  hint?: string;
  required?: boolean;
  placeholder?: string;
  autocomplete?: string;
};

/** A text input with a visible label, the value the user typed, and its error beside it. */
export function Field(p: FieldProps) {
  const id = `${p.idPrefix ?? 'f'}-${p.name}`;
  const error = p.errors[p.name];
  return (
    <div class={error ? 'field invalid' : 'field'}>
      <label for={id}>{p.label}</label>
      <input
        id={id}
        name={p.name}
        type={p.type ?? 'text'}
        value={p.values[p.name] ?? ''}
        required={p.required}
        placeholder={p.placeholder}
        autocomplete={p.autocomplete}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? `${id}-error` : p.hint ? `${id}-hint` : undefined}
      />
      {p.hint && !error ? (
        <div class="hint" id={`${id}-hint`}>
          {p.hint}
        </div>
      ) : null}
      {error ? (
        <p class="error" id={`${id}-error`}>
          {error}
        </p>
      ) : null}
    </div>
  );
}

/** A textarea with a visible label, the text the user typed, and its error beside it. */
export function TextArea(p: Omit<FieldProps, 'type'> & { rows?: number }) {
  const id = `${p.idPrefix ?? 'f'}-${p.name}`;
  const error = p.errors[p.name];
  return (
    <div class={error ? 'field invalid' : 'field'}>
      <label for={id}>{p.label}</label>
      <textarea
        id={id}
        name={p.name}
        rows={p.rows ?? 5}
        placeholder={p.placeholder}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? `${id}-error` : p.hint ? `${id}-hint` : undefined}
      >
        {p.values[p.name] ?? ''}
      </textarea>
      {p.hint && !error ? (
        <div class="hint" id={`${id}-hint`}>
          {p.hint}
        </div>
      ) : null}
      {error ? (
        <p class="error" id={`${id}-error`}>
          {error}
        </p>
      ) : null}
    </div>
  );
}

/** A select with a visible label; the submitted value stays selected. */
export function Select(
  p: Omit<FieldProps, 'type'> & { options: { value: string; label: string }[] },
) {
  const id = `${p.idPrefix ?? 'f'}-${p.name}`;
  const error = p.errors[p.name];
  const current = p.values[p.name] ?? '';
  return (
    <div class={error ? 'field invalid' : 'field'}>
      <label for={id}>{p.label}</label>
      <select
        id={id}
        name={p.name}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
      >
        {p.options.map((o) => (
          <option value={o.value} selected={o.value === current}>
            {o.label}
          </option>
        ))}
      </select>
      {error ? (
        <p class="error" id={`${id}-error`}>
          {error}
        </p>
      ) : null}
    </div>
  );
}

/** A one-button form posting `_action` (and any hidden fields) back to `to`. */
export function ActionButton(p: {
  to: string;
  csrf: string;
  action: string;
  label: string;
  variant?: 'secondary' | 'danger';
  fields?: Record<string, string>;
}) {
  return (
    <form method="post" action={p.to} class="inline">
      <Csrf token={p.csrf} />
      <input type="hidden" name="_action" value={p.action} />
      {Object.entries(p.fields ?? {}).map(([k, v]) => (
        <input type="hidden" name={k} value={v} />
      ))}
      <button type="submit" class={p.variant}>
        {p.label}
      </button>
    </form>
  );
}

/** A delete form that needs a ticked box, so a stray click deletes nothing (no JavaScript confirm needed). */
export function ConfirmDelete(p: {
  to: string;
  csrf: string;
  confirm: string;
  button: string;
  error: string | undefined;
}) {
  return (
    <form method="post" action={p.to} class="card">
      <Csrf token={p.csrf} />
      <input type="hidden" name="_action" value="delete" />
      <div class={p.error ? 'field invalid' : 'field'}>
        <input type="checkbox" id="delete-confirm" name="confirm" value="yes" />{' '}
        <label for="delete-confirm" class="inline-label">
          {p.confirm}
        </label>
        {p.error ? (
          <p class="error" id="delete-confirm-error">
            {p.error}
          </p>
        ) : null}
      </div>
      <button type="submit" class="danger">
        {p.button}
      </button>
    </form>
  );
}

/** A status word in a coloured pill. */
export function Badge(p: { status: string; label?: string }) {
  return <span class={`badge ${p.status}`}>{p.label ?? p.status.replace('_', ' ')}</span>;
}

/** A message above the page's content. */
export function Notice(p: { text: string | undefined; kind?: 'ok' | 'error' }) {
  if (!p.text) return null;
  return (
    <div class={`notice ${p.kind ?? 'ok'}`} role={p.kind === 'error' ? 'alert' : 'status'}>
      {p.text}
    </div>
  );
}

/** What an empty list shows: what to do next. */
export function Empty(p: { children: Child }) {
  return <div class="empty">{p.children}</div>;
}

/** "Older →" when a list has another page. */
export function Pager(p: { next: string | null; base: string }) {
  if (!p.next) return null;
  const sep = p.base.includes('?') ? '&' : '?';
  return (
    <p>
      <a href={`${p.base}${sep}after=${p.next}`}>Older →</a>
    </p>
  );
}
