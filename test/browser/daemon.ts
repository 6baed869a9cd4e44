// Runs the real feedsub as child processes for browser tests: `keys create`, then `serve` on a free port; killed by PID.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = `${ROOT}node_modules/.bin/tsx`;
const MAIN = `${ROOT}src/main.ts`;

/** Fast polling and private addresses allowed, so a local origin and receiver work and changes show within seconds. */
export const FAST_ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '2',
  FEEDSUB_LOG_FORMAT: 'json',
};

export type Daemon = { url: string; pid: number; log: string[]; stop(): Promise<void> };

/** Creates an API key with the real CLI; returns the key. */
export function createKey(dataDir: string, app: string): string {
  const out = spawnSync(TSX, [MAIN, 'keys', 'create', '--app', app, '--json', '--data-dir', dataDir], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...FAST_ENV } });
  if (out.status !== 0) throw new Error(`keys create failed (${out.status}): ${out.stderr}`);
  return (JSON.parse(out.stdout) as { key: string }).key;
}

/** Starts `feedsub serve` on 127.0.0.1 with a port the OS picks; resolves with its URL once it logs that it listens. */
export function startDaemon(dataDir: string, timeoutMs = 30_000): Promise<Daemon> {
  const child = spawn(TSX, [MAIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir], {
    env: { ...process.env, ...FAST_ENV }, stdio: ['ignore', 'pipe', 'pipe'], detached: true, // its own process group: tsx runs node as a child
  });
  const log: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { kill(child); reject(new Error(`feedsub did not start within ${timeoutMs} ms:\n${log.join('\n')}`)); }, timeoutMs);
    const onLine = (line: string) => {
      log.push(line);
      const m = /"msg":"feedsub: listening".*"url":"([^"]+)"/.exec(line);
      if (m) { clearTimeout(timer); resolve({ url: m[1]!, pid: child.pid!, log, stop: () => stop(child) }); }
    };
    for (const stream of [child.stdout!, child.stderr!]) {
      let buffer = '';
      stream.on('data', (chunk: Buffer) => {
        buffer += chunk.toString('utf8');
        const lines = buffer.split('\n');
        buffer = lines.pop()!;
        lines.forEach(onLine);
      });
    }
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`feedsub exited with ${code} before listening:\n${log.join('\n')}`)); });
  });
}

/** SIGTERM by PID (tsx passes it on to feedsub), then SIGKILL to its process group if it has not exited within 10 s. */
function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => kill(child), 10_000);
    child.once('exit', () => { clearTimeout(force); kill(child); resolve(); });
    try { process.kill(child.pid!, 'SIGTERM'); } catch { /* already gone */ }
  });
}

/** SIGKILL to the child's process group (tsx and the node it started). */
function kill(child: ChildProcess): void {
  try { if (child.pid) process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
}

/** Debian's Chromium (scripts/test-setup.sh installs it); FEEDSUB_TEST_CHROMIUM points elsewhere on other machines. */
export const CHROMIUM = process.env.FEEDSUB_TEST_CHROMIUM || '/usr/bin/chromium';

/** Why the browser test cannot run here, or undefined when it can. In CI a missing browser is a failure, not a skip. */
export function browserMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is not installed (run scripts/test-setup.sh as root, or apt-get install -y chromium)`;
}
