// The 24 h charts' data: an endpoint's attempts and a feed's polls per UTC hour, as 24 bars ending with the hour under
// way. Pure: the rows come from src/store, `now` from the clock.
import type { AttemptHourRow } from '../../store/attempts.ts';
import type { PollHourRow } from '../../store/feed-poll-hours.ts';

/** How a part of a bar is coloured: good (delivered, polled), warn (throttled), bad (failed). */
export type Part = { kind: 'good' | 'warn' | 'bad'; n: number };
/** One hour's bar: its label ('14:00'), its tooltip, and its parts from the bottom up. */
export type Bar = { hour: string; label: string; tip: string; parts: Part[] };
/** A chart: 24 bars, oldest first, and one sentence that says what they add up to. */
export type Chart = { bars: Bar[]; summary: string; empty: boolean };

export const CHART_HOURS = 24;
const HOUR_MS = 3_600_000;

/** The first instant the chart covers: the start of the hour 23 hours before the one `now` falls in. */
export function chartSince(now: Date): Date {
  return new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - (CHART_HOURS - 1) * HOUR_MS);
}

/** The chart's hours, oldest first, as the tables key them ('YYYY-MM-DDTHH'). */
export function chartHours(now: Date): string[] {
  const first = chartSince(now).getTime();
  return Array.from({ length: CHART_HOURS }, (_, i) =>
    new Date(first + i * HOUR_MS).toISOString().slice(0, 13),
  );
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const span = (hour: string) => {
  const h = Number(hour.slice(11, 13));
  return `${hour.slice(0, 10)} ${String(h).padStart(2, '0')}:00–${String((h + 1) % 24).padStart(2, '0')}:00 UTC`;
};
const ms = (n: number) => (n >= 1000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`);

/** 24 bars of `rows` (keyed by hour), each made by `bar`; hours without a row get `bar(undefined)`. */
function barsOf<R extends { hour: string }>(
  rows: R[],
  now: Date,
  bar: (row: R | undefined) => { tip: string; parts: Part[] },
): Bar[] {
  const byHour = new Map(rows.map((r) => [r.hour, r]));
  return chartHours(now).map((hour) => {
    const b = bar(byHour.get(hour));
    return {
      hour,
      label: `${hour.slice(11, 13)}:00`,
      tip: `${span(hour)}: ${b.tip}`,
      parts: b.parts,
    };
  });
}

/** An endpoint's last 24 h of delivery attempts: delivered (2xx) at the bottom, failed above. */
export function deliveryChart(rows: AttemptHourRow[], now: Date): Chart {
  const bars = barsOf(rows, now, (r) => {
    if (!r || r.attempts === 0) return { tip: 'no attempts', parts: [] };
    const failed = r.attempts - r.delivered;
    return {
      tip: `${plural(r.attempts, 'attempt')}, ${r.delivered} delivered, ${failed} failed; average ${ms(r.total_ms / r.attempts)}, slowest ${ms(r.max_ms)}`,
      parts: [
        { kind: 'good', n: r.delivered },
        { kind: 'bad', n: failed },
      ],
    };
  });
  const attempts = rows.reduce((a, r) => a + r.attempts, 0);
  const delivered = rows.reduce((a, r) => a + r.delivered, 0);
  const totalMs = rows.reduce((a, r) => a + r.total_ms, 0);
  return {
    bars,
    empty: attempts === 0,
    summary:
      attempts === 0
        ? 'No delivery attempts.'
        : `${plural(attempts, 'attempt')}, ${delivered} delivered (${Math.floor((100 * delivered) / attempts)} %), ${attempts - delivered} failed; average response ${ms(totalMs / attempts)}.`,
  };
}

/** A feed's last 24 h of polls: fetched (parsed or unchanged) at the bottom, throttled, then failed. */
export function pollChart(rows: PollHourRow[], now: Date): Chart {
  const bars = barsOf(rows, now, (r) => {
    const polls = r ? r.ok + r.failed + r.throttled : 0;
    if (!r || polls === 0) return { tip: 'no polls', parts: [] };
    return {
      tip: `${plural(polls, 'poll')}, ${r.ok} fetched, ${r.throttled} throttled, ${r.failed} failed; ${plural(r.new_entries, 'new entry', 'new entries')}`,
      parts: [
        { kind: 'good', n: r.ok },
        { kind: 'warn', n: r.throttled },
        { kind: 'bad', n: r.failed },
      ],
    };
  });
  const sum = (k: 'ok' | 'failed' | 'throttled' | 'new_entries') =>
    rows.reduce((a, r) => a + r[k], 0);
  const polls = sum('ok') + sum('failed') + sum('throttled');
  return {
    bars,
    empty: polls === 0,
    summary:
      polls === 0
        ? 'No polls.'
        : `${plural(polls, 'poll')}, ${sum('ok')} fetched, ${sum('throttled')} throttled, ${sum('failed')} failed; ${plural(sum('new_entries'), 'new entry', 'new entries')}.`,
  };
}
