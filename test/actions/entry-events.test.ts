// Entries as events carry them: the key as id, the first-seen time for an undated entry, v1 held entries typed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toEventEntry } from '../../src/actions/entry-events.ts';
import type { Entry } from '../../src/feed/types.ts';

const seen = new Date('2026-02-01T00:00:00.000Z');

test('an entry held by version 1 (untyped summary and content) is typed, sanitized and made absolute on release', () => {
  // The JSON a version 1 poller stored in held_entries for a GUID-churn hold.
  const v1 = JSON.parse(
    JSON.stringify({
      guid: 'g',
      url: 'https://blog.example/posts/1',
      title: 'A &amp; <b>B</b>',
      summary: '<p onclick="x()">Short <img src="i.png"></p>',
      content: '<p>Long<script>alert(1)</script></p>',
      authors: ['Ada'],
      categories: [],
      enclosures: [],
      published_at: null,
      updated_at: null,
    }),
  ) as Entry;
  const e = toEventEntry('k'.repeat(32), v1, seen);
  assert.deepEqual(
    {
      title: e.title,
      summary: e.summary,
      summary_html: e.summary_html,
      content_html: e.content_html,
      content_text: e.content_text,
      published_at: e.published_at,
    },
    {
      title: 'A & B',
      summary: 'Short',
      summary_html: '<p>Short <img src="https://blog.example/posts/i.png" /></p>',
      content_html: '<p>Long</p>',
      content_text: 'Long',
      published_at: seen.toISOString(),
    },
  );
  assert.equal('content' in e, false);
});

test('an entry parsed by this version passes as it is, with its key as id', () => {
  const entry: Entry = {
    guid: 'g',
    url: null,
    title: 't',
    summary: null,
    summary_html: null,
    content_html: '<p>c</p>',
    content_text: 'c',
    image: null,
    authors: [],
    categories: [],
    enclosures: [],
    published_at: '2026-01-01T00:00:00.000Z',
    updated_at: null,
    key_source: { title: 't', body: '<p>c</p>' },
  };
  assert.deepEqual(toEventEntry('k', entry, seen), { id: 'k', ...entry });
});
