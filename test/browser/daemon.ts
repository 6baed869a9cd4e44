// The real feedsub for browser tests: a key from `keys create`, then `serve` with fast polling (test/support/daemon.ts),
// and Debian's Chromium driven by playwright-core.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { runCli, startDaemon as startServe, type Daemon } from '../support/daemon.ts';
import { startOrigin, startReceiver, type Origin, type Receiver } from '../support/servers.ts';

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

/** The `skip` option of a browser test's describe: why it cannot run here (no Chromium), or false when it can. Under
 *  CI=true a missing browser throws instead, failing the file rather than skipping it. */
export function browserSkip(): string | false {
  if (existsSync(CHROMIUM)) return false;
  const why = `${CHROMIUM} is not installed (run scripts/test-setup.sh as root, or apt-get install -y chromium)`;
  if (process.env.CI === 'true') throw new Error(`browser test: ${why}; CI must run it`);
  return `skipped: ${why}`;
}

/** Starts headless Chromium with its profile in `profileDir`, at a desktop viewport; resolves with its context. */
export function launchChromium(profileDir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 860 },
    timeout: 30_000,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Signs `page` in to the dashboard of the daemon at `url` with `key`, and waits for the overview. */
export async function signIn(page: Page, url: string, key: string): Promise<void> {
  await page.goto(`${url}/dashboard`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
}

/** What a browser test runs against: a feed origin serving /feed.xml, a webhook receiver, feedsub with a key of
 *  application "demo", and Chromium, still starting until `page()` is awaited. */
export type Dashboard = {
  origin: Origin;
  receiver: Receiver;
  daemon: Daemon;
  key: string;
  /** Chromium's page, once it has started. */
  page(): Promise<Page>;
  /** Closes Chromium, stops feedsub, the origin and the receiver, and removes their files. */
  close(): Promise<void>;
};

/** Starts a Dashboard whose origin serves `feed` at /feed.xml. Chromium starts in its own processes while the key is
 *  made and the daemon starts, and meanwhile the caller may set up more before awaiting `page()`. */
export async function startDashboard(feed: string): Promise<Dashboard> {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-browser-'));
  const origin = await startOrigin();
  const receiver = await startReceiver();
  origin.set('/feed.xml', { body: feed });
  const launched = launchChromium(join(dir, 'profile'));
  launched.catch(() => {}); // awaited by page(), where a failure fails the caller
  let daemon: Daemon | undefined;
  const close = async () => {
    await launched.then(
      (c) => c.close(),
      () => {},
    );
    await daemon?.stop();
    await origin.close();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const key = createKey(join(dir, 'data'), 'demo');
    daemon = await startDaemon(join(dir, 'data'));
    return {
      origin,
      receiver,
      daemon,
      key,
      async page() {
        const context = await launched;
        context.setDefaultTimeout(15_000);
        return context.pages()[0] ?? (await context.newPage());
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
