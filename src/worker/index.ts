// Builds the loops and what they share (guarded HTTP agents, host lookups, parse pool, work pools) from the config.
import type { Agent } from 'undici';
import type { Ctx } from '../context.ts';
import { createParsePool, type ParsePool } from '../feed/parse/pool.ts';
import type { Logger } from '../log.ts';
import { createGuardedAgent } from '../net/guard.ts';
import { createResolver, type Resolver } from '../net/resolver.ts';
import { userAgent } from '../net/user-agent.ts';
import { noTelemetry, type Telemetry } from '../telemetry.ts';
import {
  createDelivererDeps,
  deliverTick,
  drainDeliveries,
  type DelivererDeps,
} from './deliver/deliverer.ts';
import { createLoop, type Loop } from './loop.ts';
import { createMaintenance } from './maintenance/maintenance.ts';
import { createPollerDeps, pollFill, type PollerDeps } from './poll/poller.ts';
import { createWebSubRequests, WEBSUB_TICK_MS, type WebSubRequests } from './websub/requests.ts';
import type { Pool } from './pool/core.ts';

export type Workers = {
  poller: Loop;
  deliverer: Loop;
  maintenance: Loop;
  /** WebSub (un)subscription requests to hubs. */
  websub: Loop;
  /** The WebSub loop's requests in flight (tests start ticks and await them through this). */
  webSubRequests: WebSubRequests;
  /** The threads that read feed bodies (decode, parse, key), shared with the HTTP layer for pushed bodies. */
  parsePool: ParsePool;
  pollerDeps: PollerDeps;
  delivererDeps: DelivererDeps;
  start(): void;
  /** Stops the loops, each awaiting its in-flight tick, then waits for the polls, delivery attempts and WebSub requests
   *  in flight; `timeoutMs` in all. */
  stop(timeoutMs: number): Promise<void>;
  /** Releases agents and worker threads; after stop(). */
  close(): Promise<void>;
};

/** Creates (but does not start) the poller, deliverer, maintenance and WebSub loops. */
export function createWorkers(
  ctx: Ctx,
  logger: Logger,
  telemetry: Telemetry = noTelemetry,
): Workers {
  const { poll } = ctx.config;
  const resolver = createResolver({ timeoutMs: poll.connect_timeout_seconds * 1000 });
  const { feedAgent, hookAgent } = createAgents(ctx, resolver);
  const parsePool = createParsePool({
    size: poll.parse_workers || undefined,
    heapMb: poll.parse_heap_mb,
    sanitizeHtml: ctx.config.delivery.sanitize_html,
  });
  const { poller, pollerDeps } = createPoller(ctx, {
    feedAgent,
    parsePool,
    resolver,
    logger,
    telemetry,
  });
  const { deliverer, delivererDeps } = createDeliverer(ctx, hookAgent, logger, telemetry);
  const maintenance = createMaintenance(ctx, logger, telemetry);
  const { websub, webSubRequests } = createWebSub(ctx, feedAgent, logger);
  const loops = [poller, deliverer, maintenance, websub];
  return {
    poller,
    deliverer,
    maintenance,
    websub,
    webSubRequests,
    parsePool,
    pollerDeps,
    delivererDeps,
    start() {
      for (const loop of loops) loop.start();
    },
    async stop(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      await Promise.all(loops.map((loop) => loop.stop(timeoutMs)));
      const left = () => Math.max(0, deadline - Date.now());
      const [polled, delivered] = await Promise.all([
        pollerDeps.pool.drain(left()),
        drainDeliveries(delivererDeps, left()),
        settledOrLate(webSubRequests.settled(), left()),
      ]);
      if (!polled)
        logger.warn(
          'poll: stopped with polls in flight; their feeds are polled at the next start',
          {
            in_flight: pollerDeps.pool.busy,
          },
        );
      if (!delivered)
        logger.warn(
          'deliver: stopped with attempts in flight; they are retried after their lease ends',
          { in_flight: delivererDeps.pool.busy },
        );
    },
    async close() {
      await Promise.all([feedAgent.close(), hookAgent.close(), parsePool.close()]);
    },
  };
}

/** The guarded agents for feed fetches (connecting to the addresses the poller's caps counted) and webhook attempts. */
function createAgents(ctx: Ctx, resolver: Resolver): { feedAgent: Agent; hookAgent: Agent } {
  const { poll, delivery, network } = ctx.config;
  // Connections per origin: as many as requests can be in flight at once, so none waits for one, and no more: an
  // unbounded pool grows under load, and every request pays for its size.
  const feedAgent = createGuardedAgent({
    allowPrivate: network.allow_private,
    connectTimeoutMs: poll.connect_timeout_seconds * 1000,
    connections: poll.concurrency,
    resolver,
  });
  const hookAgent = createGuardedAgent({
    allowPrivate: network.allow_private,
    connectTimeoutMs: Math.min(10, delivery.timeout_seconds) * 1000,
    connections: delivery.concurrency,
  });
  return { feedAgent, hookAgent };
}

/** The poller loop and its deps: the loop fills the pool; each commit of finished polls claims for the slots they free,
 *  and a finished host lookup or a commit that found nothing due nudges the loop. */
function createPoller(
  ctx: Ctx,
  shared: {
    feedAgent: Agent;
    parsePool: ParsePool;
    resolver: Resolver;
    logger: Logger;
    telemetry: Telemetry;
  },
): { poller: Loop; pollerDeps: PollerDeps } {
  const { poll } = ctx.config;
  const pollerDeps = createPollerDeps(
    ctx,
    {
      refresh: {
        agent: shared.feedAgent,
        read: (doc, deadline) => shared.parsePool.read(doc, deadline),
        userAgent: userAgent(ctx.config),
        maxBodyBytes: poll.max_body_bytes,
        connectTimeoutMs: poll.connect_timeout_seconds * 1000,
        totalTimeoutMs: poll.timeout_seconds * 1000,
      },
      resolver: shared.resolver,
      logger: shared.logger.child({ loop: 'poller' }),
      telemetry: shared.telemetry,
    },
    () => poller.nudge(),
  );
  const poller = poolLoop(
    'poller',
    pollerDeps.pool,
    async () => pollFill(ctx, pollerDeps),
    shared.logger,
  );
  return { poller, pollerDeps };
}

/** The deliverer loop and its deps. Ticks start attempts without awaiting them; while the loop runs, each commit of
 *  finished attempts claims for the slots they free, and the loop is nudged only when slots are free and nothing was
 *  due. */
function createDeliverer(
  ctx: Ctx,
  agent: Agent,
  logger: Logger,
  telemetry: Telemetry,
): { deliverer: Loop; delivererDeps: DelivererDeps } {
  const delivererDeps = createDelivererDeps(
    ctx,
    {
      agent,
      userAgent: userAgent(ctx.config),
      telemetry,
      logger: logger.child({ loop: 'deliverer' }),
    },
    () => deliverer.nudge(),
  );
  const deliverer = poolLoop(
    'deliverer',
    delivererDeps.pool,
    async () => (await deliverTick(ctx, delivererDeps, { wait: false })).nextDelayMs,
    logger,
  );
  return { deliverer, delivererDeps };
}

/** A loop that fills `pool`: its commits refill between start() and stop(). */
function poolLoop<I, R, V>(
  name: string,
  pool: Pool<I, R, V>,
  tick: () => Promise<number>,
  logger: Logger,
): Loop {
  const loop = createLoop(name, tick, { idleMs: 60_000, logger });
  return {
    ...loop,
    start() {
      pool.start();
      loop.start();
    },
    stop(timeoutMs) {
      pool.stop();
      return loop.stop(timeoutMs);
    },
  };
}

/** The WebSub loop: requests to hubs through the feed agent (the same guard and lookups). */
function createWebSub(
  ctx: Ctx,
  agent: Agent,
  logger: Logger,
): { websub: Loop; webSubRequests: WebSubRequests } {
  const webSubRequests = createWebSubRequests(ctx, {
    agent,
    userAgent: userAgent(ctx.config),
    logger: logger.child({ loop: 'websub' }),
    wake: () => websub.nudge(),
  });
  const websub: Loop = createLoop('websub', () => webSubRequests.tick(), {
    idleMs: WEBSUB_TICK_MS,
    logger,
  });
  return { websub, webSubRequests };
}

/** Resolves when `p` settles or after `ms`, whichever comes first. */
async function settledOrLate(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
