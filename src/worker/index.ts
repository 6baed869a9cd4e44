// Builds the loops and what they share (guarded HTTP agents, parse pool, concurrency limits) from the config.
import type { Agent } from 'undici';
import type { Ctx } from '../context.ts';
import { createLimiter } from '../feed/limiter.ts';
import { createGuardedAgent } from '../net/guard.ts';
import { userAgent } from '../net/user-agent.ts';
import { createParsePool, type ParsePool } from '../feed/parse-pool.ts';
import type { Logger } from '../log.ts';
import { deliverTick, drainDeliveries, type DelivererDeps } from './deliverer.ts';
import { createInFlight } from './in-flight.ts';
import { createLoop, type Loop } from './loop.ts';
import { createMaintenance } from './maintenance.ts';
import { pollTick, type PollerDeps } from './poller.ts';
import { noTelemetry, type Telemetry } from '../telemetry.ts';

export type Workers = {
  poller: Loop;
  deliverer: Loop;
  maintenance: Loop;
  pollerDeps: PollerDeps;
  delivererDeps: DelivererDeps;
  start(): void;
  /** Stops the loops, each awaiting its in-flight tick, then waits for delivery attempts in flight; `timeoutMs` in all. */
  stop(timeoutMs: number): Promise<void>;
  /** Releases agents and worker threads; after stop(). */
  close(): Promise<void>;
};

/** Creates (but does not start) the poller, deliverer and maintenance loops. */
export function createWorkers(
  ctx: Ctx,
  logger: Logger,
  telemetry: Telemetry = noTelemetry,
): Workers {
  const { feedAgent, hookAgent } = createAgents(ctx);
  const pool = createParsePool({ sanitizeHtml: ctx.config.delivery.sanitize_html });
  const pollerDeps = createPollerDeps(ctx, feedAgent, pool, logger, telemetry);
  const poller = createLoop('poller', async () => (await pollTick(ctx, pollerDeps)).nextDelayMs, {
    idleMs: 60_000,
    logger,
  });
  const { deliverer, delivererDeps } = createDeliverer(ctx, hookAgent, logger, telemetry);
  const maintenance = createMaintenance(ctx, logger, telemetry);
  return {
    poller,
    deliverer,
    maintenance,
    pollerDeps,
    delivererDeps,
    start() {
      poller.start();
      deliverer.start();
      maintenance.start();
    },
    async stop(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      await Promise.all([
        poller.stop(timeoutMs),
        deliverer.stop(timeoutMs),
        maintenance.stop(timeoutMs),
      ]);
      if (!(await drainDeliveries(delivererDeps.inFlight, Math.max(0, deadline - Date.now())))) {
        logger.warn(
          'deliver: stopped with attempts in flight; they are retried after their lease ends',
          { in_flight: delivererDeps.inFlight.total },
        );
      }
    },
    async close() {
      await Promise.all([feedAgent.close(), hookAgent.close(), pool.close()]);
    },
  };
}

/** The guarded agents for feed fetches and for webhook attempts. */
function createAgents(ctx: Ctx): { feedAgent: Agent; hookAgent: Agent } {
  const { poll, delivery, network } = ctx.config;
  // Connections per origin: as many as requests can be in flight at once, so none waits for one; an unbounded pool kept
  // growing under load and cost ~8 µs of every request (make bench).
  const feedAgent = createGuardedAgent({
    allowPrivate: network.allow_private,
    connectTimeoutMs: poll.connect_timeout_seconds * 1000,
    connections: poll.concurrency,
  });
  const hookAgent = createGuardedAgent({
    allowPrivate: network.allow_private,
    connectTimeoutMs: Math.min(10, delivery.timeout_seconds) * 1000,
    connections: delivery.concurrency,
  });
  return { feedAgent, hookAgent };
}

/** The poller's deps: fetch settings with the parse pool, the global and per-host limits. */
function createPollerDeps(
  ctx: Ctx,
  agent: Agent,
  pool: ParsePool,
  logger: Logger,
  telemetry: Telemetry,
): PollerDeps {
  const { poll } = ctx.config;
  return {
    refresh: {
      agent,
      parse: (text, opts) => pool.parse(text, opts),
      userAgent: userAgent(ctx.config),
      maxBodyBytes: poll.max_body_bytes,
      connectTimeoutMs: poll.connect_timeout_seconds * 1000,
      totalTimeoutMs: poll.timeout_seconds * 1000,
    },
    limiter: createLimiter({ global: poll.concurrency, perHost: poll.per_host_concurrency }),
    logger: logger.child({ loop: 'poller' }),
    telemetry,
  };
}

/** The deliverer loop and its deps. Ticks start attempts without awaiting them; while the loop runs, finished attempts
 *  refill their slots (DelivererDeps.refill). */
function createDeliverer(
  ctx: Ctx,
  agent: Agent,
  logger: Logger,
  telemetry: Telemetry,
): { deliverer: Loop; delivererDeps: DelivererDeps } {
  let delivering = false;
  const delivererDeps: DelivererDeps = {
    agent,
    userAgent: userAgent(ctx.config),
    telemetry,
    logger: logger.child({ loop: 'deliverer' }),
    inFlight: createInFlight(),
    refill: { isRunning: () => delivering, idle: () => deliverer.nudge() },
  };
  const loop = createLoop(
    'deliverer',
    async () => (await deliverTick(ctx, delivererDeps, { wait: false })).nextDelayMs,
    { idleMs: 60_000, logger },
  );
  const deliverer: Loop = {
    ...loop,
    start() {
      delivering = true;
      loop.start();
    },
    stop(timeoutMs) {
      delivering = false;
      return loop.stop(timeoutMs);
    },
  };
  return { deliverer, delivererDeps };
}
