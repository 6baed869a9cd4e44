// The OpenAPI paths and schemas of feed records: the list, one feed, a refresh, the release of a GUID-churn hold; and
// what the application keeps against its storage budget.
import {
  body,
  ok,
  id,
  idempotencyHeader,
  idParam,
  int,
  json,
  list,
  nullable,
  problemResponse,
  read,
  ref,
  str,
  time,
  tooManyOr,
  withId,
} from './shared.ts';
import type { Paths, Schema } from './shared.ts';
import { FEED_STATUSES } from '../../../store/feeds.ts';

/** Every status a feed record has. */

export const FEED_PATHS: Paths = {
  '/v1/feeds': {
    get: withId(
      'listFeeds',
      list('List the feeds your subscriptions use, newest first', 'FeedListItem', {
        name: 'status',
        in: 'query',
        description:
          'Only feeds in this status; `failing` is every feed not fetched successfully now (`error` and `gone`).',
        schema: { enum: [...FEED_STATUSES, 'failing'] },
      }),
    ),
  },
  '/v1/feeds/{id}': {
    get: withId('getFeed', read('Read a feed record one of your subscriptions uses', 'Feed')),
  },
  '/v1/feeds/{id}/refresh': {
    post: {
      operationId: 'refreshFeed',
      summary:
        'Fetch the feed now: it is due at once (a gone feed is polled again); at most once per poll.min_interval_seconds per feed',
      parameters: [idParam, idempotencyHeader],
      responses: {
        202: json(ref('Feed'), 'Accepted: the poller fetches it within seconds'),
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
      requestBody: body({
        type: 'object',
        additionalProperties: false,
        required: ['action'],
        properties: { action: { enum: ['deliver', 'discard'] } },
      }),
      responses: {
        200: json({
          allOf: [ref('Feed'), { type: 'object', properties: { released: int(), events: int() } }],
        }),
        409: problemResponse('Nothing is held'),
      },
    },
  },
  '/v1/storage': {
    get: withId('getStorage', {
      summary:
        'What your application keeps against its storage budget (quotas.storage_bytes_per_application)',
      responses: ok('Storage'),
    }),
  },
};

export const FEED_SCHEMAS: Record<string, Schema> = {
  Feed: {
    type: 'object',
    required: ['id', 'url', 'status'],
    properties: {
      id,
      url: str(),
      feed_url: str(),
      discovered_url: nullable(str()),
      title: nullable(str()),
      site_url: nullable(str()),
      format: nullable(str()),
      status: { enum: [...FEED_STATUSES] },
      last_polled_at: nullable(time),
      last_success_at: nullable(time),
      next_poll_at: nullable(time),
      interval_seconds: nullable(int()),
      last_http_status: nullable(int()),
      error_count: int(),
      network_error_count: int(),
      http_error_count: int(),
      parse_error_count: int(),
      last_error: nullable(str()),
      last_error_at: nullable(time),
      degraded: nullable(str()),
      entry_count: int(),
      held_entries: int({
        description:
          "Entries held back because the feed's identities changed (status identity_changed).",
      }),
      held_entries_dropped: int({
        description:
          'Unseen entries left out of this hold because it was full (retention.held_entries_per_feed, held_bytes_per_feed), counted on every poll that showed them. 0 once the hold ends.',
      }),
      stored_bytes: int({
        description:
          'What the feed keeps: its entry keys, held entries, entry history and identity probe, as the storage budget counts them. Counted in the budget of an application only while every subscription of the feed is that application’s.',
      }),
      over_budget: nullable({
        type: 'object',
        description:
          'Set while the feed is held for your storage budget (status over_budget): it is not polled until your application has room again, then resumes by itself and sends what it shows then.',
        required: ['held_at', 'used_bytes', 'budget_bytes', 'detail'],
        properties: {
          held_at: time,
          used_bytes: int({ description: 'What your application keeps now (GET /v1/storage).' }),
          budget_bytes: int({ description: 'quotas.storage_bytes_per_application.' }),
          detail: str({ description: 'Why, and what resumes it.' }),
        },
      }),
      identity_key: {
        enum: ['guid', 'link', 'enclosure', 'content'],
        description:
          'The source entry keys come from first (then the later ones): guid, link, first enclosure, title + content + date. guid unless a churn hold whose keys kept changing moved the feed to the first stable later source.',
      },
      push: ref('FeedPush'),
      created_at: time,
      updated_at: time,
    },
  },
  FeedPush: {
    type: 'object',
    description:
      'WebSub push: the hub the feed advertises and our subscription to it, made only when server.public_url is set. While status is active and the lease runs, entries arrive seconds after publication and polling is the slower fallback (poll.push_interval_seconds); in every other status the feed is polled on its normal schedule, and when push stops it is polled at once.',
    required: ['hub', 'status', 'lease_expires_at', 'last_push_at'],
    properties: {
      hub: nullable(
        str({ description: 'The hub URL (Link header first, then the document); null when none.' }),
      ),
      status: {
        enum: ['none', 'subscribing', 'active', 'expired', 'denied', 'failed', 'unsubscribing'],
        description:
          'none: no subscription (no hub, or server.public_url unset); subscribing: requested, awaiting the hub’s verification; active: verified, lease running; expired: the lease ended without a verified renewal (asked again with backoff); denied: the hub refused, at the request or later (asked again a day later); failed: the hub could not be reached or refused the request (retried with backoff); unsubscribing: the feed’s last subscription went.',
      },
      lease_expires_at: nullable(time),
      last_push_at: nullable(time),
    },
  },
  Storage: {
    type: 'object',
    description:
      'What your application keeps: the entry keys, held entries, history and probes of the feeds only your subscriptions use (a feed shared with another application counts for neither), and your events (bodies, the entries they carry, their attempts with the responses kept). Past the budget, a feed only you use is held (status over_budget) when its next document would not fit.',
    required: ['used_bytes', 'budget_bytes', 'feed_bytes', 'event_bytes', 'held_feeds'],
    properties: {
      used_bytes: int({ description: 'feed_bytes + event_bytes.' }),
      budget_bytes: int({
        description: 'quotas.storage_bytes_per_application; 0 = no budget.',
      }),
      feed_bytes: int(),
      event_bytes: int(),
      held_feeds: int({ description: 'Your feeds held for the budget.' }),
    },
  },
  FeedListItem: {
    allOf: [
      ref('Feed'),
      {
        type: 'object',
        required: ['subscription_count'],
        properties: {
          subscription_count: int({ description: 'How many of your subscriptions use the feed.' }),
        },
      },
    ],
  },
};
