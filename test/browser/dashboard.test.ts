// The dashboard in a real browser (Debian's Chromium via playwright-core) against the real server, a local feed origin
// and a local webhook receiver: sign in, create an endpoint and a subscription, watch the feed and an event, resend, read
// the charts, sign out. dashboard-pages.test.ts checks each main page's layout and takes the README's screenshots.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { rss, type Origin, type Receiver } from '../support/servers.ts';
import { browserSkip, signIn, startDashboard, type Daemon, type Dashboard } from './daemon.ts';

const skip = browserSkip();

/** Reloads `page` until `check` passes, at most `tries` times `everyMs` apart; the last failure is rethrown. */
async function until(
  page: Page,
  what: string,
  check: () => Promise<void>,
  tries = 60,
  everyMs = 250,
): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      await check();
      return;
    } catch (err) {
      if (i >= tries)
        throw new Error(`${what}: still failing after ${tries} tries`, { cause: err });
    }
    await page.waitForTimeout(everyMs);
    await page.reload();
  }
}

describe('the dashboard in Chromium', { skip }, () => {
  let dashboard: Dashboard | undefined;
  let daemon: Daemon;
  let origin: Origin;
  let receiver: Receiver;
  let page: Page;
  let key: string;

  before(async () => {
    dashboard = await startDashboard(
      rss([{ guid: 'first', title: 'First post', link: 'http://example.com/1' }], 'Team blog'),
    );
    ({ daemon, origin, receiver, key } = dashboard);
    page = await dashboard.page();
  });

  after(() => dashboard?.close());

  it('signs in with a key made by `keys create`', async () => {
    await signIn(page, daemon!.url, key);
    assert.match(await page.locator('header .who').innerText(), /Application demo/);
  });

  it('creates an endpoint and shows its signing secret', async () => {
    await page.getByRole('link', { name: 'Endpoints', exact: true }).click();
    await page.getByLabel('Title').fill('Team receiver');
    await page.getByLabel('URL').fill(`${receiver.url}/hooks/feedsub`);
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.getByRole('heading', { name: 'Team receiver' }).waitFor();
    assert.match(await page.locator('#secret').innerText(), /^whsec_/);
  });

  it("creates a subscription to the origin's feed and sees the feed become healthy", async () => {
    await page.getByRole('link', { name: 'Subscriptions', exact: true }).click();
    const create = page.getByRole('button', { name: 'Create subscription' });
    const form = page.locator('form', { has: create }); // the page also has the OPML import and export forms
    await form
      .getByLabel('Endpoint')
      .selectOption({ label: `Team receiver — ${receiver.url}/hooks/feedsub` });
    await form.getByLabel('Feed URL').fill(`${origin.url}/feed.xml`);
    await form
      .getByLabel('Metadata (JSON object, optional)')
      .fill('{"channel": "#news", "team": 7}');
    await create.click();
    await page.getByRole('heading', { name: `${origin.url}/feed.xml` }).waitFor();
    await until(page, 'feed healthy', async () => {
      assert.equal(
        await page.locator('#feed-health .badge').innerText({ timeout: 2000 }),
        'active',
      );
    });
    assert.match(await page.locator('#feed-health').innerText(), /Team blog/);
  });

  it('sees an event arrive at the receiver after the feed gains an entry', async () => {
    origin.set('/feed.xml', {
      body: rss(
        [
          { guid: 'second', title: 'Second post', link: 'http://example.com/2' },
          { guid: 'first', title: 'First post', link: 'http://example.com/1' },
        ],
        'Team blog',
      ),
    });
    const [delivery] = await receiver.waitFor(1, 30_000);
    const body = JSON.parse(delivery!.body) as {
      type: string;
      data: { entries: { title: string }[]; metadata: unknown };
    };
    assert.equal(body.type, 'subscription.entries');
    assert.deepEqual(
      body.data.entries.map((e) => e.title),
      ['Second post'],
    );
    assert.deepEqual(body.data.metadata, { channel: '#news', team: 7 });
    await page.getByRole('link', { name: 'Events', exact: true }).click();
    await until(page, 'event shown as delivered', async () => {
      assert.equal(
        await page.locator(`#event-${delivery!.id} .badge`).innerText({ timeout: 2000 }),
        'delivered',
      );
    });
  });

  it('resends the event: the receiver gets the same webhook-id and body again', async () => {
    const first = receiver.deliveries[0]!;
    await page.locator(`#event-${first.id}`).getByRole('button', { name: 'Resend' }).click();
    await page.getByText('Event queued to be sent again').waitFor();
    const deliveries = await receiver.waitFor(2, 30_000);
    assert.equal(deliveries[1]!.id, first.id);
    assert.equal(deliveries[1]!.body, first.body);
    await until(page, 'two attempts shown', async () => {
      assert.match(
        await page.locator(`#event-${first.id} summary`).first().innerText({ timeout: 2000 }),
        /Attempts \(2\)/,
      );
    });
    assert.ok(
      (await page.locator('time.local').count()) > 0,
      'the script shows times in local time',
    );
  });

  it('shows what each event is about: the feed, its entry titles, and the payload indented', async () => {
    const first = receiver.deliveries[0]!;
    const card = page.locator(`#event-${first.id}`);
    assert.match(await card.locator('.about').innerText(), /^Team blog: “Second post”$/);
    await page.goto(`${daemon!.url}/dashboard/events?event=${first.id}`);
    await page.locator('details.payload > summary').click();
    const pretty = await page.locator('details.payload > pre').innerText();
    assert.match(pretty, /^\{\n  "type": "subscription\.entries",\n/);
    assert.deepEqual(JSON.parse(pretty), JSON.parse(first.body));
  });

  it("charts the endpoint's deliveries and the feed's polls of the last 24 hours", async () => {
    await page.getByRole('link', { name: 'Endpoints', exact: true }).click();
    await page.getByRole('link', { name: 'Team receiver' }).click();
    const deliveries = page.locator('#deliveries-chart');
    assert.match(
      await deliveries.locator('figcaption').innerText(),
      /2 attempts, 2 delivered \(100 %\), 0 failed/,
    );
    assert.equal(await deliveries.locator('svg rect.good').count(), 1, 'one hour with deliveries');
    assert.equal(await deliveries.locator('svg rect.bad').count(), 0);
    assert.match(
      (await deliveries.locator('svg g.hour title').last().textContent()) ?? '',
      /UTC: 2 attempts, 2 delivered, 0 failed/,
    );
    await page.getByRole('link', { name: `${origin.url}/feed.xml` }).click();
    const polls = page.locator('#polls-chart');
    assert.match(
      await polls.locator('figcaption').innerText(),
      /\d+ polls?, \d+ fetched, 0 throttled, 0 failed; 1 new entry/,
    );
    assert.equal(await polls.locator('svg rect.good').count(), 1);
  });

  it("tests a filter against the feed's recent entries, saves it, and sees the next entry it blocks kept back", async () => {
    // on the subscription's page, where the charts test left it
    const filter = page.getByLabel('Filter (JSON; empty for none)');
    await filter.fill('{"block": [{"field": "title", "contains": "SECOND"}]}');
    await page
      .getByRole('button', { name: "Test this filter against the feed's recent entries" })
      .click();
    const preview = page.locator('#filter-preview');
    await preview.waitFor();
    assert.match(await preview.locator('p').innerText(), /sends 1 and keeps back 1/);
    assert.equal(
      await preview.locator('tr', { hasText: 'Second post' }).locator('td').last().innerText(),
      'blocked by rule filter.block[0] (title contains "SECOND")',
    );
    assert.match(
      await preview.locator('tr', { hasText: 'First post' }).locator('td').last().innerText(),
      /^sent/,
    );
    await page.getByRole('button', { name: 'Save filter' }).click();
    await page.getByText('Filter saved').waitFor();
    assert.match(await page.locator('dl.facts').first().innerText(), /0 keep, 1 block rules/);
    origin.set('/feed.xml', {
      body: rss(
        [
          { guid: 'fourth', title: 'Fourth post', link: 'http://example.com/4' },
          { guid: 'third', title: 'A second look', link: 'http://example.com/3' },
          { guid: 'second', title: 'Second post', link: 'http://example.com/2' },
          { guid: 'first', title: 'First post', link: 'http://example.com/1' },
        ],
        'Team blog',
      ),
    });
    const deliveries = await receiver.waitFor(3, 30_000);
    const body = JSON.parse(deliveries[2]!.body) as { data: { entries: { title: string }[] } };
    assert.deepEqual(
      body.data.entries.map((e) => e.title),
      ['Fourth post'],
    );
    await until(page, 'the blocked entry counted', async () => {
      assert.match(
        await page.locator('dl.facts').first().innerText({ timeout: 2000 }),
        /Entries filtered out\s+1\b/,
      );
    });
  });

  it('signs out, after which pages ask to sign in again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You are signed out').waitFor();
    await page.goto(`${daemon!.url}/dashboard/endpoints`);
    assert.match(page.url(), /\/dashboard\?next=%2Fdashboard%2Fendpoints$/);
    await page.getByLabel('API key').waitFor();
  });
});
