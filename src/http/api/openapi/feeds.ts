// The OpenAPI paths and schemas of feed records: the list, one feed, a refresh, the release of a GUID-churn hold; and
// what the application keeps against its storage budget.
import * as v from 'valibot';
import { FeedStatusFilter, IdentityChangeInput } from '../../../actions/feeds.ts';
import { FEED_STATUSES } from '../../../store/feeds.ts';
import { queryParameter } from './convert.ts';
import { KeySource } from './events.ts';
import {
  body,
  described,
  Id,
  idempotencyHeader,
  idParam,
  Int,
  json,
  list,
  ok,
  problemResponse,
  read,
  Time,
  tooManyOr,
  withId,
} from './shared.ts';
import type { Paths } from './shared.ts';

/** WebSub push as the feed view shows it (actions' PushView). */
export const FeedPush = described(
  v.object({
    hub: described(
      v.nullable(v.string()),
      'The hub URL (Link header first, then the document); null when none.',
    ),
    status: described(
      v.picklist(['none', 'subscribing', 'active', 'expired', 'denied', 'failed', 'unsubscribing']),
      'none: no subscription (no hub, or server.public_url unset); subscribing: requested, awaiting the hub’s verification; active: verified, lease running; expired: the lease ended without a verified renewal (asked again with backoff); denied: the hub refused, at the request or later (asked again a day later); failed: the hub could not be reached or refused the request (retried with backoff); unsubscribing: the feed’s last subscription went.',
    ),
    lease_expires_at: v.nullable(Time),
    last_push_at: v.nullable(Time),
  }),
  'WebSub push: the hub the feed advertises and our subscription to it, made only when server.public_url is set. While status is active and the lease runs, entries arrive seconds after publication and polling is the slower fallback (poll.push_interval_seconds); in every other status the feed is polled on its normal schedule, and when push stops it is polled at once.',
);

/** A feed record as the API shows it (actions' FeedView). */
export const Feed = v.object({
  id: Id,
  url: v.string(),
  feed_url: v.string(),
  discovered_url: v.nullable(v.string()),
  title: v.nullable(v.string()),
  site_url: v.nullable(v.string()),
  format: v.nullable(v.string()),
  status: v.picklist(FEED_STATUSES),
  last_polled_at: v.nullable(Time),
  last_success_at: v.nullable(Time),
  next_poll_at: v.nullable(Time),
  interval_seconds: v.nullable(Int),
  last_http_status: v.nullable(Int),
  error_count: Int,
  network_error_count: Int,
  http_error_count: Int,
  parse_error_count: Int,
  last_error: v.nullable(v.string()),
  last_error_at: v.nullable(Time),
  degraded: v.nullable(v.string()),
  entry_count: Int,
  held_entries: described(
    Int,
    "Entries held back because the feed's identities changed (status identity_changed).",
  ),
  held_entries_dropped: described(
    Int,
    'Unseen entries left out of this hold because it was full (retention.held_entries_per_feed, held_bytes_per_feed), counted on every poll that showed them. 0 once the hold ends.',
  ),
  stored_bytes: described(
    Int,
    'What the feed keeps: its entry keys, held entries, entry history and identity probe, as the storage budget counts them. Counted in the budget of an application only while every subscription of the feed is that application’s.',
  ),
  over_budget: described(
    v.nullable(
      v.object({
        held_at: Time,
        used_bytes: described(Int, 'What your application keeps now (GET /v1/storage).'),
        budget_bytes: described(Int, 'quotas.storage_bytes_per_application.'),
        detail: described(v.string(), 'Why, and what resumes it.'),
      }),
    ),
    'Set while the feed is held for your storage budget (status over_budget): it is not polled until your application has room again, then resumes by itself and sends what it shows then.',
  ),
  identity_key: described(
    KeySource,
    'The source entry keys come from first (then the later ones): guid, link, first enclosure, title + content + date. guid unless a churn hold whose keys kept changing moved the feed to the first stable later source.',
  ),
  push: FeedPush,
  created_at: Time,
  updated_at: Time,
});
/** What the application keeps against its storage budget (actions' StorageView, GET /v1/storage). */
export const Storage = described(
  v.object({
    used_bytes: described(Int, 'feed_bytes + event_bytes.'),
    budget_bytes: described(Int, 'quotas.storage_bytes_per_application; 0 = no budget.'),
    feed_bytes: Int,
    event_bytes: Int,
    held_feeds: described(Int, 'Your feeds held for the budget.'),
  }),
  'What your application keeps: the entry keys, held entries, history and probes of the feeds only your subscriptions use (a feed shared with another application counts for neither), and your events (bodies, the entries they carry, their attempts with the responses kept). Past the budget, a feed only you use is held (status over_budget) when its next document would not fit.',
);
/** A feed of the list, with how many of the application's subscriptions use it. */
export const FeedListItem = v.intersect([
  Feed,
  v.object({
    subscription_count: described(Int, 'How many of your subscriptions use the feed.'),
  }),
]);
/** The feed after a hold is resolved, with how many entries were released and events made. */
export const ResolvedFeed = v.intersect([Feed, v.object({ released: Int, events: Int })]);

export const FEED_PATHS: Paths = {
  '/v1/feeds': {
    get: withId(
      'listFeeds',
      list(
        'List the feeds your subscriptions use, newest first',
        FeedListItem,
        queryParameter('status', FeedStatusFilter),
      ),
    ),
  },
  '/v1/feeds/{id}': {
    get: withId('getFeed', read('Read a feed record one of your subscriptions uses', Feed)),
  },
  '/v1/feeds/{id}/refresh': {
    post: {
      operationId: 'refreshFeed',
      summary:
        'Fetch the feed now: it is due at once (a gone feed is polled again); at most once per poll.min_interval_seconds per feed',
      parameters: [idParam, idempotencyHeader],
      responses: {
        202: json(Feed, 'Accepted: the poller fetches it within seconds'),
        409: problemResponse('No subscription of the feed is active, so it is not polled'),
        429: tooManyOr(
          'the feed was fetched less than `poll.min_interval_seconds` ago (`quota` is `feed_refresh`); nothing changed.',
        ),
      },
    },
  },
  '/v1/feeds/{id}/accept-identity-change': {
    post: {
      operationId: 'resolveFeedIdentityHold',
      summary: 'Resolve a GUID-churn hold: deliver the held entries or discard them (mark seen)',
      parameters: [idParam],
      requestBody: body(IdentityChangeInput),
      responses: {
        200: json(ResolvedFeed),
        409: problemResponse('Nothing is held'),
      },
    },
  },
  '/v1/storage': {
    get: withId('getStorage', {
      summary:
        'What your application keeps against its storage budget (quotas.storage_bytes_per_application)',
      responses: ok(Storage),
    }),
  },
};

/** The feed schemas, in the document's order. */
export const FEED_SCHEMAS = { Feed, FeedPush, Storage, FeedListItem };
