// End-to-end test of the single executable: builds dist/feedsub when it is older than its inputs, then runs a copy from
// an empty temporary folder (no node_modules, no Node on PATH) against a real local feed origin.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort, stopChild, waitForHealthy } from '../scripts/sea/probe.ts';
import { run } from '../scripts/sea/run.ts';
import { buildBlocker, DEFAULT_NODE_SPEC } from '../scripts/sea/toolchain.ts';
import { FEEDSUB_VERSION } from '../src/version.ts';
import { CORPUS_URL } from './support/corpus.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const corpus = CORPUS_URL;
const execFileAsync = promisify(execFile);

// Building needs the npm registry's `node` package (or a toolchain already in build/) and a C++ compiler.
const blocker = await buildBlocker(root, DEFAULT_NODE_SPEC);
if (blocker) console.log(`# build.test.ts skipped: cannot build the executable here: ${blocker}`);

describe(
  'dist/feedsub, the single executable',
  { skip: blocker ? `cannot build the executable: ${blocker}` : false },
  () => {
    let work = '';
    let bin = '';
    let dataDir = '';
    let env: NodeJS.ProcessEnv = {};
    const children = new Set<ChildProcess>();
    const feedXml = readFileSync(new URL('netnewswire-rsparser/DaringFireball.rss', corpus));
    const origin: Server = createServer((req, res) => {
      if (req.url !== '/feed.rss') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/rss+xml; charset=utf-8' }).end(feedXml);
    });
    let server: ChildProcess | undefined;
    let serverLog = '';
    let api = '';
    let key = '';

    before(
      async () => {
        work = mkdtempSync(join(tmpdir(), 'feedsub-binary-'));
        bin = join(work, 'feedsub');
        dataDir = join(work, 'data');
        // No Node.js anywhere the binary could look: PATH is an empty folder; caches and data live under `work`.
        env = {
          PATH: join(work, 'empty-bin'),
          HOME: work,
          XDG_CACHE_HOME: join(work, 'cache'),
          FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
        };
        mkdirSync(join(work, 'empty-bin'));
        // `make test` has built it already (scripts/test-setup.sh); this builds it again only when its inputs changed.
        const built = await run(
          join(root, 'node_modules', '.bin', 'tsx'),
          ['scripts/build.ts', '--if-changed'],
          { cwd: root, timeoutMs: 30 * 60_000 },
        );
        assert.equal(built.code, 0, `scripts/build.ts failed:\n${built.output}`);
        console.log(built.output.trim().replace(/^/gm, '# '));
        copyFileSync(join(root, 'dist', 'feedsub'), bin);
        origin.listen(0, '127.0.0.1');
        await new Promise((resolve) => origin.once('listening', resolve));
      },
      { timeout: 30 * 60_000 },
    );

    after(async () => {
      for (const child of children)
        if (child.pid !== undefined && child.exitCode === null && child.signalCode === null)
          process.kill(child.pid, 'SIGKILL');
      if (origin.listening) await new Promise((resolve) => origin.close(resolve));
      if (work) rmSync(work, { recursive: true, force: true });
    });

    /** Runs the binary to completion from the work folder; rejects on a non-zero exit. */
    async function feedsub(...args: string[]): Promise<string> {
      const { stdout } = await execFileAsync(bin, args, { cwd: work, env, timeout: 60_000 });
      return stdout;
    }

    async function postJson(
      path: string,
      body: unknown,
    ): Promise<{ status: number; json: Record<string, unknown> }> {
      const response = await fetch(`${api}${path}`, {
        method: 'POST',
        headers: { authorization: key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, json: (await response.json()) as Record<string, unknown> };
    }

    it("reports feedsub's version and the embedded Node's version", async () => {
      const line = (await feedsub('--version')).trim();
      const major = DEFAULT_NODE_SPEC.split('.')[0] ?? '';
      assert.match(
        line,
        new RegExp(
          `^feedsub ${FEEDSUB_VERSION.replaceAll('.', '\\.')} \\(node v${major}\\.\\d+\\.\\d+\\)$`,
        ),
      );
    });

    it('creates an API key in an empty folder and caches the SQLite addon privately', async () => {
      const lines = (await feedsub('keys', 'create', '--app', 'me', '--data-dir', dataDir))
        .trim()
        .split('\n');
      key = lines.at(-1) ?? '';
      assert.match(key, /^fsk_\S{32,}$/);
      const cacheRoot = join(work, 'cache', 'feedsub');
      const [versionDir, ...others] = readdirSync(cacheRoot);
      assert.deepEqual(others, []);
      assert.match(
        versionDir ?? '',
        new RegExp(`^${FEEDSUB_VERSION.replaceAll('.', '\\.')}-[0-9a-f]{16}$`),
      );
      assert.equal(statSync(join(cacheRoot, versionDir ?? '')).mode & 0o777, 0o700);
      assert.ok(statSync(join(cacheRoot, versionDir ?? '', 'better_sqlite3.node')).size > 100_000);
    });

    it('serves /healthz, creates an endpoint and a subscription over HTTP, and polls the feed', async () => {
      const port = await freePort();
      server = spawn(bin, ['serve', '--port', String(port), '--data-dir', dataDir], {
        cwd: work,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(server);
      server.stdout?.on('data', (d: Buffer) => (serverLog += d.toString()));
      server.stderr?.on('data', (d: Buffer) => (serverLog += d.toString()));
      api = `http://127.0.0.1:${port}`;
      await waitForHealthy(`${api}/healthz`, server, 30_000, 10).catch((error: unknown) => {
        throw new Error(`${String(error)}\nserver output:\n${serverLog}`);
      });

      const endpoint = await postJson('/v1/endpoints', {
        title: 'receiver',
        url: 'http://127.0.0.1:9/hook',
      });
      assert.equal(endpoint.status, 201, JSON.stringify(endpoint.json));
      const { port: originPort } = origin.address() as AddressInfo;
      const feedUrl = `http://127.0.0.1:${originPort}/feed.rss`;
      const subscription = await postJson('/v1/subscriptions', {
        endpoint: endpoint.json.id,
        url: feedUrl,
      });
      assert.equal(subscription.status, 201, JSON.stringify(subscription.json));

      // A new subscription nudges the poller: within seconds the feed is fetched, parsed and its entries recorded.
      let feed: Record<string, unknown> = {};
      for (let i = 0; i < 200 && !feed.last_success_at; i++) {
        const response = await fetch(`${api}/v1/feeds/${String(subscription.json.feed)}`, {
          headers: { authorization: key },
        });
        feed = (await response.json()) as Record<string, unknown>;
        if (!feed.last_success_at) await delay(50);
      }
      assert.equal(feed.status, 'active', `${JSON.stringify(feed)}\nserver output:\n${serverLog}`);
      assert.ok(Number(feed.entry_count) > 0, JSON.stringify(feed));
    });

    it('serves /metrics as Prometheus text', async () => {
      assert.ok(server, 'the server runs');
      const response = await fetch(`${api}/metrics`);
      const text = await response.text();
      assert.equal(response.status, 200, text);
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
      const sample =
        /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? [-+]?(\d+(\.\d+)?([eE][-+]?\d+)?|NaN|[-+]?Inf)( \d+)?$/;
      const comment =
        /^# (HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram|summary|untyped))$/;
      const lines = text.split('\n').filter((line) => line !== '');
      assert.ok(
        lines.some((line) => sample.test(line)),
        'at least one sample',
      );
      for (const line of lines)
        assert.ok(sample.test(line) || comment.test(line), `not Prometheus text: ${line}`);
    });

    it('copies the WAL into the database on its checkpoint thread, from the embedded worker bundle', async () => {
      assert.ok(server, 'the server runs');
      let checkpointed = 0;
      for (let i = 0; i < 100 && checkpointed === 0; i++) {
        const text = await (await fetch(`${api}/metrics`)).text();
        checkpointed = Number(/^feedsub_wal_checkpointed_frames (\d+)$/m.exec(text)?.[1] ?? 0);
        if (checkpointed === 0) await delay(50);
      }
      assert.ok(checkpointed > 0, `no checkpoint reported\nserver output:\n${serverLog}`);
      assert.doesNotMatch(serverLog, /checkpoint thread failed/);
    });

    it('restarted itself in place (same PID) under the default server.heap_limit_mb of 512 MB', () => {
      assert.ok(server?.pid, 'the server runs');
      const line = serverLog.split('\n').find((l) => l.includes('"heap: limit in effect"'));
      assert.ok(line, `no heap line\nserver output:\n${serverLog}`);
      const effective = Number((JSON.parse(line) as { effective_mb: unknown }).effective_mb);
      // 512 MB of old generation plus a young generation of three 4 MB semi-spaces; V8's own limit on this
      // machine would be about a quarter of its memory.
      assert.ok(effective >= 512 && effective < 560, line);
      if (process.platform === 'linux')
        assert.match(
          readFileSync(`/proc/${server.pid}/environ`, 'utf8'),
          /(^|\0)NODE_OPTIONS=--max-old-space-size=512 --max-semi-space-size=4\0/,
        );
    });

    it('is called feedsub in ps and top (Node 24 names its main thread MainThread)', async (t) => {
      assert.ok(server?.pid, 'the server runs');
      if (process.platform !== 'linux') return t.skip('reads /proc');
      assert.equal(readFileSync(`/proc/${server.pid}/comm`, 'utf8').trim(), 'feedsub');
    });

    it('exits 0 on SIGTERM', async () => {
      assert.ok(server, 'the server runs');
      assert.equal(await stopChild(server, 'SIGTERM'), 0, serverLog);
    });
  },
);
