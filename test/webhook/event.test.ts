// Event bodies: the contract's shape, metadata byte for byte, and batches of ≤ 100 entries and ≤ 256 KiB.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildEntryEvents,
  buildHealthEvent,
  buildTestEvent,
  entryJson,
  deliveryOrder,
  entryEventBody,
  envelopeBytes,
  FEED_EVENT_TYPES,
  MAX_ENTRIES_PER_EVENT,
  MAX_EVENT_BYTES,
  SCHEMA_VERSION,
  startsNewEvent,
  storedEntryText,
  type EventEntry,
  type FeedHealthEvent,
} from '../../src/webhook/event.ts';
import { openapiDocument } from '../../src/http/api/openapi.ts';

// The document's named schemas, as JSON Schema.
const SCHEMAS = (openapiDocument() as { components: { schemas: Record<string, unknown> } })
  .components.schemas;
const now = new Date('2026-01-01T00:00:00.000Z');
const feed = {
  id: 'f'.repeat(24),
  url: 'https://example.com/feed.xml',
  title: 'Example',
  site_url: 'https://example.com/',
};

function entry(i: number, extra: Partial<EventEntry> = {}): EventEntry {
  return {
    id: `key-${i}`,
    guid: `guid-${i}`,
    url: `https://example.com/${i}`,
    title: `Entry ${i}`,
    summary: 'Short.',
    summary_html: '<p>Short.</p>',
    content_html: null,
    content_text: null,
    image: null,
    authors: ['A. Writer'],
    categories: ['news'],
    enclosures: [],
    published_at: now.toISOString(),
    updated_at: null,
    key_source: { title: `Entry ${i}`, body: 'never sent' },
    ...extra,
  };
}

function build(
  entries: EventEntry[],
  metadata: string | null = '{"team":"alpha"}',
  firstSequence = 1,
) {
  let n = 0;
  return buildEntryEvents({
    subscription: { id: 's'.repeat(24), url: feed.url, metadata },
    feed,
    entries,
    now,
    firstSequence,
    newId: () => `id-${++n}`,
  });
}

type Body = {
  type: string;
  schema_version: number;
  timestamp: string;
  data: {
    sequence: number;
    entries: {
      id: string;
      summary: string | null;
      summary_html: string | null;
      content_html: string | null;
      content_text: string | null;
      truncated?: boolean;
    }[];
    metadata: unknown;
  };
};
const parse = (body: string) => JSON.parse(body) as Body;

describe('buildEntryEvents', () => {
  const sizes: { name: string; entries: EventEntry[]; counts: number[] }[] = [
    { name: 'one entry makes one event', entries: [entry(1)], counts: [1] },
    {
      name: '100 entries still fit one event',
      entries: Array.from({ length: 100 }, (_, i) => entry(i)),
      counts: [100],
    },
    {
      name: '101 entries make two events',
      entries: Array.from({ length: 101 }, (_, i) => entry(i)),
      counts: [100, 1],
    },
    {
      name: '250 entries make 100 + 100 + 50',
      entries: Array.from({ length: 250 }, (_, i) => entry(i)),
      counts: [100, 100, 50],
    },
    {
      name: '30 entries of 20 KiB split by size (12 per event)',
      entries: Array.from({ length: 30 }, (_, i) =>
        entry(i, { content_html: 'x'.repeat(10 * 1024), content_text: 'x'.repeat(10 * 1024) }),
      ),
      counts: [12, 12, 6],
    },
    { name: 'no entries make no event', entries: [], counts: [] },
  ];
  for (const c of sizes) {
    it(`${c.name}, each ≤ 100 entries and ≤ 256 KiB, numbered from the first sequence`, () => {
      const events = build(c.entries, '{"team":"alpha"}', 41);
      assert.deepEqual(
        events.map((e) => e.entryCount),
        c.counts,
      );
      assert.deepEqual(
        events.map((e) => e.sequence),
        c.counts.map((_, i) => 41 + i),
      );
      for (const e of events) {
        assert.ok(Buffer.byteLength(e.body) <= MAX_EVENT_BYTES);
        assert.ok(e.entryCount <= MAX_ENTRIES_PER_EVENT);
        assert.equal(parse(e.body).data.sequence, e.sequence);
      }
      assert.deepEqual(
        events.flatMap((e) => parse(e.body).data.entries.map((x) => x.id)),
        c.entries.map((x) => x.id),
        'every entry once, in order',
      );
    });
  }

  const oversized: { name: string; extra: Partial<EventEntry> }[] = [
    { name: 'a 300 KiB content', extra: { content_html: 'y'.repeat(300 * 1024) } },
    {
      name: '40,000 authors and a 1 MB title',
      extra: {
        authors: Array.from({ length: 40_000 }, (_, i) => `Author ${i}`),
        title: 't'.repeat(1 << 20),
      },
    },
  ];
  for (const c of oversized) {
    it(`sends an entry with ${c.name} cut down to fit, marked truncated`, () => {
      const events = build([entry(1), entry(2, c.extra), entry(3)]);
      for (const e of events)
        assert.ok(
          Buffer.byteLength(e.body) <= MAX_EVENT_BYTES,
          `${Buffer.byteLength(e.body)} bytes`,
        );
      const all = events.flatMap((e) => parse(e.body).data.entries);
      assert.deepEqual(
        all.map((x) => x.id),
        ['key-1', 'key-2', 'key-3'],
      );
      assert.equal(all[1]!.truncated, true);
      for (const field of ['summary', 'summary_html', 'content_html', 'content_text'] as const)
        assert.equal(all[1]![field], null, field);
      assert.equal(all[0]!.truncated, undefined);
    });
  }

  it("has the contract's shape, with the metadata text byte for byte in data.metadata and data.subscription.metadata", () => {
    const metadata = '{"b":1.0,"a":[1e3,"é\\u00e9"],"z":{}}';
    const [e] = build([entry(1)], metadata, 7);
    assert.equal(e!.body.split(metadata).length - 1, 2);
    const body = parse(e!.body) as Body & { data: Record<string, unknown> };
    assert.equal(body.type, 'subscription.entries');
    assert.deepEqual(Object.keys(body).slice(0, 2), ['type', 'schema_version']);
    assert.equal(body.schema_version, 2);
    assert.equal(body.timestamp, now.toISOString());
    assert.deepEqual(Object.keys(body.data), [
      'sequence',
      'subscription',
      'feed',
      'entries',
      'metadata',
    ]);
    assert.deepEqual(body.data.feed, feed);
    // The entry's fields and their order: the OpenAPI test below holds them to the documented Entry schema.
  });

  it('matches the OpenAPI document: the entry and envelope fields are the documented ones, in order', () => {
    const body = parse(build([entry(1)])[0]!.body) as Body & { data: Record<string, unknown> };
    const documented = (name: string) => (SCHEMAS[name] as { required: string[] }).required;
    assert.deepEqual(Object.keys(body.data.entries[0]!), documented('Entry'));
    const payload = SCHEMAS.SubscriptionEntriesPayload as {
      required: string[];
      properties: { data: { required: string[] } };
    };
    assert.deepEqual(Object.keys(body), payload.required);
    assert.deepEqual(Object.keys(body.data), payload.properties.data.required);
    assert.deepEqual(
      Object.keys(JSON.parse(buildTestEvent('e'.repeat(24), now)) as object),
      (SCHEMAS.EndpointTestPayload as { required: string[] }).required,
    );
  });

  it('marks a backfill in data after the entries, and types updated entries, as the OpenAPI document shows them', () => {
    const input = {
      subscription: { id: 's'.repeat(24), url: feed.url, metadata: null },
      feed,
      entries: [entry(1)],
      now,
      firstSequence: 1,
      newId: () => 'id-1',
    };
    const payload = (name: string) =>
      SCHEMAS[name] as { properties: { type: { const: string }; data: { properties: object } } };
    const backfill = parse(buildEntryEvents({ ...input, backfill: true })[0]!.body) as Body & {
      data: Record<string, unknown>;
    };
    assert.equal(backfill.data.backfill, true);
    assert.deepEqual(
      Object.keys(backfill.data),
      Object.keys(payload('SubscriptionEntriesPayload').properties.data.properties),
    );
    const updated = parse(
      buildEntryEvents({ ...input, type: 'subscription.entries_updated' })[0]!.body,
    ) as Body & { data: Record<string, unknown> };
    const documented = payload('SubscriptionEntriesUpdatedPayload');
    assert.equal(updated.type, documented.properties.type.const);
    assert.deepEqual(Object.keys(updated.data), Object.keys(documented.properties.data.properties));
    assert.equal(updated.data.backfill, undefined);
  });

  it('keeps the truncated mark of an entry stored truncated when it is sent again', () => {
    const stored = JSON.parse(entryJson({ ...entry(1), content_html: 'x'.repeat(300_000) })) as {
      truncated?: boolean;
    };
    assert.equal(stored.truncated, true);
    const again = parse(build([stored as EventEntry])[0]!.body) as Body & {
      data: { entries: { truncated?: boolean }[] };
    };
    assert.equal(again.data.entries[0]!.truncated, true);
  });

  it('never sends the text an entry key was derived from', () => {
    const [e] = build([entry(1)]);
    assert.ok(!e!.body.includes('key_source') && !e!.body.includes('never sent'));
  });

  it('writes null metadata when the subscription has none', () => {
    const body = parse(build([entry(1)], null)[0]!.body) as Body & {
      data: { subscription: { metadata: unknown } };
    };
    assert.equal(body.data.metadata, null);
    assert.equal(body.data.subscription.metadata, null);
  });
});

describe('events built one at a time from stored entry texts', () => {
  // Whole, stored cut (too large for the history), and one the history keeps whole but a large envelope does not.
  const stored = [
    entry(1),
    entry(2, { content_html: 'x'.repeat(300_000) }),
    entry(3, { summary: 'y'.repeat(110_000), summary_html: 'z'.repeat(122_000) }),
    ...Array.from({ length: 120 }, (_, i) => entry(10 + i)),
  ].map((e) => entryJson(e));

  for (const metadata of ['{"team":"alpha"}', JSON.stringify({ note: 'm'.repeat(16_000) })]) {
    it(`carry the bytes buildEntryEvents makes of the parsed entries (metadata of ${metadata.length} bytes)`, () => {
      const input = {
        subscription: { id: 's'.repeat(24), url: feed.url, metadata },
        feed,
        now,
        backfill: true,
      };
      const expected = buildEntryEvents({
        ...input,
        entries: stored.map((text) => JSON.parse(text) as EventEntry),
        firstSequence: 1,
        newId: () => 'id',
      }).map((e) => e.body);
      const envelope = envelopeBytes(input);
      assert.equal(
        stored.some((text) => Buffer.byteLength(text) > MAX_EVENT_BYTES - envelope),
        metadata.length > 1000,
        'with the large metadata, an entry stored whole is cut to fit',
      );
      const bodies: string[] = [];
      let texts: string[] = [];
      let bytes = envelope;
      for (const text of stored.map((t) => storedEntryText(t, MAX_EVENT_BYTES - envelope))) {
        const size = Buffer.byteLength(text);
        if (startsNewEvent(texts.length, bytes, size)) {
          bodies.push(entryEventBody(input, bodies.length + 1, texts));
          texts = [];
          bytes = envelope;
        }
        texts.push(text);
        bytes += size + 1;
      }
      bodies.push(entryEventBody(input, bodies.length + 1, texts));
      assert.deepEqual(bodies, expected);
    });
  }
});

describe('buildTestEvent', () => {
  it('is an endpoint.test envelope naming the endpoint', () => {
    assert.deepEqual(JSON.parse(buildTestEvent('e'.repeat(24), now)), {
      type: 'endpoint.test',
      schema_version: 2,
      timestamp: now.toISOString(),
      data: { endpoint: { id: 'e'.repeat(24) }, message: 'This is a test event from feedsub.' },
    });
  });
});

describe('deliveryOrder', () => {
  it('puts the oldest entry first (feeds list newest first) without changing its input', () => {
    const input = [3, 2, 1];
    assert.deepEqual(deliveryOrder(input), [1, 2, 3]);
    assert.deepEqual(input, [3, 2, 1]);
  });
});

describe('buildHealthEvent', () => {
  const healthFeed = { ...feed, feed_url: 'https://example.com/moved.xml', status: 'error' };
  const events: FeedHealthEvent[] = [
    {
      type: 'feed.failing',
      consecutive_failures: 3,
      last_error: 'fetch: the server answered 500',
      last_http_status: 500,
      last_error_at: now.toISOString(),
      last_success_at: null,
      next_poll_at: now.toISOString(),
    },
    {
      type: 'feed.recovered',
      recovered_from: 'feed.failing',
      alerted_at: now.toISOString(),
      consecutive_failures: 4,
      last_error: 'fetch: timed out',
      last_http_status: 200,
    },
    { type: 'feed.gone', last_http_status: 410, last_error: 'gone' },
    { type: 'feed.moved', from: 'https://example.com/feed.xml', to: 'https://example.com/x' },
    {
      type: 'feed.identity_hold',
      held_entries: 12,
      identity_key: 'guid',
      release: {
        method: 'POST',
        path: '/v1/feeds/x/accept-identity-change',
        actions: ['deliver', 'discard'],
      },
    },
    {
      type: 'feed.over_budget',
      held_at: now.toISOString(),
      used_bytes: 2_000_000,
      budget_bytes: 1_048_576,
      feed_bytes: 120_000,
    },
    {
      type: 'feed.within_budget',
      held_at: now.toISOString(),
      used_bytes: 900_000,
      budget_bytes: 1_048_576,
    },
  ];
  const documentedName = (type: string) =>
    `${type
      .replace(/^feed\./, 'Feed.')
      .split(/[._]/)
      .map((w) => w[0]!.toUpperCase() + w.slice(1))
      .join('')}Payload`;

  it('documents one webhook payload per feed event type', () => {
    assert.deepEqual(
      FEED_EVENT_TYPES.map((t) => documentedName(t)),
      events.map((e) => documentedName(e.type)),
    );
    for (const type of FEED_EVENT_TYPES) assert.ok(SCHEMAS[documentedName(type)], type);
  });

  for (const event of events) {
    it(`${event.type}: the entries envelope in the documented order, the metadata text byte for byte`, () => {
      const metadata = '{"z":1,"a":[1.0,2e3]}';
      const body = buildHealthEvent({
        event,
        subscription: { id: 's'.repeat(24), url: feed.url, metadata },
        feed: healthFeed,
        now,
        sequence: 9,
      });
      assert.equal(body.split(metadata).length - 1, 2, 'in data.subscription and data.metadata');
      const parsed = JSON.parse(body) as {
        type: string;
        schema_version: number;
        data: Record<string, unknown>;
      };
      const schema = SCHEMAS[documentedName(event.type)] as {
        required: string[];
        properties: {
          type: { const: string };
          data: { required: string[]; properties: Record<string, unknown> };
        };
      };
      assert.deepEqual(Object.keys(parsed), schema.required);
      assert.equal(parsed.type, schema.properties.type.const);
      assert.equal(parsed.schema_version, SCHEMA_VERSION);
      assert.deepEqual(Object.keys(parsed.data), schema.properties.data.required);
      assert.equal(parsed.data.sequence, 9);
      assert.deepEqual(parsed.data.subscription, {
        id: 's'.repeat(24),
        url: feed.url,
        metadata: { z: 1, a: [1, 2000] },
      });
      assert.deepEqual(
        Object.keys(parsed.data.feed as object),
        (SCHEMAS.HealthFeed as { required: string[] }).required,
      );
      const { type, ...fields } = event;
      for (const [k, v] of Object.entries(fields)) assert.deepEqual(parsed.data[k], v, k);
    });
  }

  it('writes null metadata when the subscription has none', () => {
    const body = buildHealthEvent({
      event: events[2]!,
      subscription: { id: 's'.repeat(24), url: feed.url, metadata: null },
      feed: healthFeed,
      now,
      sequence: 1,
    });
    const parsed = JSON.parse(body) as { data: { metadata: unknown; subscription: object } };
    assert.equal(parsed.data.metadata, null);
  });
});
