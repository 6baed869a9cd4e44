// Builds the loops and what they share (guarded HTTP agents, parse pool, concurrency limits) from the config.
import type { Ctx } from '../context.ts';
import { createLimiter } from '../feed/limiter.ts';
import { createGuardedAgent } from '../net/guard.ts';
import { userAgent } from '../net/user-agent.ts';
import { createParsePool } from '../feed/parse-pool.ts';
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
  const pool = createParsePool();
  const pollerDeps: PollerDeps = {
    refresh: {
      agent: feedAgent,
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
  let delivering = false;
  const delivererDeps: DelivererDeps = {
    agent: hookAgent,
    userAgent: userAgent(ctx.config),
    telemetry,
    logger: logger.child({ loop: 'deliverer' }),
    inFlight: createInFlight(),
    refill: { isRunning: () => delivering, idle: () => deliverer.nudge() },
  };
  const poller = createLoop('poller', async () => (await pollTick(ctx, pollerDeps)).nextDelayMs, {
    idleMs: 60_000,
    logger,
  });
  // Ticks start attempts without awaiting them; finished attempts refill their slots (DelivererDeps.refill).
  const delivererLoop = createLoop(
    'deliverer',
    async () => (await deliverTick(ctx, delivererDeps, { wait: false })).nextDelayMs,
    { idleMs: 60_000, logger },
  );
  const deliverer: Loop = {
    ...delivererLoop,
    start() {
      delivering = true;
      delivererLoop.start();
    },
    stop(timeoutMs) {
      delivering = false;
      return delivererLoop.stop(timeoutMs);
    },
  };
  const maintenance = createMaintenance(ctx, logger);
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
