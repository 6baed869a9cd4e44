// Small pieces every dashboard page uses: times, action forms and buttons, badges, facts, tables, empty states.
import type { Child } from 'hono/jsx';

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

/** A POST form back to `to` carrying the CSRF token and `_action`; the fields and button go inside. */
export function ActionForm(p: {
  to: string;
  csrf: string;
  action: string;
  inline?: boolean;
  children: Child;
}) {
  return (
    <form method="post" action={p.to} class={p.inline ? 'inline' : 'card'}>
      <Csrf token={p.csrf} />
      <input type="hidden" name="_action" value={p.action} />
      {p.children}
    </form>
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
    <ActionForm to={p.to} csrf={p.csrf} action={p.action} inline>
      {Object.entries(p.fields ?? {}).map(([k, v]) => (
        <input type="hidden" name={k} value={v} />
      ))}
      <button type="submit" class={p.variant}>
        {p.label}
      </button>
    </ActionForm>
  );
}

/** The button that switches a resource off while it is on (secondary), or back on (primary); each is `[action, label]`. */
export function OnOffButton(p: {
  to: string;
  csrf: string;
  on: boolean;
  turnOff: [string, string];
  turnOn: [string, string];
}) {
  const [action, label] = p.on ? p.turnOff : p.turnOn;
  return (
    <ActionButton
      to={p.to}
      csrf={p.csrf}
      action={action}
      label={label}
      variant={p.on ? 'secondary' : undefined}
    />
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
    <ActionForm to={p.to} csrf={p.csrf} action="delete">
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
    </ActionForm>
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

/** A table with a header row; the rows are the children. */
export function DataTable(p: { head: string[]; children: Child }) {
  return (
    <table>
      <thead>
        <tr>
          {p.head.map((h) => (
            <th>{h}</th>
          ))}
        </tr>
      </thead>
      <tbody>{p.children}</tbody>
    </table>
  );
}

/** One term and its value in a `<dl class="facts">`. */
export function Fact(p: { label: string; class?: string; children: Child }) {
  return (
    <>
      <dt>{p.label}</dt>
      <dd class={p.class}>{p.children}</dd>
    </>
  );
}

/** The way back from a detail page to its list. */
export function Breadcrumb(p: { href: string; label: string }) {
  return (
    <p class="muted">
      <a href={p.href}>{p.label}</a> /
    </p>
  );
}
