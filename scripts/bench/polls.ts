// The poll phases: one poll of every feed per path (first fetch, 304, same body, changed, changed with 20 filter rules on
// every subscription), and rounds queued untimed.
// On PostgreSQL the 304 and 20 %-changed paths also give the WAL the server wrote per feed polled.
import { performance } from 'node:perf_hooks';
import { pollTick } from '../../src/worker/poll/round.ts';
import type { PollSummary } from '../../src/worker/poll/poller.ts';
import { walPosition } from './postgres.ts';
import type { Bench } from './setup.ts';
import { measureFilteredPolls } from './filters.ts';
import { fetchBodies, ratio, rawConditionalGets, rawParse } from './raw.ts';
import { CONCURRENCY, FEEDS } from './settings.ts';
import { rate } from './table.ts';

/** Times a poll of every feed down each path, the 304 and all-changed paths between two trials of their raw limit
 *  (raw conditional GETs; feedsmith parsing the same bodies in one thread), each ratio beside its path; returns the two
 *  changed rounds, whose events the warm-up delivers. */
export async function measurePolls(
  b: Bench,
): Promise<{ changed: PollSummary; filtered: PollSummary; all: PollSummary }> {
  await poll(b, 'feeds polled/s, first fetch (parse, baseline)', 'every body parsed and keyed');
  const { etags } = await fetchBodies(b.base);
  const getsBefore = await rawConditionalGets(b.base, etags);
  const notModified = await poll(
    b,
    'feeds polled/s, 304 path',
    'conditional GET answered 304, no parse',
    'bytes written per feed polled, 304 path (WAL)',
  );
  const gets = (getsBefore + (await rawConditionalGets(b.base, etags))) / 2;
  b.row(
    'raw: undici conditional GET rate',
    `${gets.toFixed(0)}/s`,
    `same origin, concurrency ${CONCURRENCY}, answered 304; mean of a trial just before the 304 path and one just after (${getsBefore.toFixed(0)}/s first)`,
  );
  b.row('304 path vs raw conditional GET', ratio(notModified.perSecond, gets), 'target ≥ 50 %');
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
    'bytes written per feed polled, changed path (20 % changed) (WAL)',
  );
  b.row(
    'entries detected',
    String(changed.summary.newEntries),
    `expected ${Math.round(FEEDS * 0.2) * 2}`,
  );
  const filtered = await measureFilteredPolls(b, changed.perSecond);
  await b.round('change=1&add=1');
  const { bodies } = await fetchBodies(b.base);
  const parseBefore = rawParse(bodies);
  const all = await poll(
    b,
    'feeds polled/s, changed path (all changed)',
    'every feed parsed with 1 new entry',
  );
  const parse = (parseBefore + rawParse(bodies)) / 2;
  b.row(
    'raw: feedsmith parse rate',
    `${parse.toFixed(0)}/s`,
    `the same bodies, one thread, no normalization; mean of a trial just before the all-changed path and one just after (${parseBefore.toFixed(0)}/s first)`,
  );
  b.row(
    'changed path (all changed) vs one-thread feedsmith',
    `${(all.perSecond / parse).toFixed(2)}×`,
    'target ≥ 1.0× (fetch, read on the parse threads, keys, events, against parsing alone)',
  );
  return { changed: changed.summary, filtered, all: all.summary };
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

/** Polls every feed once and adds its rate to the table; on PostgreSQL with a `wal` label, also a row of the WAL the
 *  server wrote per feed polled, from a CHECKPOINT just before the poll (outside its time). */
async function poll(
  b: Bench,
  label: string,
  note: string,
  wal?: string,
): Promise<{ summary: PollSummary; perSecond: number }> {
  const server = wal !== undefined && b.ctx.db.dialect === 'postgres';
  if (server) await b.ctx.db.exec('CHECKPOINT');
  const before = server ? await walPosition(b.ctx.db) : 0;
  const t = performance.now();
  const { summary } = await pollTick(b.ctx, b.workers.pollerDeps, { all: true });
  const ms = performance.now() - t;
  b.row(
    label,
    rate(summary.fetched, ms),
    `${note}; ${summary.fetched} fetched, ${summary.notModified} unchanged, ${summary.failed} failed, ${summary.newEntries} new entries, ${(ms / 1000).toFixed(2)} s`,
  );
  if (server) {
    const written = (await walPosition(b.ctx.db)) - before;
    b.row(
      wal,
      `${(written / summary.fetched / 1024).toFixed(1)} KiB`,
      `pg_current_wal_lsn() before and after those ${summary.fetched} polls, from a CHECKPOINT just before them (every page first written after it is written whole once); ${(written / 1024 / 1024).toFixed(1)} MiB in all`,
    );
  }
  return { summary, perSecond: summary.fetched / (ms / 1000) };
}
