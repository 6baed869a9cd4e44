// Reading a fetched document (bytes → text → feed or page → entries and their keys), on a worker thread of the parse
// pool (src/feed/parse/pool.ts) or inline for small bodies: the same function either way.
import { parentPort } from 'node:worker_threads';
import { contentHash } from '../identity/content-hash.ts';
import { decodeFeed } from './decode.ts';
import { discoverFeedLinks, type DiscoveredFeed } from '../fetch/discover.ts';
import {
  entryIdentities,
  sourcesFrom,
  type EntryIdentity,
  type IdentityKey,
} from '../identity/keys.ts';
import { finishTexts, sourceHash } from './entry.ts';
import {
  FeedParseError,
  PARSER_VERSION,
  parseFeed,
  notFeedByHead,
  sniffDocument,
} from './parse.ts';
import { packEntries, transferOf, type PackedEntries } from '../entry-list.ts';
import { slimEntry } from '../slim.ts';
import { lowerThisThread, PARSE_THREAD_NICE } from '../../thread-priority.ts';
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
  /** What the feed's history holds (a feed past its baseline): its entries this document still shows unchanged are
   *  not rendered here (knownEntries). */
  known?: KnownEntries;
};
/** A feed's stored entries as a document's reading matches them: the source its keys come from (FeedRow.identity_key)
 *  and, for each stored entry with a source hash, that hash, its key and its content hash. */
export type KnownEntries = { identityKey: IdentityKey; rows: [string, string, string][] };
export type DocumentReply =
  | {
      kind: 'feed';
      parsed: FeedMeta;
      /** The entries, packed (feed/entry-list.ts): the reply transfers them rather than copying. */
      entries: PackedEntries;
      publishedAt: (string | null)[];
      identities: EntryIdentity[];
      contentHashes: string[];
      /** Each entry's source hash (feed/parse/entry.ts sourceHash); null for an entry read finished (JSON Feed). */
      sourceHashes: (string | null)[];
    }
  | { kind: 'page'; links: DiscoveredFeed[] }
  | { kind: 'not-feed' }
  | { kind: 'error'; parseError: boolean; message: string };

export type ParseRequest = { id: number; doc: DocumentRequest };
export type ParseReply = { type: 'ready' } | { type: 'result'; id: number; reply: DocumentReply };

/** Serves parse requests on this worker's parentPort (posting 'ready' first), at a priority below the event loop's
 *  (thread-priority.ts); does nothing on the main thread. A bundled build calls it from its own worker entry. */
export function runParseWorker(): void {
  const port = parentPort;
  if (!port) return;
  lowerThisThread(PARSE_THREAD_NICE);
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
    const { entries: read, ...parsed } = parseFeed(text, { ...req.parse, deferTexts: true });
    const base = { keyBase: req.keyBase, documentUrl: req.parse.baseUrl };
    const identities = entryIdentities(read, base);
    const sourceHashes = read.map((e) => (e.unfinished ? sourceHash(e, PARSER_VERSION) : null));
    const known = knownHashes(req.known, identities, sourceHashes);
    const entries = read.map((e, i) => {
      const hash = known[i];
      return hash === undefined ? finishTexts(e) : { ...e, unfinished: { ...e.unfinished!, hash } };
    });
    const contentHashes = entries.map(contentHash);
    return {
      kind: 'feed',
      parsed,
      entries: packEntries(entries.map((e, i) => slimEntry(e, contentHashes[i]!))),
      publishedAt: entries.map((e) => e.published_at),
      identities,
      contentHashes,
      sourceHashes,
    };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { kind: 'error', parseError: err instanceof FeedParseError, message };
  }
}

/**
 * The content hash of each entry the feed's history holds as it is (undefined for the others): its source hash is
 * stored, with the key the entry is recorded under, so its texts would render to that entry's content hash. Such an
 * entry is left unrendered, and is rendered only if the record reads it after all (EntryList.at). The key must be the
 * one the entry's record takes, the first of its keys from the feed's source on, and no other entry of the document
 * may share it: an entry that the record keys otherwise is unseen, and reading it would render it on the main thread.
 */
function knownHashes(
  known: KnownEntries | undefined,
  identities: EntryIdentity[],
  sourceHashes: (string | null)[],
): (string | undefined)[] {
  if (known === undefined || known.rows.length === 0) return [];
  const stored = new Map(known.rows.map(([source, key, hash]) => [`${source}:${key}`, hash]));
  const sources = sourcesFrom(known.identityKey);
  const keys = identities.map((id) => sources.map((s) => id.keys[s]).find((k) => k !== null));
  const uses = new Map<string, number>();
  for (const id of identities)
    for (const k of Object.values(id.keys)) if (k !== null) uses.set(k, (uses.get(k) ?? 0) + 1);
  return keys.map((key, i) => {
    const source = sourceHashes[i];
    if (key === undefined || source === null || uses.get(key) !== 1) return undefined;
    return stored.get(`${source}:${key}`);
  });
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
