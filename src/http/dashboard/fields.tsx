// Labelled form controls (text input, textarea, select): each shows the value the user typed and its error beside it.
import type { Child } from 'hono/jsx';
import type { FieldErrors } from './form.ts';

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

/** The control's id: the form's prefix keeps two forms on one page from sharing ids. */
function controlId(p: { idPrefix?: string; name: string }): string {
  return `${p.idPrefix ?? 'f'}-${p.name}`;
}

/** What a screen reader reads after the label: the error when there is one, else the hint. */
function describedBy(id: string, error: string | undefined, hint: string | undefined) {
  return error ? `${id}-error` : hint ? `${id}-hint` : undefined;
}

/** The frame every control shares: the label, the control, then its hint (only while valid) or its error. */
function Frame(p: {
  id: string;
  label: string;
  error: string | undefined;
  hint?: string | undefined;
  children: Child;
}) {
  return (
    <div class={p.error ? 'field invalid' : 'field'}>
      <label for={p.id}>{p.label}</label>
      {p.children}
      {p.hint && !p.error ? (
        <div class="hint" id={`${p.id}-hint`}>
          {p.hint}
        </div>
      ) : null}
      {p.error ? (
        <p class="error" id={`${p.id}-error`}>
          {p.error}
        </p>
      ) : null}
    </div>
  );
}

/** A text input with a visible label, the value the user typed, and its error beside it. */
export function Field(p: FieldProps) {
  const id = controlId(p);
  const error = p.errors[p.name];
  return (
    <Frame id={id} label={p.label} error={error} hint={p.hint}>
      <input
        id={id}
        name={p.name}
        type={p.type ?? 'text'}
        value={p.values[p.name] ?? ''}
        required={p.required}
        placeholder={p.placeholder}
        autocomplete={p.autocomplete}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={describedBy(id, error, p.hint)}
      />
    </Frame>
  );
}

/** A textarea with a visible label, the text the user typed, and its error beside it. */
export function TextArea(p: Omit<FieldProps, 'type'> & { rows?: number }) {
  const id = controlId(p);
  const error = p.errors[p.name];
  return (
    <Frame id={id} label={p.label} error={error} hint={p.hint}>
      <textarea
        id={id}
        name={p.name}
        rows={p.rows ?? 5}
        placeholder={p.placeholder}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={describedBy(id, error, p.hint)}
      >
        {p.values[p.name] ?? ''}
      </textarea>
    </Frame>
  );
}

/** A select with a visible label; the submitted value stays selected. */
export function Select(
  p: Omit<FieldProps, 'type'> & { options: { value: string; label: string }[] },
) {
  const id = controlId(p);
  const error = p.errors[p.name];
  const current = p.values[p.name] ?? '';
  return (
    <Frame id={id} label={p.label} error={error}>
      <select
        id={id}
        name={p.name}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={describedBy(id, error, undefined)}
      >
        {p.options.map((o) => (
          <option value={o.value} selected={o.value === current}>
            {o.label}
          </option>
        ))}
      </select>
    </Frame>
  );
}
