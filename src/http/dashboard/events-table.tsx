// A compact table of events (the endpoint and subscription pages show their recent ones).
import { Badge, DataTable, Empty, Time } from './components.tsx';
import type { EventView } from '../../actions/events.ts';
import { EventAbout, type Summaries } from './event-about.tsx';

/** Recent events with what each is about, status, tries since last queued and the last result; an empty state when
 *  there are none. */
export function EventsTable(p: { rows: EventView[]; summaries: Summaries; empty: string }) {
  if (p.rows.length === 0) return <Empty>{p.empty}</Empty>;
  return (
    <DataTable head={['Event', 'Status', 'Tries', 'Last result', 'Created']}>
      {p.rows.map((e) => (
        <tr>
          <td data-label="Event">
            <a href={`/dashboard/events?event=${e.id}#event-${e.id}`}>
              <EventAbout e={e} summary={p.summaries.get(e.id)} />
            </a>
            <div class="muted">
              {e.type}
              {e.sequence !== null ? `, sequence ${e.sequence}` : ''}
            </div>
          </td>
          <td data-label="Status">
            <Badge status={e.status} />
          </td>
          <td data-label="Tries">{e.attempt_count}</td>
          <td data-label="Last result">
            {e.last_status_code !== null ? `HTTP ${e.last_status_code}` : ''}
            {e.last_error ? <div class="error-text">{e.last_error}</div> : null}
          </td>
          <td data-label="Created">
            <Time at={e.created_at} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}
