// Shared set-up for the deliverer tests: a world with a key, a receiver, deliverer deps, and events queued by the store.
import type { Agent } from 'undici';
import { createGuardedAgent } from '../../../src/net/guard.ts';
import { newId } from '../../../src/ids.ts';
import { silentLogger } from '../../../src/log.ts';
import { listAttempts } from '../../../src/store/attempts.ts';
import {
  applicationsWithDueEvents,
  leaseEvents,
  nextEventDueAt,
  walkDueEvents,
  type DueEvent,
} from '../../../src/store/events-claim.ts';
import { getEvent, insertEvent, type EventWithBody } from '../../../src/store/events.ts';
import { allocateSequences, getSubscription } from '../../../src/store/subscriptions.ts';
import { buildEntryEvents } from '../../../src/webhook/event.ts';
import {
  createDelivererDeps,
  deliverTick,
  type DelivererDeps,
} from '../../../src/worker/deliver/deliverer.ts';
import { noTelemetry } from '../../../src/telemetry.ts';
import { startReceiver, type Receiver } from '../../support/servers.ts';
import { makeWorld, type World } from '../../support/world.ts';

export type DeliveryWorld = {
  w: World;
  key: string;
  applicationId: string;
  receiver: Receiver;
  deps: DelivererDeps;
  agent: Agent;
  /** A new endpoint (at the receiver unless `url` is given): its id and secret. */
  endpoint(url?: string): Promise<{ id: string; secret: string }>;
  /** A new subscription of the endpoint to a made-up feed URL. */
  subscription(endpointId: string): Promise<string>;
  /** Queues `n` one-entry events for the subscription, as the poller would (next sequences); returns their ids in order. */
  queue(subscriptionId: string, n: number): Promise<string[]>;
  /** queue() for a subscription of another application. */
  queueFor(applicationId: string, subscriptionId: string, n: number): Promise<string[]>;
  /** Leases up to `limit` due events for `leaseMs` as another process would, without sending them; returns how many. */
  leaseElsewhere(limit: number, leaseMs: number): Promise<number>;
  /** One tick that waits for its attempts. */
  tick(): ReturnType<typeof deliverTick>;
  /** Moves the clock to the next due time (undefined when nothing is due); returns it. */
  toNextDue(): Promise<string | undefined>;
  event(id: string): Promise<EventWithBody>;
  /** An event of another application. */
  eventOf(applicationId: string, id: string): Promise<EventWithBody>;
  attempts(id: string): ReturnType<typeof listAttempts>;
  close(): Promise<void>;
};

/** Builds a delivery world; `patch` overrides config sections. Jitter is neutral (random = 0.5). */
export async function deliveryWorld(
  patch: Parameters<typeof makeWorld>[0] = {},
): Promise<DeliveryWorld> {
  const w = makeWorld(patch);
  const { key, applicationId } = await w.key();
  const receiver = await startReceiver();
  const agent = createGuardedAgent({ allowPrivate: true });
  const deps: DelivererDeps = createDelivererDeps(w.ctx, {
    agent,
    logger: silentLogger,
    telemetry: noTelemetry,
    userAgent: 'feedsub-test',
    random: () => 0.5,
  });
  let feeds = 0;
  const queueFor = async (app: string, subscriptionId: string, n: number): Promise<string[]> => {
    const now = w.clock.now();
    const sub = (await getSubscription(w.ctx.db, app, subscriptionId))!;
    const ids: string[] = [];
    await w.ctx.store.write(async (db) => {
      for (let i = 0; i < n; i++) {
        const first = await allocateSequences(db, sub.id, 1);
        const entry = {
          id: `key-${first}`,
          guid: `guid-${first}`,
          url: `https://feeds.example/e/${first}`,
          title: `Entry ${first}`,
          summary: null,
          summary_html: null,
          content_html: null,
          content_text: null,
          image: null,
          authors: [],
          categories: [],
          enclosures: [],
          published_at: now.toISOString(),
          updated_at: null,
          key_source: { title: null, body: null },
        };
        const [built] = buildEntryEvents({
          subscription: { id: sub.id, url: sub.url, metadata: sub.metadata },
          feed: { id: sub.feed_id, url: sub.url, title: 'Feed', site_url: null },
          entries: [entry],
          now,
          firstSequence: first,
          newId: () => newId(now),
        });
        await insertEvent(
          db,
          {
            id: built!.id,
            application_id: app,
            endpoint_id: sub.endpoint_id,
            subscription_id: sub.id,
            type: 'subscription.entries',
            sequence: built!.sequence,
            body: built!.body,
          },
          now,
        );
        ids.push(built!.id);
      }
    });
    return ids;
  };
  return {
    w,
    key,
    applicationId,
    receiver,
    deps,
    agent,
    async endpoint(url = receiver.url + '/hook') {
      const res = await w.call('POST', '/v1/endpoints', { key, body: { title: 'Receiver', url } });
      if (res.status !== 201) throw new Error(`endpoint: ${res.text}`);
      return { id: res.body.id as string, secret: res.body.secret as string };
    },
    async subscription(endpointId) {
      const res = await w.call('POST', '/v1/subscriptions', {
        key,
        body: {
          endpoint: endpointId,
          url: `https://feeds.example/${++feeds}.xml`,
          metadata: { n: feeds },
        },
      });
      if (res.status !== 201) throw new Error(`subscription: ${res.text}`);
      return res.body.id as string;
    },
    queue: (subscriptionId, n) => queueFor(applicationId, subscriptionId, n),
    queueFor,
    leaseElsewhere(limit, leaseMs) {
      const now = w.clock.now();
      return w.ctx.store.write(async (db) => {
        const due: DueEvent[] = [];
        for (const app of await applicationsWithDueEvents(db, now))
          due.push(
            ...(
              await walkDueEvents(db, app, now, {
                full: [],
                limit,
                maxRows: 1000,
                take: () => true,
              })
            ).taken,
          );
        return (await leaseEvents(db, due.slice(0, limit), now, leaseMs)).length;
      });
    },
    tick: () => deliverTick(w.ctx, deps),
    async toNextDue() {
      const due = await nextEventDueAt(w.ctx.db);
      if (due !== undefined && Date.parse(due) > w.clock.now().getTime()) w.clock.set(due);
      return due;
    },
    event: async (id) => (await getEvent(w.ctx.db, applicationId, id))!,
    eventOf: async (app, id) => (await getEvent(w.ctx.db, app, id))!,
    attempts: (id) => listAttempts(w.ctx.db, id),
    async close() {
      await agent.close();
      await receiver.close();
      await w.close();
    },
  };
}
