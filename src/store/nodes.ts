// SQL for nodes and node_roles: the serve processes on the database, renewed by each one's heartbeat, and the work one
// node at a time does, held by a lease on the database's clock.
import type { Sql } from '../db/engine.ts';

/** A node as its heartbeat records it. */
export type NodeRow = {
  id: string;
  name: string;
  version: string;
  started_at: string;
  seen_at: string;
  /** Feeds it was fetching at its last heartbeat. */
  polls: number;
  /** Events it was attempting at its last heartbeat. */
  deliveries: number;
};

/** Records the node's heartbeat: registers it the first time, then renews seen_at and what it holds. */
export async function beat(db: Sql, node: NodeRow): Promise<void> {
  await db.run(
    `INSERT INTO nodes (id, name, version, started_at, seen_at, polls, deliveries)
     VALUES (@id, @name, @version, @started_at, @seen_at, @polls, @deliveries)
     ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at, polls = excluded.polls,
       deliveries = excluded.deliveries`,
    node,
  );
}

/** Renews, until `until`, the leases `nodeId` holds that have not lapsed at `now`: its polls' and its attempts'. A
 *  lapsed one may be another node's by now, and stays as it is. */
export async function renewLeases(db: Sql, nodeId: string, now: Date, until: Date): Promise<void> {
  const params = { node: nodeId, now: now.toISOString(), until: until.toISOString() };
  await db.run(
    'UPDATE feed_leases SET until = @until WHERE node_id = @node AND until > @now',
    params,
  );
  await db.run(
    'UPDATE events SET lease_until = @until WHERE lease_node = @node AND lease_until > @now',
    params,
  );
}

/** The nodes seen since `since`, oldest first. */
export async function liveNodes(db: Sql, since: Date): Promise<NodeRow[]> {
  return db.all<NodeRow>(
    `SELECT id, name, version, started_at, seen_at, polls, deliveries FROM nodes
      WHERE seen_at >= ? ORDER BY started_at, id`,
    [since.toISOString()],
  );
}

/** Removes a node's row (at its stop) and lets go of the roles it holds. */
export async function removeNode(db: Sql, id: string): Promise<void> {
  await db.run('DELETE FROM node_roles WHERE node_id = ?', [id]);
  await db.run('DELETE FROM nodes WHERE id = ?', [id]);
}

/** Removes the rows of nodes unseen since `before` (processes that ended without removing themselves). */
export async function pruneNodes(db: Sql, before: Date): Promise<number> {
  return db.run('DELETE FROM nodes WHERE seen_at < ?', [before.toISOString()]);
}

/** Takes `role` for `nodeId` until `until`, or renews it: true when the node holds it now, false while another node's
 *  hold has not lapsed at `now`. One statement, so of two nodes asking at once one gets it. */
export async function holdRole(
  db: Sql,
  role: string,
  nodeId: string,
  now: Date,
  until: Date,
): Promise<boolean> {
  const held = await db.value(
    `INSERT INTO node_roles (role, node_id, until) VALUES (@role, @node, @until)
     ON CONFLICT (role) DO UPDATE SET node_id = excluded.node_id, until = excluded.until
       WHERE node_roles.node_id = excluded.node_id OR node_roles.until <= @now
     RETURNING node_id`,
    { role, node: nodeId, until: until.toISOString(), now: now.toISOString() },
  );
  return held === nodeId;
}
