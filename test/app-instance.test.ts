// One `feedsub serve` per data directory, end to end with real processes: a second serve is refused while the first
// lives, the short commands work beside it, and a serve started right after a SIGKILL takes over at once, resuming the
// poll and the delivery the dead one had leased instead of waiting for their leases to run out.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { execFile } from 'node:child_process';
import { feedsubArgs, startDaemon, type Daemon } from './support/daemon.ts';
import { until } from './support/deadline.ts';
import { rss } from './support/servers.ts';

const ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '1',
  FEEDSUB_LOG_LEVEL: 'warn',
};
// A poll's lease is poll.timeout_seconds × 5 + 10 s (160 s by default) and a delivery's delivery.timeout_seconds + 10 s
// (25 s): a restarted serve must take the dead one's work over well before either runs out.
const TAKEOVER_MS = 10_000;

/** Runs a feedsub command to completion without blocking this process: a blocked event loop would leave a keep-alive
 *  socket to the daemon open after the daemon timed it out, and the next fetch would fail on it. */
function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...feedsubArgs(), ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ status: err ? ((err.code as number | null) ?? null) : 0, stdout, stderr }),
    );
  });
}

/** An HTTP server on 127.0.0.1 that holds every request while `holding` is set (answering none), else calls `answer`. */
async function holdingServer(answer: (path: string, res: ServerResponse) => void) {
  const held: { path: string; res: ServerResponse }[] = [];
  const seen: { path: string; headers: Record<string, unknown> }[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '/';
      seen.push({ path, headers: req.headers });
      if (state.holding(path)) held.push({ path, res });
      else answer(path, res);
    });
  });
  const state = {
    holding: (_path: string) => false,
    held,
    seen,
    url: '',
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

// Each test has its own data directory, servers and daemon: they run at once.
describe('one serve per data directory', { concurrency: true }, () => {
  const dirs: string[] = [];
  const daemons: Daemon[] = [];
  const closers: (() => Promise<void>)[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'feedsub-instance-'));
    dirs.push(d);
    return d;
  };
  after(async () => {
    await Promise.all(daemons.map((d) => d.kill()));
    for (const close of closers) await close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('refuses a second serve with one line and exit code 2 while the first runs, and the short commands still work', async () => {
    const dataDir = tempDir();
    const first = await startDaemon({ dataDir, env: ENV });
    daemons.push(first);
    const second = await runCli(['serve', '--port', '0', '--data-dir', dataDir], ENV);
    assert.equal(second.status, 2, `${second.stdout}${second.stderr}`);
    const lines = second.stderr.trim().split('\n');
    assert.equal(lines.length, 1, second.stderr);
    assert.match(lines[0]!, /^feedsub: .*another feedsub serve is running on it/);
    assert.ok(lines[0]!.includes(dataDir), 'the line names the data directory');
    const health = await fetch(`${first.url}/healthz`).catch((err: Error) => {
      throw new Error(err.message + first.output());
    });
    assert.equal(health.status, 200, 'the first keeps serving');

    const made = await runCli([
      'keys',
      'create',
      '--app',
      'beside',
      '--json',
      '--data-dir',
      dataDir,
    ]);
    assert.equal(made.status, 0, made.stderr);
    const { key } = JSON.parse(made.stdout) as { key: string };
    const listed = await runCli(['keys', 'list', '--data-dir', dataDir]);
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /app=beside/);
    const backup = await runCli(['backup', join(tempDir(), 'copy.db'), '--data-dir', dataDir]);
    assert.equal(backup.status, 0, backup.stderr);
    assert.equal((await runCli(['config', 'check', '--data-dir', dataDir])).status, 0);
    const res = await fetch(`${first.url}/v1/endpoints`, { headers: { authorization: key } });
    assert.equal(res.status, 200, 'the running serve sees the key the CLI made beside it');
    assert.equal(await first.stop('SIGTERM'), 0);
  });

  it('starts at once after the first was SIGKILLed, and resumes its leased poll and delivery without waiting for the leases', async () => {
    const dataDir = tempDir();
    const items: { guid: string }[] = [{ guid: 'base' }];
    const origin = await holdingServer((_path, res) => {
      res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(rss(items));
    });
    closers.push(origin.close);
    const receiver = await holdingServer((_path, res) => res.writeHead(200).end('ok'));
    closers.push(receiver.close);
    const { key } = JSON.parse(
      (await runCli(['keys', 'create', '--app', 'kill', '--json', '--data-dir', dataDir])).stdout,
    ) as { key: string };
    const first = await startDaemon({ dataDir, env: ENV });
    daemons.push(first);
    const call = async (path: string, body?: unknown) =>
      (await (
        await fetch(first.url + path, {
          method: body ? 'POST' : 'GET',
          headers: { authorization: key, 'content-type': 'application/json' },
          ...(body ? { body: JSON.stringify(body) } : {}),
        })
      ).json()) as Record<string, any>;
    const endpoint = await call('/v1/endpoints', { title: 'held', url: `${receiver.url}/hook` });
    const sub = await call('/v1/subscriptions', {
      endpoint: endpoint.id,
      url: `${origin.url}/feed.xml`,
    });
    await until(
      async () => (await call(`/v1/feeds/${sub.feed}`)).last_success_at !== null,
      20_000,
      'the baseline',
    );
    // A new entry: its event goes to the receiver, which holds it; the poll after that is held by the origin.
    receiver.holding = () => true;
    items.unshift({ guid: 'new' });
    await until(() => receiver.held.length > 0, 20_000, 'a delivery in flight');
    origin.holding = () => true;
    const polls = origin.seen.length;
    await until(() => origin.held.length > 0, 20_000, 'a poll in flight');
    assert.ok(origin.seen.length > polls);
    const webhookId = receiver.seen[0]!.headers['webhook-id'];

    await first.kill(); // SIGKILL, mid-poll and mid-delivery: both leases stay in the database
    origin.holding = () => false;
    receiver.holding = () => false;
    const heldPolls = origin.seen.length;
    const heldDeliveries = receiver.seen.length;
    const second = await startDaemon({
      dataDir,
      env: { ...ENV, FEEDSUB_LOG_LEVEL: 'info' },
      timeoutMs: 20_000,
    });
    daemons.push(second);
    await until(
      () => origin.seen.length > heldPolls,
      TAKEOVER_MS,
      'the restarted serve polling the feed the dead one had leased',
    );
    await until(
      () => receiver.seen.slice(heldDeliveries).some((r) => r.headers['webhook-id'] === webhookId),
      TAKEOVER_MS,
      'the restarted serve delivering the event the dead one was sending',
    );
    assert.match(second.output(), /released the leases of a stopped instance/);
    assert.equal(await second.stop('SIGTERM'), 0);
  });
});
