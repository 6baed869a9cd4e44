// Nudges between nodes on one PostgreSQL database (src/db/nudges.ts): a nudge one node sends wakes the others' loop
// of that kind, not its own; a burst is one nudge per spacing; a listener whose connection is cut listens again and
// wakes every loop once for what it may have missed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { NUDGE_SPACING_MS, startNudges, type NudgeKind, type Nudges } from '../../src/db/nudges.ts';
import { silentLogger } from '../../src/log.ts';
import { until } from '../support/deadline.ts';
import { sharedPostgres } from '../support/postgres.ts';

describe('nudges between nodes', () => {
  let url: string;
  let admin: pg.Client;
  const open: Nudges[] = [];
  before(async () => {
    url = await (await sharedPostgres()).newDatabase();
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });
  after(async () => {
    for (const n of open) await n.close();
    await admin?.end();
  });

  /** A node `node` listening on the database; what it received, in order. */
  const node = async (name: string) => {
    const received: NudgeKind[] = [];
    const nudges = await startNudges({
      url,
      node: name,
      notify: (channel, payload) => admin.query('SELECT pg_notify($1, $2)', [channel, payload]),
      receive: (kind) => received.push(kind),
      logger: silentLogger,
    });
    open.push(nudges);
    return { nudges, received };
  };

  it("wakes the other nodes' loop of the kind sent, and not the sender's", async () => {
    const [a, b, c] = [await node('a'), await node('b'), await node('c')];
    a.nudges.send('poll');
    await until(() => b.received.length > 0 && c.received.length > 0, 2000, 'b and c nudged');
    assert.deepEqual([b.received, c.received], [['poll'], ['poll']]);
    b.nudges.send('deliver');
    await until(() => a.received.length > 0, 2000, 'a nudged');
    await sleep(100);
    assert.deepEqual(a.received, ['deliver'], 'a never hears its own');
    assert.deepEqual(b.received, ['poll'], 'b never hears its own');
  });

  it('sends a burst of one kind as one nudge per spacing, the last one included', async () => {
    const [a, b] = [await node('burst-a'), await node('burst-b')];
    const started = performance.now();
    for (let i = 0; i < 100; i++) a.nudges.send('backfill');
    const burstMs = performance.now() - started;
    await until(() => b.received.length >= 2, 2000, 'the first and the trailing nudge');
    await sleep(NUDGE_SPACING_MS * 3);
    assert.ok(burstMs < NUDGE_SPACING_MS, `the burst took ${burstMs} ms`);
    assert.deepEqual(b.received, ['backfill', 'backfill']);
  });

  it('listens again after its connection is cut, and wakes every loop once for what it missed', async () => {
    const [a, b] = [await node('cut-a'), await node('cut-b')];
    const cut = await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = 'feedsub (nudges)' AND pid <> pg_backend_pid()`,
    );
    assert.ok(cut.rowCount! >= 2);
    await until(() => b.received.length >= 3, 3000, 'b listening again');
    assert.deepEqual([...b.received].sort(), ['backfill', 'deliver', 'poll']);
    b.received.length = 0;
    await until(() => a.received.length >= 3, 3000, 'a listening again');
    a.nudges.send('poll');
    await until(() => b.received.length > 0, 2000, 'b nudged after the cut');
    assert.deepEqual(b.received, ['poll']);
  });
});
