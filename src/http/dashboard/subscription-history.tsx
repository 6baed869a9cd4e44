// The subscription page's history part: the feed's newest entries, and the "Why?" form with the trace it answers.
import type { Ctx } from '../../context.ts';
import { listHistory } from '../../actions/entry-history.ts';
import { traceEntry, type TraceView } from '../../actions/trace.ts';
import { ApiError } from '../../errors.ts';
import type { EventEntry } from '../../webhook/event.ts';
import { Badge, DataTable, Empty, Fact, Time } from './components.tsx';

/** Entries the page lists (the API pages through all of them). */
const ENTRIES_SHOWN = 20;

/** Only web links are links: an entry URL is the feed's data. */
const webLink = (url: string | null) => (url !== null && /^https?:\/\//i.test(url) ? url : null);

/** The feed's newest entries, each with a link to its trace. */
export async function EntriesList(p: { ctx: Ctx; feedId: string; here: string }) {
  const page = await listHistory(p.ctx, p.feedId, { limit: ENTRIES_SHOWN });
  if (page.data.length === 0)
    return <Empty>No entries yet: they appear after the feed's first fetch.</Empty>;
  return (
    <DataTable head={['Title', 'Published', 'Id', '']}>
      {page.data.map((raw) => {
        const e = JSON.parse(raw.text) as EventEntry;
        const link = webLink(e.url);
        const title = e.title ?? e.guid ?? e.id;
        return (
          <tr>
            <td>{link ? <a href={link}>{title}</a> : title}</td>
            <td>
              <Time at={e.published_at} />
            </td>
            <td class="mono">{e.id}</td>
            <td>
              <a href={`${p.here}?entry=${e.id}#why`}>Why?</a>
            </td>
          </tr>
        );
      })}
    </DataTable>
  );
}

/** The "Why?" form (GET, so a trace has its own address) and, when asked, the trace or why it could not be read. */
export async function WhySection(p: {
  ctx: Ctx;
  applicationId: string;
  subscriptionId: string;
  here: string;
  query: string | undefined;
}) {
  let trace: TraceView | undefined;
  let error: string | undefined;
  if (p.query !== undefined) {
    try {
      trace = await traceEntry(p.ctx, p.applicationId, p.subscriptionId, p.query);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      error = err.errors?.[0]?.message ?? err.message;
    }
  }
  return (
    <section class="card" id="why">
      <form method="get" action={`${p.here}#why`}>
        <div class={error ? 'field invalid' : 'field'}>
          <label for="why-entry">Entry id, guid or URL</label>
          <input id="why-entry" name="entry" value={p.query ?? ''} maxlength={2048} />
          {error ? <p class="error">{error}</p> : null}
        </div>
        <button type="submit">Why?</button>
      </form>
      {trace ? <TraceFacts t={trace} /> : null}
    </section>
  );
}

/** A trace answer: the decision and its reason, the facts, and the events that carried the entry. */
function TraceFacts(p: { t: TraceView }) {
  const t = p.t;
  return (
    <div id="trace">
      <p>
        <Badge status={t.decision} /> {t.reason}
      </p>
      <dl class="facts">
        <Fact label="Id" class="mono">
          {t.key ?? '—'}
        </Fact>
        <Fact label="Key from">{t.key_source ?? '—'}</Fact>
        <Fact label="First seen">
          <Time at={t.first_seen_at} empty="—" /> {t.via ? `(${t.via})` : ''}
        </Fact>
        <Fact label="Fate">{t.fate ?? '—'}</Fact>
      </dl>
      {t.events.length > 0 ? (
        <DataTable head={['Event', 'Type', 'Status', 'Attempts', 'Delivered']}>
          {t.events.map((e) => (
            <tr>
              <td class="mono">
                <a href={`/dashboard/events?event=${e.id}#event-${e.id}`}>{e.id}</a>
              </td>
              <td>
                {e.type}
                {e.backfill ? ' (backfill)' : ''}
              </td>
              <td>
                <Badge status={e.status} />
              </td>
              <td>{e.attempts.length}</td>
              <td>
                <Time at={e.delivered_at} empty="—" />
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
    </div>
  );
}
