// A document a WebSub hub pushed (its signature checked by the callback, http/websub.ts), read like a fetched one (off
// the main thread when a parse pool reads it) and stored through the same entry path as a poll (entries.ts), with
// nothing of a fetch's state: a push says nothing about whether the feed URL answers.
import { transaction, type Ctx } from '../../context.ts';
import { EntryList } from '../../feed/entry-list.ts';
import { refreshTarget, type FeedDocument } from '../../feed/fetch/refresh.ts';
import type { DocumentReply, DocumentRequest } from '../../feed/parse/read-document.ts';
import type { Logger } from '../../log.ts';
import { getFeed, lockFeed } from '../../store/feeds.ts';
import { recordPushedDocument } from '../../store/feeds-push.ts';
import { feedHasActiveSubscription } from '../../store/subscriptions.ts';
import { updateWebSub } from '../../store/websub-subscriptions.ts';
import { storeWithinBudget } from '../budget.ts';
import { storeEntries } from './entries.ts';

/** What reading a pushed body needs: a reader (the parse pool, or readDocument inline), within a deadline, and where
 *  its outcome is logged. */
export type PushDeps = {
  read: (doc: DocumentRequest, deadline: number) => Promise<DocumentReply>;
  /** A pushed document is read within this (poll.timeout_seconds). */
  timeoutMs: number;
  logger: Logger;
};
/** What became of a verified push. */
export type PushResult =
  { kind: 'stored'; newEntries: number; events: number } | { kind: 'ignored'; reason: string };
/** A push whose signature was checked. */
export type Push = { feedId: string; body: Uint8Array; contentType: string | null };

/** Reads a pushed body as the feed's document, stores its entries in one transaction, and logs what became of it,
 *  one line. A feed awaiting its baseline, or with no active subscription, takes nothing from a push: its next poll
 *  decides. Never throws for a bad body: it is 'ignored' with the reason. */
export async function receivePush(ctx: Ctx, deps: PushDeps, push: Push): Promise<PushResult> {
  const result = await readAndStore(ctx, deps, push);
  const fields = { feed_id: push.feedId, bytes: push.body.byteLength };
  if (result.kind === 'stored')
    deps.logger.info('websub: content stored', {
      ...fields,
      new_entries: result.newEntries,
      events: result.events,
    });
  else deps.logger.info('websub: content ignored', { ...fields, reason: result.reason });
  return result;
}

async function readAndStore(ctx: Ctx, deps: PushDeps, push: Push): Promise<PushResult> {
  const feed = await getFeed(ctx.db, push.feedId);
  if (feed === undefined) return { kind: 'ignored', reason: 'unknown feed' };
  const seenAt = ctx.clock.now();
  const target = refreshTarget(feed);
  const reply = await deps.read(
    {
      bytes: push.body,
      contentType: push.contentType,
      mode: 'feed',
      parse: { baseUrl: feed.fetch_url, contentLocation: null },
      keyBase: target.keyBase,
    },
    performance.now() + deps.timeoutMs,
  );
  if (reply.kind !== 'feed')
    return { kind: 'ignored', reason: reply.kind === 'error' ? reply.message : 'not a feed' };
  const doc: FeedDocument = {
    parsed: reply.parsed,
    entries: new EntryList(reply.entries, reply.publishedAt),
    identities: reply.identities,
    contentHashes: reply.contentHashes,
    sourceHashes: reply.sourceHashes,
    base: { keyBase: target.keyBase, documentUrl: feed.fetch_url },
  };
  const stored = await transaction(ctx, async (tx) => storePushed(tx, push.feedId, doc, seenAt));
  if (stored === undefined)
    return {
      kind: 'ignored',
      reason: 'feed awaiting its baseline, or without room in its storage budget',
    };
  if (stored.events > 0) ctx.nudgeDeliverer();
  return { kind: 'stored', ...stored };
}

/** Stores a pushed document's entries for the feed as re-read in this transaction, and notes the push; undefined when
 *  the feed is gone, awaits its baseline, has no active subscription, or is held for its application's storage budget
 *  or would be taken past it (the next poll holds it, or reads the document whole once there is room). */
async function storePushed(
  ctx: Ctx,
  feedId: string,
  doc: FeedDocument,
  seenAt: Date,
): Promise<{ newEntries: number; events: number } | undefined> {
  // Locked before it is read again: a poll another node records meanwhile commits before this read or after this
  // transaction, so what is written back from the row read here (entry_count, status) overwrites none of its writes.
  await lockFeed(ctx.db, feedId);
  const feed = await getFeed(ctx.db, feedId);
  const now = ctx.clock.now();
  await updateWebSub(ctx.db, feedId, { last_push_at: now.toISOString() }, now);
  if (feed === undefined || feed.baseline_at === null) return undefined;
  if (!(await feedHasActiveSubscription(ctx.db, feedId)) || feed.budget_held_at !== null)
    return undefined;
  const r = await storeWithinBudget(ctx, feed, async () =>
    storeEntries(ctx, feed, doc, { seenAt, via: 'push' }, true),
  );
  if (r === 'over') return undefined;
  // Only the hold decides between active and identity_changed; a poll's error or pending status is the poll's.
  const status =
    r.status === 'identity_changed'
      ? 'identity_changed'
      : feed.status === 'identity_changed'
        ? 'active'
        : feed.status;
  await recordPushedDocument(
    ctx.db,
    feedId,
    {
      status,
      entry_count: feed.entry_count + r.added,
      held_dropped: r.status === 'identity_changed' ? feed.held_dropped + (r.heldDropped ?? 0) : 0,
      ...r.identity,
    },
    now,
  );
  return { newEntries: r.fresh, events: r.events };
}
