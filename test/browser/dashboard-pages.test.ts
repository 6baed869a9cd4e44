// Each main page of the dashboard in a real browser (Debian's Chromium via playwright-core), against the real server
// with an endpoint, a subscription and a delivered, resent event made through the API: a failed test ping's place, every
// page at phone width, and every page at desktop width, where FEEDSUB_UPDATE_SCREENSHOTS=1 rewrites docs/screenshots.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { until } from '../support/deadline.ts';
import { rss } from '../support/servers.ts';
import { browserSkip, signIn, startDashboard, type Daemon, type Dashboard } from './daemon.ts';

// The README shows docs/screenshots; they are taken and rewritten only on request (FEEDSUB_UPDATE_SCREENSHOTS=1), so a
// test run leaves the work tree clean. Every run still loads and checks each page the screenshots show.
const SCREENSHOTS =
  process.env.FEEDSUB_UPDATE_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../../docs/screenshots/', import.meta.url))
    : undefined;
// The phone-width pages the README shows beside the desktop ones.
const PHONE_SHOTS = ['overview', 'subscriptions', 'endpoint'];
const skip = browserSkip();

describe('the dashboard pages in Chromium', { skip }, () => {
  let dashboard: Dashboard | undefined;
  let daemon: Daemon;
  let page: Page;
  let endpointId: string;
  let subscriptionId: string;

  before(async () => {
    const feed = (titles: string[]) =>
      rss(
        titles.map((title, i) => ({
          guid: `entry-${titles.length - i}`,
          title,
          link: `http://example.com/${titles.length - i}`,
        })),
        'Team blog',
      );
    // Chromium goes on starting while the API calls below run.
    dashboard = await startDashboard(feed(['First post']));
    ({ daemon } = dashboard);
    const { origin, receiver, key } = dashboard;
    const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const res = await fetch(`${daemon!.url}/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
      return (await res.json()) as T;
    };
    ({ id: endpointId } = await api<{ id: string }>('POST', '/endpoints', {
      title: 'Team receiver',
      url: `${receiver.url}/hooks/feedsub`,
    }));
    ({ id: subscriptionId } = await api<{ id: string }>('POST', '/subscriptions', {
      endpoint: endpointId,
      url: `${origin.url}/feed.xml`,
      metadata: { channel: '#news', team: 7 },
    }));
    // The first fetch is the baseline; the entry the feed gains after it is sent, then resent.
    await until(
      async () =>
        (await api<{ feed_status: string }>('GET', `/subscriptions/${subscriptionId}`))
          .feed_status === 'active',
      20_000,
      'the feed fetched for the first time',
      100,
    );
    origin.set('/feed.xml', { body: feed(['Second post', 'First post']) });
    const [delivery] = await receiver.waitFor(1, 20_000);
    await until(
      async () =>
        (await api<{ status: string }>('GET', `/events/${delivery!.id}`)).status === 'delivered',
      20_000,
      'the event recorded as delivered',
      50,
    );
    await api('POST', `/events/${delivery!.id}/resend`);
    await receiver.waitFor(2, 20_000);
    page = await dashboard.page();
    await signIn(page, daemon.url, key);
    if (SCREENSHOTS) mkdirSync(SCREENSHOTS, { recursive: true });
  });

  after(() => dashboard?.close());

  /** Saves the page's screenshot as docs/screenshots/<name>.png when asked to (see SCREENSHOTS). */
  const shot = async (name: string) => {
    if (SCREENSHOTS)
      await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
  };

  /** Each main page's name and URL. */
  function mainPages(): [string, string][] {
    const base = `${daemon!.url}/dashboard`;
    return [
      ['overview', base],
      ['endpoints', `${base}/endpoints`],
      ['endpoint', `${base}/endpoints/${endpointId}`],
      ['subscriptions', `${base}/subscriptions`],
      ['subscription', `${base}/subscriptions/${subscriptionId}`],
      ['events', `${base}/events`],
      ['feeds', `${base}/feeds`],
    ];
  }

  it('keeps a failed test ping out of "Needs attention" and lists it under the endpoint\'s test pings', async () => {
    dashboard!.receiver.respond([500]);
    await page.getByRole('link', { name: 'Endpoints', exact: true }).click();
    await page.getByRole('link', { name: 'Team receiver' }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.locator('main section.card .badge.dead').waitFor();
    assert.match(await page.locator('main section.card .about').innerText(), /^Test ping$/);
    await page.getByRole('link', { name: 'Endpoints', exact: true }).click();
    await page.getByRole('link', { name: 'Team receiver' }).click();
    const pings = page.locator('h2:has-text("Test pings") + table');
    assert.match(await pings.innerText(), /Test ping[\s\S]*dead/);
    assert.doesNotMatch(
      await page.locator('h2:has-text("Recent events") + table').innerText(),
      /Test ping/,
    );
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    await page.getByText('Nothing needs attention').waitFor();
    await page.getByRole('link', { name: 'Events', exact: true }).click();
    assert.deepEqual(await page.locator('main section.card .about').allInnerTexts(), [
      'Team blog: “Second post”',
    ]);
    await page.getByRole('link', { name: 'Test pings' }).click();
    assert.deepEqual(await page.locator('main section.card .about').allInnerTexts(), ['Test ping']);
  });

  it('fits every page on a 375 px wide phone screen', async () => {
    await page.setViewportSize({ width: 375, height: 812 });
    try {
      for (const [name, url] of mainPages()) {
        const res = await page.goto(url);
        assert.equal(res?.status(), 200, name);
        const width = await page.locator('html').evaluate((html) => html.scrollWidth);
        assert.ok(width <= 375, `${name} is ${width} px wide`);
        if (PHONE_SHOTS.includes(name)) await shot(`${name}-phone`);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
  });

  it('shows each main page on a desktop screen with its details open (the screenshots the README shows)', async () => {
    for (const [name, url] of mainPages()) {
      const res = await page.goto(url);
      assert.equal(res?.status(), 200, name);
      await page
        .locator('details')
        .evaluateAll((all) => all.forEach((d) => d.setAttribute('open', '')));
      await shot(name);
    }
  });
});
