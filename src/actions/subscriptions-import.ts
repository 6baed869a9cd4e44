// Importing an OPML feed list into one endpoint: each feed outline goes through the create action, and gets a result.
import { setImmediate as nextTurn } from 'node:timers/promises';
import * as v from 'valibot';
import type { Ctx } from '../context.ts';
import { ApiError, invalid } from '../errors.ts';
import { OpmlError, readOpmlFeeds, type OpmlFeed } from '../feed/opml.ts';
import {
  CreateSubscriptionInput,
  createSubscription,
  Metadata,
  metadataText,
  requireOwnEndpoint,
  type RawParts,
} from './subscriptions.ts';
import { normalizeFeedUrl, privateHostIssue } from './urls.ts';
import { IdString, validate } from './validate.ts';

/** Feed outlines one import may hold: past it the whole document is refused (400), nothing imported. */
export const IMPORT_MAX_FEEDS = 1000;
/** Outlines created between two turns of the event loop, so a long import never holds the process for long. */
const TURN = 10;

/** The document, read into its feed outlines as part of validation, so its problem is listed with the others. */
const OpmlDocument = v.pipe(
  v.string('must be a string'),
  v.nonEmpty('is required'),
  v.description(
    'The OPML 1.0 or 2.0 document. Every outline under <body> with an xmlUrl (or typed rss/atom) is a feed, at any folder depth; folders are not kept. At most 1,000 feeds.',
  ),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    try {
      return readOpmlFeeds(dataset.value, IMPORT_MAX_FEEDS);
    } catch (err) {
      if (!(err instanceof OpmlError)) throw err;
      addIssue({ message: err.message });
      return NEVER;
    }
  }),
);

export const ImportSubscriptionsInput = v.strictObject({
  endpoint: IdString,
  opml: OpmlDocument,
  metadata: v.optional(
    v.pipe(
      Metadata,
      v.description('Given to every subscription created, exactly as given; at most 16 KiB.'),
    ),
  ),
});

export type ImportStatus = 'created' | 'exists' | 'invalid' | 'refused';
/** An RFC 9457 problem, as the API would have answered for this outline alone. */
export type Problem = Record<string, unknown> & { status: number; detail: string };
export type ImportResult = {
  url: string | null;
  title: string | null;
  status: ImportStatus;
  subscription?: string;
  error?: Problem;
};
export type ImportReport = { results: ImportResult[]; counts: Record<ImportStatus, number> };

/** Subscribes the endpoint to every feed outline of `opml`, in document order, through createSubscription (so the
 *  same normalization, duplicate rule, quotas and private-address refusal apply), with the same metadata for each.
 *  The request itself is refused only when it cannot be read at all: 400 for invalid fields or an OPML document that
 *  is malformed or lists more than IMPORT_MAX_FEEDS feeds, 404 for an endpoint that is not the application's. Past
 *  that, each outline gets a result: `created`, `exists` (409: the subscription that has it), `invalid` (400: no
 *  usable xmlUrl) or `refused` (a private address, or a quota: once one is met, every later outline with a valid URL
 *  is refused with the same problem and nothing more is created). */
export async function importSubscriptions(
  ctx: Ctx,
  applicationId: string,
  input: unknown,
  raw: RawParts = {},
): Promise<ImportReport> {
  const body = validate(ImportSubscriptionsInput, input);
  const text = metadataText(body.metadata, raw.metadata); // 400 past 16 KiB, before anything is created
  await requireOwnEndpoint(ctx, applicationId, body.endpoint);
  const feeds = body.opml;
  const metadata = body.metadata && text !== null ? { value: body.metadata, text } : undefined;
  const run: ImportRun = { ctx, applicationId, endpoint: body.endpoint, metadata, stop: null };
  const results: ImportResult[] = [];
  for (let i = 0; i < feeds.length; i++) {
    if (i > 0 && i % TURN === 0) await nextTurn();
    results.push(await importOne(run, feeds[i]!));
  }
  const counts = { created: 0, exists: 0, invalid: 0, refused: 0 };
  for (const r of results) counts[r.status]++;
  return { results, counts };
}

type ImportRun = {
  ctx: Ctx;
  applicationId: string;
  endpoint: string;
  /** The metadata given to every subscription, and its JSON text as the client wrote it (minified, size-checked). */
  metadata: { value: Record<string, unknown>; text: string } | undefined;
  /** The quota problem that stopped the import, once one was met. */
  stop: ApiError | null;
};

/** One outline's result. Validation comes first so an invalid URL reads `invalid` even after a quota stopped the run. */
async function importOne(run: ImportRun, feed: OpmlFeed): Promise<ImportResult> {
  const shown = {
    url: feed.xmlUrl === null ? null : withoutCredentials(feed.xmlUrl),
    title: feed.title,
  };
  if (feed.xmlUrl === null)
    return failed(
      shown,
      'invalid',
      invalid([{ path: 'url', message: 'the outline has no xmlUrl' }]),
    );
  let filter: unknown;
  try {
    filter = feed.filter === null ? undefined : JSON.parse(feed.filter);
  } catch {
    return failed(
      shown,
      'invalid',
      invalid([{ path: 'filter', message: "the outline's feedsubFilter is not JSON" }]),
    );
  }
  const input = {
    endpoint: run.endpoint,
    url: feed.xmlUrl,
    ...(run.metadata ? { metadata: run.metadata.value } : {}),
    ...(filter === undefined ? {} : { filter }),
  };
  try {
    const url = validate(CreateSubscriptionInput, input).url;
    const issue = privateHostIssue(
      'url',
      normalizeFeedUrl(url).url,
      run.ctx.config.network.allow_private,
    );
    if (issue) return failed(shown, 'refused', invalid([issue]));
    if (run.stop) return failed(shown, 'refused', run.stop);
    const made = await createSubscription(run.ctx, run.applicationId, input, {
      metadata: run.metadata?.text,
    });
    return { ...shown, status: 'created', subscription: made.id };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    if (err.status === 409)
      return { ...shown, status: 'exists', subscription: String(err.extra?.existing_id) };
    if (err.status === 400) return failed(shown, 'invalid', err);
    if (err.status === 429) run.stop = err;
    return failed(shown, 'refused', err);
  }
}

function failed(
  shown: Pick<ImportResult, 'url' | 'title'>,
  status: 'invalid' | 'refused',
  err: ApiError,
): ImportResult {
  return { ...shown, status, error: problemOf(err) };
}

/** The problem+json body the API answers for `err` (http/errors.ts writes the same members). */
function problemOf(err: ApiError): Problem {
  return {
    type: 'about:blank',
    title: err.title,
    status: err.status,
    detail: err.message,
    ...(err.errors ? { errors: err.errors } : {}),
    ...err.extra,
  };
}

/** The URL as written, unless it carries credentials: they are used, never shown back. */
function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    if (u.username === '' && u.password === '') return url;
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}
