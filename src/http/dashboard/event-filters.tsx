// The events page's filters: read from the query string (or a resend form), written back into links, hidden fields and the filter form.
import { isId } from '../../ids.ts';
import { Select } from './fields.tsx';

/** The statuses an event can have, as the filter lists them. */
const STATUSES = ['pending', 'delivered', 'failed', 'dead'] as const;
/** Each filter is '' when unset; a malformed value is dropped rather than refused. `kind` is '' for the feeds' events,
 *  'tests' for test pings: the two are listed apart, so a failed ping never reads as a lost entry. */
export type Filters = {
  status: string;
  subscription: string;
  endpoint: string;
  event: string;
  kind: '' | 'tests';
};

/** The filters named by `get` (the query string, or a posted form): unknown statuses and malformed ids become ''. */
export function filtersOf(get: (name: string) => string | undefined): Filters {
  const status = get('status') ?? '';
  const id = (v: string | undefined) => (isId(v) ? v : '');
  return {
    status: (STATUSES as readonly string[]).includes(status) ? status : '',
    subscription: id(get('subscription')),
    endpoint: id(get('endpoint')),
    event: id(get('event')),
    kind: get('kind') === 'tests' ? 'tests' : '',
  };
}

/** The filters that are set, so links and hidden fields carry nothing empty. */
export function setFilters(f: Filters): Record<string, string> {
  return Object.fromEntries(Object.entries(f).filter(([, v]) => v !== ''));
}

/** The filters as a query string (`?…`), or '' when none is set. */
export function queryOf(f: Filters): string {
  const q = new URLSearchParams(setFilters(f));
  return q.size ? `?${q}` : '';
}

/** The status filter form; it keeps the subscription or endpoint the list is scoped to. */
export function FilterForm(p: { filters: Filters }) {
  const f = p.filters;
  const options = [
    { value: '', label: 'Any status' },
    ...STATUSES.map((x) => ({ value: x, label: x })),
  ];
  return (
    <form method="get" action="/dashboard/events" class="card actions">
      {f.subscription ? <input type="hidden" name="subscription" value={f.subscription} /> : null}
      {f.endpoint ? <input type="hidden" name="endpoint" value={f.endpoint} /> : null}
      {f.kind ? <input type="hidden" name="kind" value={f.kind} /> : null}
      <Select
        name="status"
        label="Status"
        values={{ status: f.status }}
        errors={{}}
        idPrefix="filter"
        options={options}
      />
      <button type="submit" class="secondary">
        Filter
      </button>
      {f.subscription || f.endpoint ? <a href="/dashboard/events">Show every event</a> : null}
    </form>
  );
}

/** Two tabs: the feeds' events, and test pings (of the endpoint the list is scoped to, if any). */
export function KindTabs(p: { filters: Filters }) {
  const base = { ...p.filters, status: '', event: '', subscription: '' };
  const tabs: [Filters['kind'], string][] = [
    ['', 'Feed events'],
    ['tests', 'Test pings'],
  ];
  return (
    <nav class="tabs" aria-label="Kind of event">
      {tabs.map(([kind, label]) => (
        <a
          href={`/dashboard/events${queryOf({ ...base, kind, subscription: kind ? '' : p.filters.subscription })}`}
          aria-current={p.filters.kind === kind ? 'page' : undefined}
        >
          {label}
        </a>
      ))}
    </nav>
  );
}
