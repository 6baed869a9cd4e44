// The parser-upgrade pass: the first parse of a feed by a newer parser may show entries the older one could not read
// (a stray '<' that cut the document, an item only an extension element described). They are old entries, not new:
// they are recorded as seen, and only entries that are plainly new are sent.
import type { FeedRow } from '../../store/feeds.ts';
import type { Fresh } from './keys.ts';

/** What the feed's state says about the last parse by the older parser. */
export type UpgradeContext = Pick<
  FeedRow,
  'parser_version' | 'degraded' | 'entry_count' | 'last_success_at'
>;

/**
 * Splits a document's unseen entries on a parser upgrade into those revealed by the newer parser (recorded, never sent)
 * and those to send. An entry is revealed when it is dated before the last successful poll, or when it is undated and
 * the older parser had trouble with the feed (its last parse was degraded, or found no entry at all): there, an undated
 * unseen entry is far more likely an old one read for the first time than one published since the last poll. A feed
 * the older parser read cleanly sends its undated unseen entries, as on any poll. Without an upgrade, nothing is
 * revealed. Pure.
 */
export function splitRevealed(
  fresh: Fresh[],
  feed: UpgradeContext,
  parserVersion: number,
): { revealed: Fresh[]; toSend: Fresh[] } {
  if (feed.parser_version >= parserVersion || feed.last_success_at === null)
    return { revealed: [], toSend: fresh };
  const troubled = feed.degraded !== null || feed.entry_count === 0;
  const lastSuccess = feed.last_success_at;
  const revealed: Fresh[] = [];
  const toSend: Fresh[] = [];
  for (const f of fresh) {
    const published = f.entry.published_at;
    const old = published === null ? troubled : published < lastSuccess;
    (old ? revealed : toSend).push(f);
  }
  return { revealed, toSend };
}
