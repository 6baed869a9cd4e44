// Prints the webhook payload of every entry of the test corpus, one line each, so two versions of the parser can be
// compared with diff. Usage: tsx scripts/corpus-payloads.ts > out.txt
//
// Each file is read the way test/feed/parse/corpus.test.ts reads it (feedparser's `Header:` comments give the content
// type and Content-Location, as its test server would send them). A file gives one line of its feed-level fields (or
// its error), then one line per entry: its path, its position, and entryJson(toEventEntry(key, entry, date)) with the
// key a new feed records and a fixed first-seen date, so the output is the same on every run.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { toEventEntry } from '../src/actions/entry-events.ts';
import { entryKeys } from '../src/feed/identity/keys.ts';
import { decodeFeed } from '../src/feed/parse/decode.ts';
import { parseFeed } from '../src/feed/parse/parse.ts';
import { entryJson } from '../src/webhook/event.ts';
import { CORPUS_DIR } from '../test/support/corpus.ts';

// The address feedparser's test server serves the cases from, which their expectations about base URLs assume.
const ORIGIN = 'http://127.0.0.1:8097/';
const FIRST_SEEN = new Date('2026-01-01T00:00:00.000Z');

/** The corpus files under `dir`, without the licence and sources notes. */
function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = join(dir, d.name);
    if (d.isDirectory()) return walk(p);
    return d.name === 'SOURCES.md' || d.name === 'LICENSE' || d.name.startsWith('.') ? [] : [p];
  });
}

/** The lines of one corpus file: its feed-level fields or its error, then its entries. */
function payloadLines(path: string): string[] {
  const rel = relative(CORPUS_DIR, path);
  const bytes = readFileSync(path);
  const probe = decodeFeed(bytes, null).text.slice(0, 2048);
  const header = (name: string) =>
    new RegExp(`Header:\\s*${name}:\\s*(.*)`, 'i').exec(probe)?.[1]?.trim() ?? null;
  const fallback = rel.startsWith('feedparser/')
    ? 'text/xml'
    : rel.endsWith('.json')
      ? 'application/feed+json'
      : rel.endsWith('.html')
        ? 'text/html'
        : 'application/xml';
  const { text } = decodeFeed(bytes, header('Content-type') ?? fallback);
  const url = ORIGIN + rel;
  let feed;
  try {
    feed = parseFeed(text, { baseUrl: url, contentLocation: header('Content-Location') });
  } catch (err) {
    return [`${rel}\tfeed\t${JSON.stringify({ error: String(err) })}`];
  }
  const { title, site_url, format } = feed;
  const keys = entryKeys(feed.entries, url);
  return [
    `${rel}\tfeed\t${JSON.stringify({ title, site_url, format })}`,
    ...feed.entries.map(
      (e, i) => `${rel}\t${i}\t${entryJson(toEventEntry(keys[i]!, e, FIRST_SEEN))}`,
    ),
  ];
}

for (const path of walk(CORPUS_DIR).sort())
  process.stdout.write(payloadLines(path).join('\n') + '\n');
