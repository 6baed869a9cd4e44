// What an event is about, in words: the feed's title and its first entries' titles, a feed-health change, or a test
// ping; read from the event's body (store/events-summary.ts) so lists need no ids to be read.
import type { Ctx } from '../../context.ts';
import type { EventView } from '../../actions/events.ts';
import { eventSummaries, type EventSummary } from '../../store/events-summary.ts';

export type Summaries = Map<string, EventSummary>;

/** The summaries of a page of events (one query, bodies read by primary key). */
export async function summariesOf(ctx: Ctx, events: EventView[]): Promise<Summaries> {
  return eventSummaries(
    ctx.db,
    events.map((e) => e.id),
  );
}

/** How each feed-health type reads after the feed's name. */
const HEALTH: Record<string, string> = {
  'feed.failing': 'started failing',
  'feed.recovered': 'recovered',
  'feed.gone': 'is gone (410)',
  'feed.moved': 'moved to a new URL',
  'feed.identity_hold': 'replaced its entry ids; entries held',
  'feed.over_budget': 'is held: your application is over its storage budget',
  'feed.within_budget': 'is polled again within your storage budget',
};

const quoted = (title: string | null) => (title === null ? '(untitled)' : `“${title}”`);

/** The entries' titles: the first few quoted, then how many more. */
function titlesLine(s: EventSummary): string {
  const shown = s.titles.map(quoted).join(', ');
  const more = (s.entry_count ?? s.titles.length) - s.titles.length;
  return more > 0 ? `${shown} and ${more} more` : shown;
}

/** One line about the event: `feed title: “entry”, “entry” and 3 more`, `feed title started failing`, `Test ping`. */
export function EventAbout(p: { e: EventView; summary: EventSummary | undefined }) {
  if (p.e.subscription === null) return <span class="about">Test ping</span>;
  const s = p.summary;
  const feed = s?.feed_title || s?.feed_url || 'A feed';
  if (p.e.type === 'subscription.entries' && s)
    return (
      <span class="about">
        <strong>{feed}</strong>: {titlesLine(s)}
      </span>
    );
  return (
    <span class="about">
      <strong>{feed}</strong> {HEALTH[p.e.type] ?? p.e.type}
    </span>
  );
}
