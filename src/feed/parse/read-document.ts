// Reading a fetched document (bytes → text → feed or page → entries and their keys), on a worker thread of the parse
// pool (src/feed/parse/pool.ts) or inline for small bodies: the same function either way.
import { parentPort } from 'node:worker_threads';
import { contentHash } from '../identity/content-hash.ts';
import { decodeFeed } from './decode.ts';
import { discoverFeedLinks, type DiscoveredFeed } from '../fetch/discover.ts';
import { entryIdentities, type EntryIdentity } from '../identity/keys.ts';
import { FeedParseError, parseFeed, notFeedByHead, sniffDocument } from './parse.ts';
import { packEntries, transferOf, type PackedEntries } from '../entry-list.ts';
import type { FeedMeta, ParseOptions } from '../types.ts';

/** One fetched document to read. `mode`: 'page-or-feed' (a subscribed URL: an HTML page comes back as the feed links
 *  it advertises), 'feed' (a feed URL known as such: parse whatever came), 'candidate' (a link found on a page: only a
 *  document that sniffs as a feed is parsed). `parse` goes to parseFeed as given (its baseUrl is the final URL). */
export type DocumentRequest = {
  bytes: Uint8Array;
  contentType: string | null;
  mode: 'page-or-feed' | 'feed' | 'candidate';
  parse: ParseOptions;
  /** The URL entry links are keyed against (feed/identity/keys.ts KeyBase.keyBase). */
  keyBase: string;
};
export type DocumentReply =
  | {
      kind: 'feed';
      parsed: FeedMeta;
      /** The entries, packed (feed/entry-list.ts): the reply transfers them rather than copying. */
      entries: PackedEntries;
      publishedAt: (string | null)[];
      identities: EntryIdentity[];
      contentHashes: string[];
    }
  | { kind: 'page'; links: DiscoveredFeed[] }
  | { kind: 'not-feed' }
  | { kind: 'error'; parseError: boolean; message: string };

export type ParseRequest = { id: number; doc: DocumentRequest };
export type ParseReply = { type: 'ready' } | { type: 'result'; id: number; reply: DocumentReply };

/** Serves parse requests on this worker's parentPort (posting 'ready' first); does nothing on the main thread. A
 *  bundled build calls it from its own worker entry. */
export function runParseWorker(): void {
  const port = parentPort;
  if (!port) return;
  port.on('message', (req: ParseRequest) => {
    const reply = readDocument(req.doc);
    port.postMessage(
      { type: 'result', id: req.id, reply } satisfies ParseReply,
      reply.kind === 'feed' ? transferOf(reply.entries) : [],
    );
  });
  port.postMessage({ type: 'ready' } satisfies ParseReply);
}

// How much of a long body is decoded first to look for its root element (parse.ts reads as many characters).
const HEAD_BYTES = 64 * 1024;

/** Decodes, sniffs and parses one document, and keys its entries. Never throws: a failure is an 'error' reply
 *  (`parseError` when parseFeed refused the text as a feed). */
export function readDocument(req: DocumentRequest): DocumentReply {
  try {
    const refused = req.bytes.length > HEAD_BYTES ? refusedByHead(req) : null;
    if (refused) return refused;
    const text = decodeFeed(req.bytes, req.contentType).text;
    if (req.mode !== 'feed') {
      const sniffed = sniffDocument(text);
      if (req.mode === 'page-or-feed' && sniffed === 'html')
        return { kind: 'page', links: discoverFeedLinks(text, req.parse.baseUrl) };
      if (req.mode === 'candidate' && sniffed !== 'feed') return { kind: 'not-feed' };
    }
    const { entries, ...parsed } = parseFeed(text, req.parse);
    const base = { keyBase: req.keyBase, documentUrl: req.parse.baseUrl };
    return {
      kind: 'feed',
      parsed,
      entries: packEntries(entries),
      publishedAt: entries.map((e) => e.published_at),
      identities: entryIdentities(entries, base),
      contentHashes: entries.map(contentHash),
    };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { kind: 'error', parseError: err instanceof FeedParseError, message };
  }
}

/** The reply for a long body whose head already says it is not a feed (and not a page to read links from), before the
 *  whole of it is decoded: a 10 MiB body of random bytes decodes to 20 MB of text, most of a small parse heap
 *  (poll.parse_heap_mb) before anything is read. Null when the head decides nothing. */
function refusedByHead(req: DocumentRequest): DocumentReply | null {
  const head = decodeFeed(req.bytes.subarray(0, HEAD_BYTES), req.contentType).text;
  if (req.mode === 'page-or-feed' && sniffDocument(head) === 'html') return null;
  const message = notFeedByHead(head);
  if (message === null) return null;
  return req.mode === 'candidate'
    ? { kind: 'not-feed' }
    : { kind: 'error', parseError: true, message };
}
