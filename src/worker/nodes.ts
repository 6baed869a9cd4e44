// The node heartbeat: this serve process registers itself in the nodes table, renews its row and what it holds every
// HEARTBEAT_MS on the database's clock, reads which nodes are live, and leaves at stop. What it reads sizes this node's
// share of every cap that holds for all nodes together (shareOf), and /healthz, /metrics and the dashboard show it.
import { hostname } from 'node:os';
import type { Ctx, NodeShare } from '../context.ts';
import type { Logger } from '../log.ts';
import { beat, liveNodes, pruneNodes, removeNode, type NodeRow } from '../store/nodes.ts';
import { FEEDSUB_VERSION } from '../version.ts';
import { createLoop, type Loop } from './loop.ts';

/** How often a node renews its row. */
export const HEARTBEAT_MS = 5000;
/** A node unseen for this long is no longer live: three heartbeats missed. */
export const LIVE_MS = 3 * HEARTBEAT_MS;
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

/** The heartbeat of the node `node` (ctx.node's id), named `name` (cluster.node_name, else host:pid). */
export function createHeartbeat(
  ctx: Ctx,
  opts: { name?: string; holds: () => Holds; logger: Logger },
): NodeHeartbeat {
  const id = ctx.node.id;
  const name = opts.name || `${hostname()}:${process.pid}`;
  const startedAt = ctx.clock.now().toISOString();
  let live: readonly NodeRow[] = [];
  const node: NodeShare = { id, share: (cap) => shareOf(cap, live, id) };
  const once = async () => {
    const now = ctx.clock.now();
    live = await ctx.store.write(async (db) => {
      await beat(db, {
        id,
        name,
        version: FEEDSUB_VERSION,
        started_at: startedAt,
        seen_at: now.toISOString(),
        ...opts.holds(),
      });
      await pruneNodes(db, new Date(now.getTime() - FORGET_MS));
      return liveNodes(db, new Date(now.getTime() - LIVE_MS));
    });
  };
  const loop = createLoop(
    'heartbeat',
    async () => {
      await once();
      return HEARTBEAT_MS;
    },
    { idleMs: HEARTBEAT_MS, logger: opts.logger, backoff: { firstMs: 1000, maxMs: HEARTBEAT_MS } },
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

/** This node's part of `cap` among the `live` nodes (oldest first): `cap` split as evenly as whole numbers allow, the
 *  older nodes taking the remainder, so the parts add up to `cap` exactly (a node may get 0 of a cap smaller than the
 *  number of nodes). Alone, or before its first heartbeat read the others, a node has the whole cap. */
export function shareOf(cap: number, live: readonly NodeRow[], id: string): number {
  const rank = live.findIndex((n) => n.id === id);
  if (!Number.isFinite(cap) || rank < 0 || live.length <= 1) return cap;
  const n = live.length;
  return Math.floor(cap / n) + (rank < cap % n ? 1 : 0);
}
