// Event leases: a claim reads due events and leases them in a second statement; an event another node leased, sent
// and recorded in between is left out, delivered or waiting for its retry, so no event is sent twice.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { leaseEvents, walkDueEvents, type DueEvent } from '../../src/store/events-claim.ts';
import { recordAttempt } from '../../src/store/attempts.ts';
import { populate } from './exercise.ts';
import { makeWorld } from '../support/world.ts';

describe('event leases', async () => {
  const w = makeWorld();
  after(() => w.close());
  const db = w.ctx.db;
  const now = new Date('2026-01-01T00:00:00.000Z');
  const t = now.toISOString();
  const fx = await populate(db, now, 1, 3);
  /** Every due event of the application, as a claim reads them before it leases. */
  const due = async (): Promise<DueEvent[]> =>
    (
      await walkDueEvents(db, fx.app, now, {
        full: [],
        limit: 10,
        maxRows: 100,
        take: () => true,
      })
    ).taken;
  const attempt = (event: string, status: 'delivered' | 'failed', nextAttemptAt: string | null) =>
    recordAttempt(
      db,
      {
        event_id: event,
        endpoint_id: fx.endpoint,
        started_at: t,
        status_code: status === 'delivered' ? 204 : 500,
        duration_ms: 1,
        error: null,
        response_body: null,
      },
      { status, nextAttemptAt },
      now,
    );

  it('leaves out an event delivered, or failed and waiting for its retry, since the claim read it', async () => {
    const read = await due();
    assert.equal(read.length, 3);
    // Another node leases the first two, sends them and records its attempts: the leases end.
    const [delivered, failed, free] = read;
    assert.equal((await leaseEvents(db, [delivered!, failed!], now, 60_000, 'other')).length, 2);
    await attempt(delivered!.id, 'delivered', null);
    await attempt(failed!.id, 'failed', new Date(now.getTime() + 3_600_000).toISOString());
    const won = await leaseEvents(db, read, now, 60_000, 'late');
    assert.deepEqual(
      won.map((e) => e.id),
      [free!.id],
      'only the event still due is leased',
    );
  });
});
