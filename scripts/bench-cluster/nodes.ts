// make bench-cluster, the nodes: N `feedsub serve` processes on one PostgreSQL database (bench-scale's child processes,
// each told its port, name and data directory through FEEDSUB_* variables over the shared config file), what each has
// done from its /metrics, and the CPU time of a node and of the whole PostgreSQL server from /proc.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { freePort } from '../../test/support/daemon.ts';
import { startServe, withDeadline, type Child } from '../bench-scale/processes.ts';

/** One running node. */
export type Node = { name: string; url: string; id: string; process: Child };

/** What a node counted since it started (/metrics): feeds it fetched, whatever the outcome, and delivery attempts. */
export type Counts = { polls: number; attempts: number };

/** Jiffies per second of /proc/<pid>/stat (USER_HZ, 100 on every Linux this runs on). */
const USER_HZ = 100;

/** Starts `count` nodes one after another on the config `configFile` (its database URL), each with a data directory
 *  of its own under `dir`, and resolves once every one lists `count` live nodes in /healthz (within 60 s). On failure
 *  it stops the nodes it started. */
export async function startNodes(configFile: string, dir: string, count: number): Promise<Node[]> {
  const nodes: Node[] = [];
  try {
    for (let i = 1; i <= count; i++) {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const name = `node-${i}`;
      const process = await startServe(configFile, url, {
        FEEDSUB_SERVER_PORT: String(port),
        FEEDSUB_CLUSTER_NODE_NAME: name,
        FEEDSUB_STORAGE_DATA_DIR: join(dir, name),
      });
      nodes.push({ name, url, id: (await health(url)).node, process });
    }
    await withDeadline(everyNodeSees(nodes), 60_000, `${count} nodes did not see each other`);
    return nodes;
  } catch (err) {
    await stopNodes(nodes);
    throw err;
  }
}

/** Stops every node still running (SIGTERM, SIGKILL after 20 s), all at once. */
export async function stopNodes(nodes: Node[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.process.stop()));
}

/** SIGKILLs a node by its PID and resolves once it is gone. */
export async function killNode(node: Node): Promise<void> {
  process.kill(node.process.pid, 'SIGKILL');
  await node.process.exited;
}

async function everyNodeSees(nodes: Node[]): Promise<void> {
  for (;;) {
    const seen = await Promise.all(nodes.map(async (n) => (await health(n.url)).nodes.length));
    if (seen.every((s) => s === nodes.length)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function health(url: string): Promise<{ node: string; nodes: unknown[] }> {
  const r = await request(`${url}/healthz`, { headersTimeout: 10_000, bodyTimeout: 10_000 });
  return (await r.body.json()) as { node: string; nodes: unknown[] };
}

/** The node's counters now. */
export async function countsOf(node: Node): Promise<Counts> {
  const r = await request(`${node.url}/metrics`, { headersTimeout: 10_000, bodyTimeout: 10_000 });
  const text = await r.body.text();
  const sum = (metric: string) =>
    [...text.matchAll(new RegExp(`^${metric}\\{outcome="[a-z]+"\\} (\\d+)$`, 'gm'))].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
  return {
    polls: sum('feedsub_polls_total'),
    attempts: sum('feedsub_delivery_attempts_total'),
  };
}

/** The fields of /proc/<pid>/stat after the command's closing parenthesis (field 3, the state, first); undefined once
 *  the process is gone. */
function statOf(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system, every thread) a process has used so far; 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  const f = statOf(pid);
  return f ? (Number(f[11]) + Number(f[12])) / USER_HZ : 0;
}

/** CPU seconds the PostgreSQL server whose socket directory `databaseUrl` names has used so far: its postmaster's own
 *  and its reaped children's (backends that ended: cutime, cstime), and every live child's (backends, checkpointer, WAL
 *  writer, autovacuum). The difference of two readings is what the whole server used between them. */
export function postgresCpuSeconds(databaseUrl: string): number {
  // postgresql://user@/name?host=<socket dir>: WHATWG URL refuses the empty host, so the parameter is read alone.
  const socketDir = decodeURIComponent(/[?&]host=([^&]+)/.exec(databaseUrl)![1]!);
  const postmaster = readFileSync(join(socketDir, 'data', 'postmaster.pid'), 'utf8').split(
    '\n',
  )[0]!;
  const own = statOf(postmaster);
  if (!own) throw new Error('bench-cluster: the PostgreSQL server is gone');
  let jiffies = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const f = statOf(pid);
    if (f && f[1] === postmaster) jiffies += Number(f[11]) + Number(f[12]);
  }
  return jiffies / USER_HZ;
}
