// Subscription filters end to end through the real `feedsub serve`, a feed origin and a receiver on 127.0.0.1: keep
// rules alone, block rules alone and both send exactly the entries they should; a filter changed while entries arrive
// applies from the next poll; the trace names the rule that kept an entry back; the filtered entries are counted on
// the subscription and in /metrics; and a filter of catastrophic patterns judging a 1 MiB entry never stalls the
// daemon: /healthz keeps answering while it judges (how fast is make bench's to measure, not a test's).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from './support/deadline.ts';
import { startServed, type Served } from './support/served.ts';

/** Longer than any /healthz answer while the daemon works, however loaded the machine; shorter than a stall. */
const STALL_MS = 3000;

const ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  FEEDSUB_POLL_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '1',
  // the tests below share one application and ask for their state often
  FEEDSUB_QUOTAS_API_REQUESTS_PER_SECOND: '0',
};
// Every wait below is bounded by this: a few 1-second polls and a delivery, far from any fallback timer of the loops.
const WAIT_MS = 20_000;

type Item = { guid: string; title?: string; author?: string; category?: string; text?: string };

/** An RSS document of these items (newest first), with authors, categories and content. */
function rssOf(items: Item[]): string {
  const esc = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;');
  const item = (i: Item) =>
    `<item><guid>${i.guid}</guid><title>${esc(i.title ?? i.guid)}</title>` +
    (i.author ? `<dc:creator>${esc(i.author)}</dc:creator>` : '') +
    (i.category ? `<category>${esc(i.category)}</category>` : '') +
    (i.text ? `<content:encoded>${esc(i.text)}</content:encoded>` : '') +
    '</item>';
  return `<?xml version="1.0" encoding="utf-8"?><rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel><title>Filters</title><link>http://example.com/</link>${items.map(item).join('')}</channel></rss>`;
}

describe('end to end: subscription filters, through feedsub serve', { concurrency: true }, () => {
  let w: Served;
  before(async () => {
    w = await startServed('filters', ENV);
  });
  after(async () => {
    await w?.close();
  });

  /** One API request with the key that must succeed: its parsed body. */
  async function api(method: string, path: string, body?: unknown): Promise<any> {
    const res = await w.call(method, path, body);
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  /** A feed at `path` serving `items`, subscribed by a new endpoint with `filter`; resolves once its baseline is
   *  stored. */
  async function subscribe(path: string, filter: unknown, items: Item[]) {
    w.origin.set(path, { body: rssOf(items) });
    const ep = await api('POST', '/v1/endpoints', { title: path, url: `${w.receiver.url}${path}` });
    const sub = await api('POST', '/v1/subscriptions', {
      endpoint: ep.id,
      url: w.origin.url + path,
      filter,
    });
    await until(
      async () =>
        (await api('GET', `/v1/subscriptions/${sub.id}/entries`)).data.length === items.length,
      WAIT_MS,
      'the baseline stored',
      100,
    );
    return sub as { id: string; feed: string };
  }

  /** The guids of every entry delivered to the subscription so far, in delivery order. */
  function delivered(subId: string): string[] {
    return w.receiver.deliveries.flatMap((d) => {
      const { data } = JSON.parse(d.body) as {
        data: { subscription?: { id: string }; entries?: { guid: string }[] };
      };
      return data.subscription?.id === subId ? (data.entries ?? []).map((e) => e.guid) : [];
    });
  }

  /** Serves `items` at `path` and waits until the subscription was sent `expected` in all and its filter counted
   *  `filtered` entries. */
  async function next(
    sub: { id: string },
    path: string,
    items: Item[],
    expected: string[],
    filtered: number,
  ): Promise<void> {
    w.origin.set(path, { body: rssOf(items) });
    await until(
      async () =>
        (await api('GET', `/v1/subscriptions/${sub.id}`)).entries_filtered === filtered &&
        delivered(sub.id).length === expected.length,
      WAIT_MS,
      `${expected.length} entries sent and ${filtered} filtered`,
      100,
    );
    assert.deepEqual(delivered(sub.id).sort(), [...expected].sort());
  }

  const BASE: Item[] = [{ guid: 'old-1' }, { guid: 'old-2' }];

  it('sends only the entries a keep rule matches', async () => {
    const path = '/keep.xml';
    const sub = await subscribe(
      path,
      {
        keep: [
          { field: 'title', contains: 'security' },
          { field: 'category', matches: '^cve-' },
        ],
      },
      BASE,
    );
    await next(
      sub,
      path,
      [
        { guid: 'k-1', title: 'A SECURITY advisory' },
        { guid: 'k-2', title: 'Release notes' },
        { guid: 'k-3', title: 'Patch', category: 'CVE-2026-1' },
        ...BASE,
      ],
      ['k-1', 'k-3'],
      1,
    );
  });

  it('sends every entry but those a block rule matches', async () => {
    const path = '/block.xml';
    const sub = await subscribe(path, { block: [{ field: 'author', contains: 'bot' }] }, BASE);
    await next(
      sub,
      path,
      [
        { guid: 'b-1', author: 'Dependabot' },
        { guid: 'b-2', author: 'Alice' },
        { guid: 'b-3' },
        ...BASE,
      ],
      ['b-2', 'b-3'],
      1,
    );
  });

  it('sends what a keep rule matches and no block rule does, and the trace names the rule', async () => {
    const path = '/both.xml';
    const sub = await subscribe(
      path,
      {
        keep: [{ field: 'text', contains: 'remote' }],
        block: [{ field: 'title', matches: '\\bintern(ship)?\\b' }],
      },
      BASE,
    );
    await next(
      sub,
      path,
      [
        { guid: 'x-1', title: 'Engineer', text: 'Fully REMOTE role' },
        { guid: 'x-2', title: 'Internship', text: 'remote' },
        { guid: 'x-3', title: 'Engineer', text: 'On site' },
        ...BASE,
      ],
      ['x-1'],
      2,
    );
    const blocked = await api('GET', `/v1/subscriptions/${sub.id}/trace?entry=x-2`);
    assert.equal(blocked.decision, 'filtered');
    assert.match(blocked.reason, /blocked by rule filter\.block\[0\] \(title matches \/\\bintern/);
    assert.deepEqual(blocked.filter, {
      outcome: 'blocked',
      rule: 'filter.block[0]',
      changed_at: blocked.filter.changed_at,
      as_seen: true,
    });
    const notKept = await api('GET', `/v1/subscriptions/${sub.id}/trace?entry=x-3`);
    assert.equal(notKept.decision, 'filtered');
    assert.match(notKept.reason, /no keep rule matched \(text contains "remote"\)/);
    const sent = await api('GET', `/v1/subscriptions/${sub.id}/trace?entry=x-1`);
    assert.equal(sent.filter.outcome, 'sent');
  });

  it('applies a filter changed while entries arrive from the next poll on, and sends everything once removed', async () => {
    const path = '/changed.xml';
    const sub = await subscribe(path, { keep: [{ field: 'title', contains: 'alpha' }] }, BASE);
    const first = [
      { guid: 'c-1', title: 'alpha one' },
      { guid: 'c-2', title: 'beta one' },
      ...BASE,
    ];
    await next(sub, path, first, ['c-1'], 1);
    await api('PATCH', `/v1/subscriptions/${sub.id}`, {
      filter: { keep: [{ field: 'title', contains: 'beta' }] },
    });
    const second = [
      { guid: 'c-3', title: 'alpha two' },
      { guid: 'c-4', title: 'beta two' },
      ...first,
    ];
    await next(sub, path, second, ['c-1', 'c-4'], 2);
    const patched = await api('PATCH', `/v1/subscriptions/${sub.id}`, { filter: null });
    assert.equal(patched.filter, null);
    const third = [{ guid: 'c-5', title: 'gamma' }, ...second];
    await next(sub, path, third, ['c-1', 'c-4', 'c-5'], 2);
  });

  it('counts the entries filtered out in /metrics', async () => {
    const path = '/metrics.xml';
    const sub = await subscribe(path, { block: [{ field: 'title', contains: 'noise' }] }, BASE);
    await next(sub, path, [{ guid: 'm-1', title: 'noise' }, ...BASE], [], 1);
    const text = await (await fetch(`${w.daemon.url}/metrics`)).text();
    const blocked = /^feedsub_entries_filtered_total\{reason="blocked"\} (\d+)$/m.exec(text);
    assert.ok(blocked && Number(blocked[1]) >= 1, text.slice(0, 200));
    assert.match(text, /^feedsub_entries_filtered_total\{reason="not_kept"\} \d+$/m);
  });
});

describe('end to end: catastrophic patterns on a 1 MiB entry, through feedsub serve', () => {
  let w: Served;
  before(async () => {
    w = await startServed('catastrophic', ENV);
  });
  after(async () => {
    await w?.close();
  });

  it('judges a 1 MiB entry against catastrophic patterns without stalling: /healthz answers throughout', async () => {
    const path = '/huge.xml';
    w.origin.set(path, { body: rssOf([{ guid: 'small' }]) });
    const call = async (method: string, p: string, body?: unknown) => {
      const res = await w.call(method, p, body);
      assert.ok(res.status < 300, `${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const ep = await call('POST', '/v1/endpoints', {
      title: 'huge',
      url: `${w.receiver.url}/huge`,
    });
    const patterns = ['(a+)+$', '(a|aa)+b', '(x+x+)+y', '^(a|a?)+b', '(\\w+\\s?)+z$', '(.*a){12}b'];
    const keep = Array.from({ length: 20 }, (_, i) => ({
      field: i % 2 === 0 ? 'text' : 'title',
      matches: patterns[i % patterns.length]!,
    }));
    const sub = await call('POST', '/v1/subscriptions', {
      endpoint: ep.id,
      url: w.origin.url + path,
      filter: { keep, block: keep.slice(0, 20) },
    });
    await until(
      async () => (await call('GET', `/v1/subscriptions/${sub.id}/entries`)).data.length === 1,
      WAIT_MS,
      'the baseline stored',
    );
    const huge = 'a'.repeat(512 * 1024) + 'x'.repeat(512 * 1024);
    // Probes go out every 10 ms whether or not the last one was answered, so a stall of the daemon delays every probe
    // sent during it (a probe sent only after the last answer would count a long stall once).
    const latencies: number[] = [];
    const pending: Promise<void>[] = [];
    const probe = async () => {
      const t = performance.now();
      const res = await fetch(`${w.daemon.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
      await res.arrayBuffer();
      latencies.push(performance.now() - t);
    };
    const timer = setInterval(() => pending.push(probe()), 10);
    w.origin.set(path, {
      body: rssOf([{ guid: 'huge', title: huge.slice(0, 4096), text: huge }, { guid: 'small' }]),
    });
    try {
      await until(
        async () => (await call('GET', `/v1/subscriptions/${sub.id}`)).entries_filtered === 1,
        WAIT_MS,
        'the 1 MiB entry judged',
        200,
      );
      // a few more polls of the same document (unchanged: a 304 or the same body) while probing
      await new Promise((r) => setTimeout(r, 1500));
    } finally {
      clearInterval(timer);
      await Promise.all(pending);
    }
    latencies.sort((a, b) => a - b);
    assert.ok(latencies.length >= 50, `${latencies.length} probes`);
    // A backtracking engine would hold the event loop for minutes on these patterns and this input; RE2 within the
    // filter's budgets holds it for milliseconds. The bound is far above both the budget and a loaded CI machine's
    // noise, and far below a stall.
    const slowest = latencies.at(-1)!;
    assert.ok(slowest < STALL_MS, `/healthz waited ${slowest.toFixed(0)} ms for an answer`);
  });
});
