// The poll phases: one poll of every feed per path (first fetch, 304, same body, changed), and rounds queued untimed.
import { performance } from 'node:perf_hooks';
import { pollTick } from '../../src/worker/poller.ts';
import type { PollSummary } from '../../src/worker/poller.ts';
import type { Bench } from './setup.ts';
import { FEEDS } from './settings.ts';
import { rate } from './table.ts';

/** The poll rates set beside the raw limits (per second). */
export type PollRates = { notModified: number; allChanged: number };

/** Times a poll of every feed down each path; returns the two changed rounds, whose events the warm-up delivers, and
 *  the rates compared with the raw limits. */
export async function measurePolls(
  b: Bench,
): Promise<{ changed: PollSummary; all: PollSummary; rates: PollRates }> {
  await poll(b, 'feeds polled/s, first fetch (parse, baseline)', 'every body parsed and keyed');
  const notModified = await poll(
    b,
    'feeds polled/s, 304 path',
    'conditional GET answered 304, no parse',
  );
  await b.round('change=0&etags=0');
  await poll(
    b,
    'feeds polled/s, same-body path',
    'no validators; 200 with an identical body hash, no parse',
  );
  await b.round('change=0.2&add=2&etags=1');
  const changed = await poll(
    b,
    'feeds polled/s, changed path (20 % changed)',
    '80 % answer 304, 20 % parsed with 2 new entries',
  );
  b.row(
    'entries detected',
    String(changed.summary.newEntries),
    `expected ${Math.round(FEEDS * 0.2) * 2}`,
  );
  await b.round('change=1&add=1');
  const all = await poll(
    b,
    'feeds polled/s, changed path (all changed)',
    'every feed parsed with 1 new entry',
  );
  return {
    changed: changed.summary,
    all: all.summary,
    rates: { notModified: notModified.perSecond, allChanged: all.perSecond },
  };
}

/** Polls four more full rounds, untimed, so each delivery trial lasts a few hundred ms; returns the events queued. */
export async function queueRounds(b: Bench): Promise<number> {
  const rounds: PollSummary[] = [];
  for (let i = 0; i < 4; i++) {
    await b.round('change=1&add=1');
    rounds.push((await pollTick(b.ctx, b.workers.pollerDeps, { all: true })).summary);
  }
  const queued = rounds.reduce((n, r) => n + r.events, 0);
  b.row(
    'events queued',
    String(queued),
    `one per subscription per changed round (${rounds.length} rounds)`,
  );
  return queued;
}

/** Polls every feed once and adds its rate to the table. */
async function poll(
  b: Bench,
  label: string,
  note: string,
): Promise<{ summary: PollSummary; perSecond: number }> {
  const t = performance.now();
  const { summary } = await pollTick(b.ctx, b.workers.pollerDeps, { all: true });
  const ms = performance.now() - t;
  b.row(
    label,
    rate(summary.fetched, ms),
    `${note}; ${summary.fetched} fetched, ${summary.notModified} unchanged, ${summary.failed} failed, ${summary.newEntries} new entries, ${(ms / 1000).toFixed(2)} s`,
  );
  return { summary, perSecond: summary.fetched / (ms / 1000) };
}
