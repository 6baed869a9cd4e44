// make bench-scale, bytes written (on SQLite write_bytes of /proc/<pid>/io: WAL appends and checkpoints included; on
// PostgreSQL the server's WAL): per 304 poll of `poll --once` and of serve polling on its own, per subscription created
// through the API and by the world build.
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { NUDGE_CHANNEL } from '../../src/db/nudges.ts';
import { apiRun } from './api.ts';
import type { Cycle, Run } from './cycles.ts';

/** Subscriptions the create-only run makes. */
const CREATES = 2000;
/** Longer than serve's checkpoint interval on SQLite (200 ms): what a write left in the WAL is in the database file by
 *  then. */
const SETTLE_MS = 2000;
const TARGET = 'target ≤ 2 KB per 304 poll';

const size = (bytes: number) =>
  bytes >= 1024 * 1024
    ? `${(bytes / 1024 / 1024).toFixed(1)} MiB`
    : `${(bytes / 1024).toFixed(1)} KiB`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Bytes per 304 poll of each all-304 `poll --once`: on SQLite the process's whole write_bytes, on PostgreSQL the
 *  server's WAL over the cycle (what the API run beside it wrote included), over its polls answered 304. */
export function pollOnceBytes(r: Run, cycles: Cycle[]): void {
  for (const [i, c] of cycles.entries()) {
    const polls = Number(/not modified (\d+)/.exec(c.poll.summary)?.[1] ?? NaN);
    const what =
      r.world.store.kind === 'sqlite'
        ? `written by the process (${size(c.poll.writeBytes - c.poll.sampledBytes)} of it at exit), start and close included`
        : `written over the cycle (${r.world.store.bytes}), the ${c.api.all.length} API requests beside it included`;
    r.row(
      `bytes written per 304 poll, poll --once (${i + 1})`,
      `${(c.written / polls).toFixed(0)} B`,
      `${size(c.written)} ${what}, over ${polls} polls answered 304; ${TARGET}`,
    );
  }
}

/** Serve's bytes per subscription created through the API (a run of CREATES creates, nothing else). */
export async function createBytes(r: Run): Promise<void> {
  const serve = () => r.serve.writeBytes();
  const before = await r.world.store.written(serve);
  const ids = r.made.ids.length;
  const l = await apiRun(r.url, r.world, { max: CREATES, maxMs: 300_000, mix: 'create' }, r.made);
  await sleep(SETTLE_MS);
  const written = (await r.world.store.written(serve)) - before;
  const created = r.made.ids.length - ids;
  r.row(
    'bytes written per subscription created via the API',
    created > 0 ? `${(written / created).toFixed(0)} B` : 'NONE CREATED',
    `${r.world.store.kind === 'sqlite' ? 'serve wrote' : `the server wrote (${r.world.store.bytes})`} ${size(written)} over ${l.all.length} POST /v1/subscriptions (${created} created, the rest 409) and ${SETTLE_MS / 1000} s after`,
  );
}

/** Makes every feed due now (from this process, so serve's checkpoint of that write is over before counting starts),
 *  wakes serve's poller (nudgePoller), and counts serve's write_bytes (the server's WAL) until its poller has
 *  fetched every feed (answered 304) and recorded them all. */
export async function servePollBytes(r: Run): Promise<void> {
  await makeAllDue(r);
  await sleep(SETTLE_MS);
  await request(`${r.world.origin}/_mark`, { method: 'POST' }).then((x) => x.body.dump());
  const serve = () => r.serve.writeBytes();
  const before = await r.world.store.written(serve);
  const t = performance.now();
  await nudgePoller(r);
  const done = await untilPolled(r, 15 * 60_000);
  const ms = performance.now() - t;
  await sleep(SETTLE_MS);
  const written = (await r.world.store.written(serve)) - before;
  r.row(
    'bytes written per 304 poll, serve polling on its own',
    `${(written / r.feeds).toFixed(0)} B`,
    `${size(written)}${r.world.store.kind === 'sqlite' ? '' : ` (${r.world.store.bytes})`} over ${r.feeds} feeds made due at once${done ? '' : ' (NOT ALL POLLED within 15 min)'} and polled by serve's poller in ${(ms / 1000).toFixed(1)} s (${(r.feeds / (ms / 1000)).toFixed(0)}/s), ${SETTLE_MS / 1000} s after included; ${TARGET}`,
  );
}

/** Makes every feed due now. On PostgreSQL a transaction of serve's that records polls may lock some of the rows this
 *  one statement locks, in another order: the server then aborts one of the two (a deadlock), and this one is tried
 *  again. */
async function makeAllDue(r: Run): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await r.world.store.look(
        (sql) => sql.run('UPDATE feeds SET next_poll_at = ?', [new Date().toISOString()]),
        true,
      );
      return;
    } catch (err) {
      if ((err as { code?: unknown }).code !== '40P01' || attempt === 5) throw err;
      await sleep(500);
    }
  }
}

/** Wakes serve's poller, asleep until its next feed falls due (a day away) or its idle minute ends: on PostgreSQL with
 *  the nudge a node sends the others (NOTIFY feedsub_nudge); on SQLite with a subscription created through the API (a
 *  409, for a pair that exists, does not nudge). Once the runs before have tried every sampled pair, one subscription
 *  they made is deleted so that its pair can be created again. Throws when none could be created. */
async function nudgePoller(r: Run): Promise<void> {
  if (r.world.store.kind === 'postgres') {
    await r.world.store.look((sql) =>
      sql.value('SELECT pg_notify(?, ?)', [NUDGE_CHANNEL, 'poll bench']),
    );
    return;
  }
  const made = r.made.ids.length;
  for (let i = 0; i < 50 && r.made.ids.length === made; i++)
    await apiRun(r.url, r.world, { max: 1, maxMs: 10_000, mix: 'create' }, r.made);
  if (r.made.ids.length > made) return;
  const freed = r.made.ids.pop();
  if (freed === undefined)
    throw new Error('bench-scale: no subscription to create to wake the poller');
  const deleted = await request(`${r.url}/v1/subscriptions/${freed.id}`, {
    method: 'DELETE',
    headers: { authorization: r.world.key },
  });
  await deleted.body.dump();
  r.made.pairs.delete(freed.pair);
  const before = r.made.ids.length;
  await apiRun(r.url, r.world, { max: 1, maxMs: 10_000, mix: 'create' }, r.made);
  if (r.made.ids.length === before)
    throw new Error(
      `bench-scale: the create that wakes the poller was refused (delete answered ${deleted.statusCode})`,
    );
}

/** Waits until the origin saw every feed fetched since the mark and no feed is due any more; whether it came to that. */
async function untilPolled(r: Run, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    await sleep(500);
    const fetched = Number(await (await request(`${r.world.origin}/_fetched`)).body.text());
    if (fetched < r.feeds) continue;
    const due = await r.world.store.look((sql) =>
      sql.value<number>('SELECT count(*) FROM feeds WHERE next_poll_at <= ?', [
        new Date().toISOString(),
      ]),
    );
    if (due === 0) return true;
  }
  return false;
}
