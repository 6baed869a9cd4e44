// The nodes on the database as the dashboard shows them: the live ones, read on each view (a few rows).
import type { Ctx } from '../context.ts';
import { liveNodes, type NodeRow } from '../store/nodes.ts';

/** The live nodes (seen within cluster.node_timeout_seconds), oldest first. */
export function listLiveNodes(ctx: Ctx): Promise<NodeRow[]> {
  const since = ctx.clock.now().getTime() - ctx.config.cluster.node_timeout_seconds * 1000;
  return liveNodes(ctx.db, new Date(since));
}
