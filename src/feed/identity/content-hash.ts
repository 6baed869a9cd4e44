// Which version of an entry a document carries: computed where the document is read (feed/parse/read-document.ts),
// on the parse thread for a large body, so a poll transaction compares hashes instead of hashing every entry it
// already knows.
import { finishTexts } from '../parse/entry.ts';
import { shortHash } from './short-hash.ts';
import type { Entry } from '../types.ts';

/** The hash that tells a new version of an entry: its title, summary, content and updated date (docs/webhooks.md ›
 *  Entry history, backfill and updates: updated entries); nothing else (a new image URL or category is not an update).
 *  Stored hashes were made this way: keep it. A slim entry (feed/slim.ts) answers the hash of its whole self, an
 *  unfinished one the hash its texts render to. */
export function contentHash(entry: Entry): string {
  if (entry.slim !== undefined) return entry.slim.hash;
  if (entry.unfinished !== undefined)
    return entry.unfinished.hash ?? contentHash(finishTexts(entry));
  const fields = [entry.title, entry.summary_html, entry.content_html, entry.updated_at];
  return shortHash(JSON.stringify(fields));
}
