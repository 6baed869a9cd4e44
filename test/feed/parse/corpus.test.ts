// Walks the whole real-world corpus: every file decodes and either parses or is rejected with FeedParseError.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { toEventEntry } from '../../../src/actions/entry-events.ts';
import { defaultConfig } from '../../../src/config.ts';
import { decodeFeed } from '../../../src/feed/parse/decode.ts';
import { contentHash } from '../../../src/feed/identity/content-hash.ts';
import { entryKeys } from '../../../src/feed/identity/keys.ts';
import { finishTexts } from '../../../src/feed/parse/entry.ts';
import { FeedParseError, parseFeed, sniffDocument } from '../../../src/feed/parse/parse.ts';
import type { ParsedFeed } from '../../../src/feed/types.ts';
import { entryJson } from '../../../src/webhook/event.ts';
import { CORPUS_DIR } from '../../support/corpus.ts';

const CORPUS = CORPUS_DIR;
const ORIGIN = 'http://127.0.0.1:8097/';

type CorpusFile = {
  path: string;
  rel: string;
  contentType: string | null;
  contentLocation: string | null;
};

function walk(dir: string, depth = 0): string[] {
  assert.ok(depth < 10, 'corpus tree deeper than expected');
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = join(dir, d.name);
    if (d.isDirectory()) return walk(p, depth + 1);
    return d.name === 'SOURCES.md' || d.name === 'LICENSE' || d.name.startsWith('.') ? [] : [p];
  });
}

// feedparser cases carry their HTTP response headers in the leading comment ("Header: Name: value").
function describeFile(path: string): CorpusFile {
  const rel = relative(CORPUS, path);
  const probe = decodeFeed(readFileSync(path), null).text.slice(0, 2048);
  const header = (name: string) =>
    new RegExp(`Header:\\s*${name}:\\s*(.*)`, 'i').exec(probe)?.[1]?.trim() ?? null;
  const byExtension = rel.endsWith('.json')
    ? 'application/feed+json'
    : rel.endsWith('.html')
      ? 'text/html'
      : 'application/xml';
  const fallback = rel.startsWith('feedparser/') ? 'text/xml' : byExtension;
  return {
    path,
    rel,
    contentType: header('Content-type') ?? fallback,
    contentLocation: header('Content-Location'),
  };
}

function parseFile(f: CorpusFile): ParsedFeed {
  const { text } = decodeFeed(readFileSync(f.path), f.contentType);
  return parseFeed(text, { baseUrl: ORIGIN + f.rel, contentLocation: f.contentLocation });
}

const files = walk(CORPUS).sort().map(describeFile);

// Each file's first parse (the feed, or what it threw), made once and read by every test that only reads it.
const firstParses = new Map<string, { feed: ParsedFeed } | { error: unknown }>();

/** parseFile(f)'s first result: the same feed each time, or the same error thrown again. */
function parsedOnce(f: CorpusFile): ParsedFeed {
  let first = firstParses.get(f.path);
  if (!first) {
    try {
      first = { feed: parseFile(f) };
    } catch (error) {
      first = { error };
    }
    firstParses.set(f.path, first);
  }
  if ('error' in first) throw first.error;
  return first.feed;
}

test('the corpus holds the 275 documented files', () => {
  assert.equal(files.length, 275);
});

test('every corpus file either parses or is rejected with FeedParseError, and HTML is rejected', () => {
  const rejected = new Map<string, string[]>();
  let parsed = 0;
  let degraded = 0;
  let entries = 0;
  const degradedFiles: string[] = [];
  for (const f of files) {
    const { text } = decodeFeed(readFileSync(f.path), f.contentType);
    try {
      const feed = parsedOnce(f);
      parsed++;
      entries += feed.entries.length;
      if (feed.degraded) {
        degraded++;
        degradedFiles.push(`${f.rel}: ${feed.degraded}`);
      }
      assert.notEqual(sniffDocument(text), 'html', `${f.rel} parsed but sniffs as HTML`);
    } catch (err) {
      assert.ok(err instanceof FeedParseError, `${f.rel} threw ${String(err)}`);
      const reason = err.message.replace(/\(.*\)|<[^>]*>|line \d+|\d+/g, '…');
      rejected.set(reason, [...(rejected.get(reason) ?? []), f.rel]);
      if (f.rel.endsWith('.html'))
        assert.equal(sniffDocument(text), 'html', `${f.rel} should sniff as HTML`);
    }
  }
  const rejectedCount = [...rejected.values()].reduce((n, l) => n + l.length, 0);
  console.log(
    `corpus: files=${files.length} parsed=${parsed} (entries=${entries}) degraded=${degraded} rejected=${rejectedCount}`,
  );
  for (const d of degradedFiles) console.log(`  degraded ${d}`);
  for (const [reason, list] of rejected)
    console.log(`  rejected ${list.length} × ${reason}: ${list.join(', ')}`);
  assert.equal(parsed + rejectedCount, files.length);
  for (const f of files.filter((x) => x.rel.endsWith('.html'))) {
    assert.ok(
      [...rejected.values()].some((l) => l.includes(f.rel)),
      `${f.rel} (HTML) should be rejected`,
    );
  }
});

test('keys are stable across two parses of every parsed corpus file', () => {
  for (const f of files) {
    let first: ParsedFeed;
    try {
      first = parsedOnce(f);
    } catch {
      continue;
    }
    const url = ORIGIN + f.rel;
    assert.deepEqual(entryKeys(parseFile(f).entries, url), entryKeys(first.entries, url), f.rel);
    // Entries identical in every field are one entry shown twice and share a key; any two that differ do not.
    assert.equal(
      new Set(entryKeys(first.entries, url)).size,
      new Set(first.entries.map((e) => JSON.stringify(e))).size,
      `${f.rel}: keys collide`,
    );
  }
});

test('across the corpus, entry HTML is sanitized with every URL absolute, and titles are one line', () => {
  let html = 0;
  for (const f of files) {
    let feed: ParsedFeed;
    try {
      feed = parsedOnce(f);
    } catch {
      continue;
    }
    for (const e of feed.entries) {
      for (const field of [e.summary_html, e.content_html]) {
        if (field === null) continue;
        html++;
        assert.doesNotMatch(field, /<(script|style|iframe|object|embed|form)\b/i, f.rel);
        for (const [tag] of field.matchAll(/<[a-z][^>]*>/gi)) {
          assert.doesNotMatch(tag, /\s(on\w+|style|class|id)=/i, `${f.rel}: ${tag}`);
          for (const m of tag.matchAll(/\s(?:href|src|poster|cite)="([^"]*)"/g))
            assert.match(m[1]!, /^(https?:|mailto:)/, `${f.rel}: ${tag}`);
        }
      }
      assert.doesNotMatch(e.title ?? '', /\n/, `${f.rel}: a title is one line`);
    }
  }
  assert.ok(html > 1000, `${html} HTML fields checked`);
});

test("the per-feed retention defaults keep several times the largest real feed's document whole", () => {
  // A hold stores each entry as its JSON (actions/ingest/identity.ts), the history as webhooks carry it (entry-history.ts).
  let most = { entries: 0, held: 0, history: 0 };
  for (const f of files) {
    let feed: ParsedFeed;
    try {
      feed = parsedOnce(f);
    } catch {
      continue;
    }
    const keys = entryKeys(feed.entries, ORIGIN + f.rel);
    const bytes = (each: (i: number) => string) =>
      feed.entries.reduce((n, _, i) => n + Buffer.byteLength(each(i)), 0);
    most = {
      entries: Math.max(most.entries, feed.entries.length),
      held: Math.max(
        most.held,
        bytes((i) => JSON.stringify(feed.entries[i])),
      ),
      history: Math.max(
        most.history,
        bytes((i) => entryJson(toEventEntry(keys[i]!, feed.entries[i]!, new Date(0)))),
      ),
    };
  }
  console.log(
    `corpus: at most ${most.entries} entries in a document, ${most.held} bytes of them held, ${most.history} kept`,
  );
  const r = defaultConfig().retention;
  assert.ok(r.held_entries_per_feed >= 10 * most.entries, 'held_entries_per_feed');
  assert.ok(r.held_bytes_per_feed >= 3 * most.held, 'held_bytes_per_feed');
  assert.ok(r.entry_history_bytes_per_feed >= 3 * most.history, 'entry_history_bytes_per_feed');
  assert.ok(r.entry_history_per_feed >= most.entries, 'entry_history_per_feed');
});

test('corpus files with stray markup inserted are repaired or rejected with FeedParseError, never anything else', () => {
  // A seeded generator (the same mutations on every run): up to three insertions of markup debris after the root tag.
  let seed = 12;
  const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const debris = [
    '<',
    '&',
    '>',
    '</',
    '<!--',
    '<![CDATA[',
    ']]>',
    '"',
    "'",
    '</item>',
    '<item>',
    '<!',
    '<?',
    '<b',
  ];
  let parsed = 0;
  let runs = 0;
  for (const f of files.filter((x) => /\.(xml|rss|atom|rdf)$/.test(x.rel))) {
    const { text } = decodeFeed(readFileSync(f.path), f.contentType);
    const start = text.search(/<(rss|feed|rdf:RDF)\b/);
    if (start === -1) continue;
    let mutated = text;
    for (let k = 0; k < 1 + Math.floor(random() * 3); k++) {
      const at = start + 1 + Math.floor(random() * (mutated.length - start - 1));
      mutated =
        mutated.slice(0, at) + debris[Math.floor(random() * debris.length)] + mutated.slice(at);
    }
    runs++;
    try {
      parseFeed(mutated, { baseUrl: ORIGIN + f.rel });
      parsed++;
    } catch (err) {
      assert.ok(err instanceof FeedParseError, `${f.rel}: ${String(err)}`);
    }
  }
  console.log(`mutated corpus: ${parsed} of ${runs} parsed`);
  assert.ok(parsed > runs / 2, `${parsed} of ${runs} parsed`);
});

test('every corpus entry read unrendered, then rendered where it is read, equals the entry read whole, to the byte', () => {
  let compared = 0;
  for (const f of files) {
    let whole: ParsedFeed;
    try {
      whole = parsedOnce(f);
    } catch {
      continue;
    }
    const { text } = decodeFeed(readFileSync(f.path), f.contentType);
    const deferred = parseFeed(text, {
      baseUrl: ORIGIN + f.rel,
      contentLocation: f.contentLocation,
      deferTexts: true,
    });
    assert.equal(deferred.entries.length, whole.entries.length, f.rel);
    deferred.entries.forEach((e, i) => {
      const rendered = finishTexts(e);
      const at = new Date('2026-01-01T00:00:00.000Z');
      assert.equal(
        entryJson(toEventEntry('k', rendered, at)),
        entryJson(toEventEntry('k', whole.entries[i]!, at)),
        `${f.rel} entry ${i}`,
      );
      assert.equal(contentHash(rendered), contentHash(whole.entries[i]!), `${f.rel} entry ${i}`);
      assert.deepEqual(rendered, whole.entries[i], `${f.rel} entry ${i}`);
      compared += 1;
    });
  }
  assert.ok(compared > 500, `${compared} entries compared`);
});
