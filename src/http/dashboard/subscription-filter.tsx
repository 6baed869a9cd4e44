// The subscription page's filter part: the rules as JSON, saved or first tested against the feed's recent entries
// (each with what the filter would do and why), and what the subscription's form fields make of the JSON typed.
import type { ApiError } from '../../errors.ts';
import type { PreviewRow } from '../../actions/filter-preview.ts';
import type { Filter } from '../../feed/filter/rules.ts';
import { Csrf, DataTable, Empty, Time } from './components.tsx';
import { TextArea } from './fields.tsx';
import type { FieldErrors, FormState } from './form.ts';

/** An example the textarea shows while empty. */
const PLACEHOLDER =
  '{"keep": [{"field": "title", "contains": "security"}], "block": [{"field": "author", "contains": "bot"}]}';
const HINT =
  'Keep and block rules on title, text, author, category, url or enclosure_type: "contains" a phrase, or "matches" an RE2 pattern (both case-insensitive). Sent: an entry a keep rule matches (or any, with no keep rule) and no block rule does. Empty: every entry is sent.';

/** The filter textarea's text: the stored filter, pretty-printed; empty for none. */
export function filterTextOf(filter: Filter | null): string {
  return filter === null ? '' : JSON.stringify(filter, null, 2);
}

/** The filter textarea's JSON: empty → null (no filter); otherwise the parsed value, or why it is not JSON. */
export function parseFilterText(text: string): { value: unknown; error?: string } {
  if (text.trim() === '') return { value: null };
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (err) {
    return { value: undefined, error: `must be valid JSON (${(err as Error).message})` };
  }
}

/** The action's errors with every one about the filter (`filter.keep[1].matches`) shown beside its textarea, each
 *  naming its rule. */
export function withFilterErrors(err: ApiError, errors: FieldErrors): FieldErrors {
  const about = (err.errors ?? []).filter(
    (e) => e.path === 'filter' || e.path.startsWith('filter.'),
  );
  if (about.length === 0) return errors;
  const text = about.map((e) => (e.path === 'filter' ? e.message : `${e.path}: ${e.message}`));
  return { ...errors, filter: text.join('; ') };
}

/** The filter form: the JSON, a button that tests it on the feed's recent entries, one that saves it. */
export function FilterForm(p: { here: string; csrf: string; form: FormState }) {
  return (
    <form method="post" action={`${p.here}#filter`} class="card" id="filter">
      <Csrf token={p.csrf} />
      <TextArea
        name="filter"
        label="Filter (JSON; empty for none)"
        values={p.form.values}
        errors={p.form.errors}
        idPrefix="filter"
        rows={8}
        placeholder={PLACEHOLDER}
        hint={HINT}
      />
      <div class="actions">
        <button type="submit" name="_action" value="filter-preview" class="secondary">
          Test this filter against the feed's recent entries
        </button>
        <button type="submit" name="_action" value="filter">
          Save filter
        </button>
      </div>
    </form>
  );
}

/** What the filter typed would do with the feed's recent entries. */
export function FilterPreview(p: { rows: PreviewRow[] }) {
  if (p.rows.length === 0)
    return <Empty>No entries to test yet: they appear after the feed's first fetch.</Empty>;
  const sent = p.rows.filter((r) => r.sent).length;
  return (
    <section class="card" id="filter-preview">
      <p>
        Of the feed's {p.rows.length} most recent entries, this filter sends {sent} and keeps back{' '}
        {p.rows.length - sent}. Nothing was saved.
      </p>
      <DataTable head={['Entry', 'First seen', 'Filter']}>
        {p.rows.map((r) => (
          <tr class={r.sent ? 'sent' : 'filtered'}>
            <td>{r.title ?? r.url ?? r.id}</td>
            <td>
              <Time at={r.first_seen_at} />
            </td>
            <td>{r.why}</td>
          </tr>
        ))}
      </DataTable>
    </section>
  );
}
