// One event on the events page: its facts, its attempts with the receiver's response, its payload when opened, resend.
import type { Context } from 'hono';
import type { Ctx } from '../../context.ts';
import {
  requireEventDetail,
  type AttemptView,
  type EventDetailView,
  type EventView,
} from '../../actions/events.ts';
import { ActionButton, Badge, DataTable, Fact, Time } from './components.tsx';
import type { EventSummary } from '../../store/events-summary.ts';
import { EventAbout } from './event-about.tsx';
import { setFilters, type Filters } from './event-filters.tsx';
import { prettyJson } from './pretty-json.ts';
import { viewer, type DashEnv } from './session.ts';

function Attempts(p: { attempts: AttemptView[] }) {
  if (p.attempts.length === 0) return <p class="muted">Not tried yet.</p>;
  return (
    <DataTable head={['Started', 'Result', 'Duration', 'Response (first 4 KiB)']}>
      {p.attempts.map((a) => (
        <tr>
          <td data-label="Started">
            <Time at={a.started_at} />
          </td>
          <td data-label="Result">
            {a.status_code !== null ? `HTTP ${a.status_code}` : 'no response'}
            {a.error ? <div class="error-text">{a.error}</div> : null}
          </td>
          <td data-label="Duration">{a.duration_ms} ms</td>
          <td data-label="Response (first 4 KiB)">
            {a.response_body ? <pre>{a.response_body}</pre> : <span class="muted">empty</span>}
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

function EventHeading(p: { e: EventView; summary: EventSummary | undefined }) {
  return (
    <>
      <div class="actions">
        <Badge status={p.e.status} /> <EventAbout e={p.e} summary={p.summary} />
      </div>
      <div class="actions muted">
        <span>{p.e.type}</span> <span class="mono">{p.e.id}</span>
        {p.e.sequence !== null ? <span>sequence {p.e.sequence}</span> : null}
        <span>
          created <Time at={p.e.created_at} />
        </span>
      </div>
    </>
  );
}

/** Every attempt kept; a resend or recover resets the event's count of tries, so that count is shown when it differs. */
function AttemptCount(p: { e: EventView; detail: EventDetailView | undefined }) {
  return (
    <>
      {p.detail?.attempts.length ?? 0}
      {p.detail && p.detail.attempts.length !== p.e.attempt_count ? (
        <span class="muted"> ({p.e.attempt_count} since it was last queued)</span>
      ) : null}
      {p.e.next_attempt_at ? (
        <span class="muted">
          {' '}
          — next <Time at={p.e.next_attempt_at} />
        </span>
      ) : null}
    </>
  );
}

function EventFacts(p: { e: EventView; detail: EventDetailView | undefined }) {
  const e = p.e;
  return (
    <dl class="facts spaced">
      {e.subscription ? (
        <Fact label="Subscription">
          <a href={`/dashboard/subscriptions/${e.subscription}`} class="mono">
            {e.subscription}
          </a>
        </Fact>
      ) : null}
      <Fact label="Endpoint">
        <a href={`/dashboard/endpoints/${e.endpoint}`} class="mono">
          {e.endpoint}
        </a>
      </Fact>
      <Fact label="Attempts">
        <AttemptCount e={e} detail={p.detail} />
      </Fact>
      {e.delivered_at ? (
        <Fact label="Delivered">
          <Time at={e.delivered_at} />
        </Fact>
      ) : null}
      {e.last_error ? (
        <Fact label="Last error" class="error-text">
          {e.last_error}
        </Fact>
      ) : null}
    </dl>
  );
}

/** The attempts (open on the single-event view), and there the exact payload too. */
function EventDetails(p: { detail: EventDetailView; open: boolean }) {
  return (
    <>
      <details open={p.open}>
        <summary>Attempts ({p.detail.attempts.length})</summary>
        <Attempts attempts={p.detail.attempts} />
      </details>
      {p.open ? (
        <details class="payload">
          <summary>Payload (the body of every attempt, indented for reading)</summary>
          <pre>{prettyJson(p.detail.payload.text)}</pre>
          <details>
            <summary>As sent, byte for byte</summary>
            <pre>{p.detail.payload.text}</pre>
          </details>
        </details>
      ) : null}
    </>
  );
}

/** Resend carries the page's filters, so the redirect comes back to the same list (or the same single event). */
function ResendButton(p: { csrf: string; e: EventView; filters: Filters; open: boolean }) {
  const back = setFilters({ ...p.filters, event: p.open ? p.e.id : p.filters.event });
  return (
    <div class="actions spaced">
      <ActionButton
        to="/dashboard/events"
        csrf={p.csrf}
        action="resend"
        label="Resend"
        variant="secondary"
        fields={{ id: p.e.id, ...back }}
      />
    </div>
  );
}

/** One event; its attempts are read only when it has some or is the one opened. */
export async function EventCard(p: {
  ctx: Ctx;
  c: Context<DashEnv>;
  e: EventView;
  summary: EventSummary | undefined;
  filters: Filters;
  open: boolean;
}) {
  const s = viewer(p.c);
  const detail =
    p.e.attempt_count > 0 || p.open
      ? await requireEventDetail(p.ctx, s.applicationId, p.e.id)
      : undefined;
  return (
    <section class="card" id={`event-${p.e.id}`}>
      <EventHeading e={p.e} summary={p.summary} />
      <EventFacts e={p.e} detail={detail} />
      {detail ? <EventDetails detail={detail} open={p.open} /> : null}
      {p.e.status !== 'pending' ? (
        <ResendButton csrf={s.csrfToken} e={p.e} filters={p.filters} open={p.open} />
      ) : null}
    </section>
  );
}
