// make bench-cluster, one node count's column of the table from its cycles, and the checks whose failure makes the bench
// exit 1: no feed fetched twice in a cycle, every feed fetched in each, every event made and delivered once, nothing
// lost to the failover.
import type { Failover, Measured } from './cycles.ts';

/** Sets a row's cell in this node count's column (a note replaces the row's). */
export type Cell = (what: string, value: string, note?: string) => void;

/** A figure that must hold; the bench exits 1 when one does not. */
export type Check = { what: string; ok: boolean };

/** Everything one node count measured. */
export type Results = {
  cell: Cell;
  checks: Check[];
  count: number;
  feeds: number;
  subs: number;
  builtMs: number;
  first: Measured;
  all304: Measured;
  changed: Measured;
  /** Webhook-ids the receivers saw twice before the failover (no node had crashed). */
  twiceBefore: number;
  over: Failover | undefined;
};

const perSecond = (n: number, ms: number) => `${(n / (ms / 1000)).toFixed(0)}/s`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const shares = (parts: number[]) => {
  const all = parts.reduce((a, b) => a + b, 0);
  return parts.map((p) => (all === 0 ? '-' : ((p / all) * 100).toFixed(0))).join(' / ') + ' %';
};

/** Adds the column's cells and the checks. */
export function report(r: Results): void {
  const { cell, feeds } = r;
  const check = (what: string, ok: boolean) =>
    r.checks.push({ what: `${r.count} node(s): ${what}`, ok });
  cell(
    'world built',
    seconds(r.builtMs),
    `${feeds.toLocaleString('en')} feeds × ${r.subs} subscriptions (10 applications, 100 endpoints) through the actions, in the bench process`,
  );
  cell(
    'first cycle (every baseline), feeds/s',
    perSecond(feeds, r.first.pollMs),
    'every feed made due at once → every feed polled and recorded; parsed, no events',
  );
  cell(
    'all-304 cycle, feeds/s',
    perSecond(feeds, r.all304.pollMs),
    'every feed made due at once → every one polled and recorded; the origin answers 304',
  );
  cell(
    'changed cycle, feeds/s',
    perSecond(feeds, r.changed.pollMs),
    'every feed gained one entry: made due → every feed polled, parsed and recorded',
  );
  cell(
    'changed cycle, events delivered/s',
    perSecond(r.changed.events, r.changed.doneMs),
    `its ${(feeds * r.subs).toLocaleString('en')} events (one per subscription): made due → the last delivered`,
  );
  const polls = r.all304.counts.map((c, i) => c.polls + r.changed.counts[i]!.polls);
  cell(
    'share of polls per node',
    shares(polls),
    'the all-304 and changed cycles, from each node’s /metrics',
  );
  cell(
    'share of delivery attempts per node',
    shares(r.changed.counts.map((c) => c.attempts)),
    'the changed cycle, from each node’s /metrics',
  );
  const cycles = [r.first, r.all304, r.changed];
  const twice = cycles.reduce((n, c) => n + c.twice, 0);
  cell(
    'feeds fetched twice in one cycle (must be 0)',
    String(twice),
    'the origin’s count per feed over the three cycles (the interval is a day: one fetch per feed and cycle)',
  );
  check(`${twice} feeds fetched twice in one cycle`, twice === 0);
  for (const [i, c] of cycles.entries())
    check(`cycle ${i + 1} fetched ${c.fetched} of ${feeds} feeds`, c.fetched === feeds);
  cell(
    'events delivered twice, no crash (must be 0)',
    String(r.twiceBefore),
    'webhook-ids the receivers saw more than once, before the failover',
  );
  check(`${r.twiceBefore} events delivered twice`, r.twiceBefore === 0);
  check(
    `the changed cycle made ${r.changed.events} events of ${feeds * r.subs}, delivered ${r.changed.delivered}`,
    r.changed.events === feeds * r.subs && r.changed.delivered === r.changed.events,
  );
  cpu(r, 'all-304', r.all304, 'poll');
  cpu(r, 'changed', r.changed, 'changed feed (its events delivered)');
  if (r.over) failoverCells(r, r.over, check);
}

/** A cycle's CPU per 1,000 feeds on each node and on the server, the cores each kept busy, its WAL and writes. */
function cpu(r: Results, label: string, m: Measured, unit: string): void {
  const per1000 = (s: number) => ((s / r.feeds) * 1000).toFixed(2);
  const nodes = m.nodeCpu.reduce((a, b) => a + b, 0);
  r.cell(
    `${label}: CPU s per 1,000 feeds, each node`,
    m.nodeCpu.map(per1000).join(' / '),
    'user + system of each node’s process (/proc/<pid>/stat), every thread',
  );
  r.cell(
    `${label}: CPU s per 1,000 feeds, all nodes / database`,
    `${per1000(nodes)} / ${per1000(m.dbCpu)}`,
    'the database: every process of the PostgreSQL server (backends, WAL writer, checkpointer, ended backends), the bench’s reads of its progress included',
  );
  r.cell(
    `${label}: cores busy, all nodes / database`,
    `${(nodes / (m.doneMs / 1000)).toFixed(2)} / ${(m.dbCpu / (m.doneMs / 1000)).toFixed(2)}`,
    'CPU seconds over the cycle’s wall time',
  );
  r.cell(
    `${label}: WAL per ${unit}`,
    `${(m.wal / r.feeds / 1024).toFixed(1)} KiB`,
    'the server’s WAL over the cycle (pg_current_wal_lsn()), from a CHECKPOINT just before it',
  );
  r.cell(
    `${label}: write transactions per 1,000 feeds`,
    ((m.writes / r.feeds) * 1000).toFixed(0),
    'transaction ids the server assigned over the cycle (each transaction that wrote, a savepoint that wrote too)',
  );
}

function failoverCells(r: Results, f: Failover, check: (what: string, ok: boolean) => void): void {
  const lost = f.cycle.events - f.cycle.delivered;
  r.cell(
    'failover: kill → its held work done by the others',
    seconds(f.takeoverMs),
    `cluster.node_timeout_seconds 15 (the default); the last node SIGKILLed while holding events of a changed cycle (10 % of the feeds) whose receivers answer in 500 ms; held at the kill (events / feeds in flight) and sent again (same webhook-id) in the next rows`,
  );
  r.cell('failover: events / feeds it held', `${f.heldEvents} / ${f.heldFeeds}`);
  r.cell(
    'failover: attempts sent again after the kill',
    String(f.resent),
    'at most the events it held',
  );
  r.cell(
    'failover: events lost (must be 0)',
    String(lost),
    `of ${f.cycle.events}; the cycle ran to its end`,
  );
  check(`the failover lost ${lost} events`, lost === 0);
  check(
    `the failover resent ${f.resent} events, more than the ${f.heldEvents} held`,
    f.resent <= f.heldEvents,
  );
}
