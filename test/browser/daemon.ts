// The real feedsub for browser tests: a key from `keys create`, then `serve` with fast polling (test/support/daemon.ts).
import { existsSync } from 'node:fs';
import { runCli, startDaemon as startServe, type Daemon } from '../support/daemon.ts';

export type { Daemon };

/** Fast polling and private addresses allowed, so a local origin and receiver work and changes show within seconds. */
export const FAST_ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '2',
};

/** Creates an API key with the real CLI; returns the key. */
export function createKey(dataDir: string, app: string): string {
  const out = runCli(['keys', 'create', '--app', app, '--json', '--data-dir', dataDir], FAST_ENV);
  if (out.status !== 0) throw new Error(`keys create failed (${out.status}): ${out.stderr}`);
  return (JSON.parse(out.stdout) as { key: string }).key;
}

/** Starts `feedsub serve` with FAST_ENV; resolves once it is healthy. */
export function startDaemon(dataDir: string): Promise<Daemon> {
  return startServe({ dataDir, env: FAST_ENV });
}

/** Debian's Chromium (scripts/test-setup.sh installs it); FEEDSUB_TEST_CHROMIUM points elsewhere on other machines. */
export const CHROMIUM = process.env.FEEDSUB_TEST_CHROMIUM || '/usr/bin/chromium';

/** Why the browser test cannot run here, or undefined when it can. In CI a missing browser is a failure, not a skip. */
export function browserMissing(): string | undefined {
  return existsSync(CHROMIUM)
    ? undefined
    : `${CHROMIUM} is not installed (run scripts/test-setup.sh as root, or apt-get install -y chromium)`;
}
