// A compact table of events (the endpoint and subscription pages show their recent ones).
import { Badge, DataTable, Empty, Time } from './components.tsx';
import type { EventView } from '../../actions/events.ts';

/** Recent events with status, tries since last queued and the last result; an empty state when there are none. */
export function EventsTable(p: { rows: EventView[]; empty: string }) {
  if (p.rows.length === 0) return <Empty>{p.empty}</Empty>;
  return (
    <DataTable head={['Event', 'Type', 'Status', 'Tries', 'Last result', 'Created']}>
      {p.rows.map((e) => (
        <tr>
          <td class="mono">
            <a href={`/dashboard/events?event=${e.id}#event-${e.id}`}>{e.id}</a>
            {e.sequence !== null ? <div class="muted">sequence {e.sequence}</div> : null}
          </td>
          <td>{e.type}</td>
          <td>
            <Badge status={e.status} />
          </td>
          <td>{e.attempt_count}</td>
          <td>
            {e.last_status_code !== null ? `HTTP ${e.last_status_code}` : ''}
            {e.last_error ? <div class="error-text">{e.last_error}</div> : null}
          </td>
          <td>
            <Time at={e.created_at} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}
