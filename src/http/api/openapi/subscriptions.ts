// The OpenAPI paths and schemas of subscriptions: a feed URL tied to one endpoint, with metadata; OPML import/export;
// the feed's entry history and the trace of one entry.
import * as v from 'valibot';
import { EventStatusValue } from '../../../actions/events.ts';
import { FilterView } from '../../../actions/filter.ts';
import {
  CreateSubscriptionInput,
  JsonObject,
  SubscriptionStatus,
  UpdateSubscriptionInput,
  Updates,
} from '../../../actions/subscriptions.ts';
import { ImportSubscriptionsInput } from '../../../actions/subscriptions-import.ts';
import { EntryQuery } from '../../../actions/trace.ts';
import { EntryPageQuerySchema, IdFilter } from '../../body.ts';
import { queryParameter, queryParameters } from './convert.ts';
import { Attempt, Entry, KeySource } from './events.ts';
import {
  body,
  create,
  described,
  Id,
  idParam,
  Int,
  json,
  list,
  page,
  Problem,
  problemResponse,
  read,
  Time,
  tooManyOr,
  withId,
} from './shared.ts';
import type { Paths } from './shared.ts';

/** An entry's id: feedsub's key for it. */
const EntryId = v.pipe(v.string(), v.regex(/^[0-9a-f]{32}$/));

/** A subscription as the API shows it (actions' SubscriptionApiView). */
export const Subscription = v.object({
  id: Id,
  application: Id,
  url: v.string(),
  feed: Id,
  endpoint: Id,
  metadata: described(v.nullable(JsonObject), 'Your metadata, byte for byte as you sent it.'),
  status: SubscriptionStatus,
  updates: Updates,
  filter: v.nullable(FilterView),
  entries_filtered: described(
    Int,
    'Entries its filter kept from being sent: each entry once per event it would have been in.',
  ),
  feed_url: described(
    v.string(),
    'The URL actually fetched (a discovered feed when url is a web page).',
  ),
  feed_status: v.string(),
  created_at: Time,
  updated_at: Time,
});

/** What an OPML import did with one feed outline (actions' ImportResult). */
export const SubscriptionImportResult = v.object({
  url: described(v.nullable(v.string()), "The outline's xmlUrl as written, without credentials."),
  title: described(v.nullable(v.string()), "The outline's title, else its text."),
  status: described(
    v.picklist(['created', 'exists', 'invalid', 'refused']),
    '`created`; `exists`: the endpoint already has this feed (`subscription` names it); `invalid`: no usable xmlUrl; `refused`: a private address, or a quota — once one is met, every later valid outline is refused with the same problem.',
  ),
  subscription: v.optional(Id),
  error: v.optional(Problem),
});
/** An OPML import's results, one per feed outline, and how many of each (actions' ImportReport). */
export const SubscriptionImportReport = v.object({
  results: v.array(SubscriptionImportResult),
  counts: v.object({ created: Int, exists: Int, invalid: Int, refused: Int }),
});

/** Why an entry was or was not delivered to a subscription (actions' TraceView). */
export const EntryTrace = v.object({
  query: v.string(),
  matched_by: v.nullable(v.picklist(['id', 'guid', 'url'])),
  key: v.nullable(EntryId),
  key_source: described(v.nullable(KeySource), 'The field the key was computed from.'),
  entry: v.nullable(Entry),
  first_seen_at: described(
    v.nullable(Time),
    'When the fetch that first showed it began (a held entry: when it was held).',
  ),
  via: described(v.nullable(v.picklist(['poll', 'push'])), 'The fetch that first showed it.'),
  fate: described(
    v.nullable(v.picklist(['baseline', 'new', 'revealed', 'held', 'released', 'discarded'])),
    'What feedsub did with it for the feed: recorded by a baseline; sent to the subscriptions active then; recorded by a parser upgrade; held by the churn guard; then released or discarded.',
  ),
  decision: v.picklist([
    'delivered',
    'pending',
    'dead',
    'held',
    'discarded',
    'before_subscription',
    'baseline',
    'paused',
    'filtered',
    'unknown',
  ]),
  reason: described(
    v.string(),
    'The decision in one sentence, with its dates and ids; for an entry the filter kept back, the rule: "blocked by rule filter.block[0] (author contains \"bot\")" or "no keep rule matched (…)".',
  ),
  filter: described(
    v.nullable(
      v.object({
        outcome: v.picklist(['sent', 'blocked', 'not_kept']),
        rule: described(
          v.nullable(v.string()),
          'The block rule that matched, as a path: `filter.block[0]`.',
        ),
        changed_at: described(v.nullable(Time), 'When the filter was last set.'),
        as_seen: described(
          v.boolean(),
          'True when the filter was set before the entry was first seen: this is the filter that judged it.',
        ),
      }),
    ),
    'What the subscription’s filter, as it is now, decides about the stored entry; null without a filter or a stored entry.',
  ),
  subscription: v.object({
    id: Id,
    status: SubscriptionStatus,
    created_at: Time,
    pauses: described(
      v.array(v.object({ paused_at: Time, resumed_at: v.nullable(Time) })),
      'Its last 20 pauses, oldest first.',
    ),
  }),
  events: described(
    v.array(
      v.object({
        id: Id,
        type: v.picklist(['subscription.entries', 'subscription.entries_updated']),
        sequence: v.nullable(Int),
        status: EventStatusValue,
        backfill: v.boolean(),
        created_at: Time,
        delivered_at: v.nullable(Time),
        next_attempt_at: v.nullable(Time),
        attempts: v.array(Attempt),
      }),
    ),
    'Its events that carry the entry (the first 20, in sequence order).',
  ),
});

export const SUBSCRIPTION_PATHS: Paths = {
  '/v1/subscriptions': {
    post: withId(
      'createSubscription',
      create('Subscribe an endpoint to a feed URL', CreateSubscriptionInput, {
        201: json(Subscription, 'Created'),
        404: problemResponse(
          "The endpoint is unknown or another application's; `errors` names `endpoint`.",
        ),
        409: problemResponse('Duplicate; `existing_id` names it'),
        429: tooManyOr(
          'the application has `quotas.subscriptions_per_application` subscriptions already, or subscribed to `quotas.new_feed_urls_per_hour` feed URLs it did not have within the last hour, or its subscriptions asked for more backfill entries (`backfill`, counted as asked) than `quotas.backfill_entries_per_hour` within the last hour; `detail` then says how many are left.',
        ),
      }),
    ),
    get: withId(
      'listSubscriptions',
      list('List subscriptions, newest first', Subscription, queryParameter('endpoint', IdFilter)),
    ),
  },
  '/v1/subscriptions/import': {
    post: withId(
      'importSubscriptions',
      create('Subscribe an endpoint to every feed of an OPML document', ImportSubscriptionsInput, {
        200: json(
          SubscriptionImportReport,
          'One result per feed outline, in document order: quotas and refusals are reported per outline, not as the status of the request.',
        ),
        400: problemResponse(
          'Invalid fields, or an OPML document that cannot be imported (not OPML, cut short or mis-nested, nested more than 50 elements deep, more than 1,000 feeds); `errors` names `opml` with the line. Nothing was imported.',
        ),
        404: problemResponse(
          "The endpoint is unknown or another application's; `errors` names `endpoint`. Nothing was imported.",
        ),
      }),
    ),
  },
  '/v1/subscriptions/export': {
    get: {
      operationId: 'exportSubscriptions',
      summary: 'The subscriptions as an OPML 2.0 document, a folder per endpoint',
      parameters: [
        queryParameter(
          'endpoint',
          IdFilter,
          "Only this endpoint's subscriptions (404 when not one of yours).",
        ),
      ],
      responses: {
        200: {
          description:
            'OPML 2.0, streamed: an outline per subscription (`xmlUrl` = its URL, never credentials; `text` = the feed title or the URL; paused ones carry `feedsubStatus="paused"`) inside a folder outline per endpoint.',
          content: { 'text/x-opml': { schema: v.string() } },
        },
        404: problemResponse(
          "The `endpoint` filter names an unknown endpoint, or another application's.",
        ),
      },
    },
  },
  '/v1/subscriptions/{id}/entries': {
    get: {
      operationId: 'listSubscriptionEntries',
      summary:
        "The feed's newest entries as webhooks show them (its entry history), newest first, whether or not this subscription was sent them",
      parameters: [idParam, ...queryParameters(EntryPageQuerySchema)],
      responses: { 200: json(page(Entry, EntryId)) },
    },
  },
  '/v1/subscriptions/{id}/trace': {
    get: {
      operationId: 'traceSubscriptionEntry',
      summary: "Why was (or wasn't) this entry delivered to this subscription?",
      parameters: [idParam, queryParameter('entry', EntryQuery)],
      responses: {
        200: json(
          EntryTrace,
          'The stored facts and the decision they add up to; an entry feedsub knows nothing about answers decision `unknown`.',
        ),
      },
    },
  },
  '/v1/subscriptions/{id}': {
    get: withId('getSubscription', read('Read a subscription', Subscription)),
    patch: {
      operationId: 'updateSubscription',
      summary: 'Change metadata or endpoint, pause or resume',
      parameters: [idParam],
      requestBody: body(UpdateSubscriptionInput),
      responses: {
        200: json(Subscription),
        409: problemResponse('The new endpoint already has this feed'),
      },
    },
    delete: {
      operationId: 'deleteSubscription',
      summary: 'Delete a subscription and its undelivered events',
      parameters: [idParam],
      responses: { 204: { description: 'Deleted' } },
    },
  },
};

/** The subscription schemas, in the document's order. */
export const SUBSCRIPTION_SCHEMAS = {
  SubscriptionCreate: CreateSubscriptionInput,
  SubscriptionUpdate: UpdateSubscriptionInput,
  SubscriptionImport: ImportSubscriptionsInput,
  SubscriptionImportReport,
  SubscriptionImportResult,
  Subscription,
  EntryTrace,
};
