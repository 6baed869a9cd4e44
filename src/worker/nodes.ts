// The node heartbeat: this serve process registers itself in the nodes table and, three times per
// cluster.node_timeout_seconds, renews its row, what it holds and the leases of its work on the database's clock, and
// reads which nodes are live; it leaves at stop. Its leases last the node timeout from each renewal, so the work of a
// node that dies is claimed by the others that long after its last heartbeat (a node that sees another go wakes its
// loops for that work). What it reads sizes this node's share of every cap that holds for all nodes together
// (shareOf), and /healthz and /metrics show it.
import { hostname } from 'node:os';
import type { Ctx, NodeShare } from '../context.ts';
import type { Logger } from '../log.ts';
import {
  beat,
  liveNodes,
  pruneNodes,
  removeNode,
  renewLeases,
  type NodeRow,
} from '../store/nodes.ts';
import { FEEDSUB_VERSION } from '../version.ts';
import { createLoop, type Loop } from './loop.ts';

/** A node's heartbeat comes this many times per node timeout: one missed beat never counts it gone. */
export const BEATS_PER_TIMEOUT = 3;
/** The row of a node unseen for this long is removed (a process that ended without removing it). */
const FORGET_MS = 24 * 3600_000;

/** What a node holds at a heartbeat. */
export type Holds = { polls: number; deliveries: number };

export type NodeHeartbeat = {
  /** This node, with its share of the caps as the last heartbeat saw the live nodes. */
  node: NodeShare;
  /** The live nodes as the last heartbeat read them, oldest first (this one included once it has beaten). */
  live(): readonly NodeRow[];
  /** Beats once (the first beat, before the loops start, so that /healthz shows this node at once). */
  beat(): Promise<void>;
  loop: Loop;
  /** Removes this node's row and lets go of its roles (at stop: the others' shares grow at their next heartbeat). */
  leave(): Promise<void>;
};

/** The heartbeat of the node `node` (ctx.node's id), named `name` (cluster.node_name, else host:pid); `gone` is called
 *  when a node it saw live is not any more (its leases have lapsed: its work can be claimed). */
export function createHeartbeat(
  ctx: Ctx,
  opts: { name?: string; holds: () => Holds; gone?: () => void; logger: Logger },
): NodeHeartbeat {
  const id = ctx.node.id;
  const name = opts.name || `${hostname()}:${process.pid}`;
  const startedAt = ctx.clock.now().toISOString();
  const timeoutMs = ctx.config.cluster.node_timeout_seconds * 1000;
  const everyMs = Math.floor(timeoutMs / BEATS_PER_TIMEOUT);
  let live: readonly NodeRow[] = [];
  const node: NodeShare = { id, share: (cap) => shareOf(cap, live, id), leaseMs: timeoutMs };
  const once = async () => {
    const now = ctx.clock.now();
    const seen = new Set(live.map((n) => n.id));
    live = await ctx.store.write(async (db) => {
      await renewLeases(db, id, now, new Date(now.getTime() + timeoutMs));
      await beat(db, {
        id,
        name,
        version: FEEDSUB_VERSION,
        started_at: startedAt,
        seen_at: now.toISOString(),
        ...opts.holds(),
      });
      await pruneNodes(db, new Date(now.getTime() - FORGET_MS));
      return liveNodes(db, new Date(now.getTime() - timeoutMs));
    });
    for (const n of live) seen.delete(n.id);
    if (seen.size > 0) opts.gone?.();
  };
  const loop = createLoop(
    'heartbeat',
    async () => {
      await once();
      return everyMs;
    },
    { idleMs: everyMs, logger: opts.logger, backoff: { firstMs: 1000, maxMs: everyMs } },
  );
  return {
    node,
    live: () => live,
    beat: once,
    loop,
    async leave() {
      await ctx.store.write((db) => removeNode(db, id));
      live = live.filter((n) => n.id !== id);
    },
  };
}

/** How long a claim leases work, and for which node: a node's lease lasts until its heartbeat renews it, so that it
 *  lapses soon after the node dies; a process that is not a node (no heartbeat) leases for `deadlineMs`, the work's
 *  deadline and a margin. */
export function leaseOf(ctx: Ctx, deadlineMs: number): [ms: number, node: string | null] {
  return ctx.node.leaseMs === undefined ? [deadlineMs, null] : [ctx.node.leaseMs, ctx.node.id];
}

/** This node's part of `cap` among the `live` nodes (oldest first): `cap` split as evenly as whole numbers allow, the
 *  older nodes taking the remainder, so the parts add up to `cap` exactly (a node may get 0 of a cap smaller than the
 *  number of nodes). Alone, or before its first heartbeat read the others, a node has the whole cap. */
export function shareOf(cap: number, live: readonly NodeRow[], id: string): number {
  const rank = live.findIndex((n) => n.id === id);
  if (!Number.isFinite(cap) || rank < 0 || live.length <= 1) return cap;
  const n = live.length;
  return Math.floor(cap / n) + (rank < cap % n ? 1 : 0);
}
