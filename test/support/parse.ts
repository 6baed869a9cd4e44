// Parsing a feed text through a parse pool, as the poller reads a fetched body: for tests that check what a worker
// thread makes of hostile documents, within a deadline a hang cannot outlive.
import { EntryList } from '../../src/feed/entry-list.ts';
import type { ParsePool } from '../../src/feed/parse/pool.ts';
import type { ParsedFeed, ParseOptions } from '../../src/feed/types.ts';

/** Reads `text` as a feed on `pool` by `timeoutMs`; the parsed feed, or throws with the pool's error reply. */
export async function parseOn(
  pool: ParsePool,
  text: string,
  parse: ParseOptions,
  timeoutMs = 20_000,
): Promise<ParsedFeed> {
  const reply = await pool.read(
    {
      bytes: new Uint8Array(Buffer.from(text)),
      contentType: 'application/xml; charset=utf-8',
      mode: 'feed',
      parse,
      keyBase: parse.baseUrl,
    },
    performance.now() + timeoutMs,
  );
  if (reply.kind !== 'feed') throw new Error(`parse pool: ${JSON.stringify(reply)}`);
  return { ...reply.parsed, entries: new EntryList(reply.entries, reply.publishedAt).all() };
}
