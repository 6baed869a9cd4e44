// Endpoint use-cases shared by the API, the dashboard and the CLI.
import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { conflict, invalid, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import {
  countEndpointSubscriptions,
  deleteEndpoint,
  getEndpoint,
  insertEndpoint,
  listEndpoints,
  updateEndpoint,
  type EndpointRow,
} from '../store/endpoints.ts';
import { hastenEndpointRetries, requeueEndpointEvents } from '../store/events.ts';
import type { Page, PageQuery } from '../store/page.ts';
import { transaction, type Ctx } from '../context.ts';
import { retryHeldFeeds } from './budget.ts';
import { SUBSCRIPTION_EVENT_TYPES, type SubscriptionEventType } from '../webhook/event.ts';
import { headersOf, headersText, Headers, RateLimit } from './endpoint-options.ts';
import { checkEndpointQuota } from './quotas.ts';
import { privateHostIssue } from './urls.ts';
import { HttpUrl, Title, validate } from './validate.ts';

export type EndpointView = {
  id: string;
  title: string;
  url: string;
  status: 'active' | 'disabled';
  disabled_reason: string | null;
  filter_types: SubscriptionEventType[] | null;
  headers: Record<string, string> | null;
  rate_limit: number | null;
  created_at: string;
  updated_at: string;
};

/** The check of FilterTypes that the OpenAPI document says as `uniqueItems`: no type listed twice. */
export const DistinctTypes = v.check(
  (types: SubscriptionEventType[]) => new Set(types).size === types.length,
  'must not list a type twice',
);

/** The event types an endpoint receives: null for every type (those added later too), else a non-empty list of known
 *  subscription event types without repeats. endpoint.test is not listed: a test is always sent. */
export const FilterTypes = v.pipe(
  v.nullable(
    v.pipe(
      v.array(
        v.picklist(
          SUBSCRIPTION_EVENT_TYPES,
          `must be one of ${SUBSCRIPTION_EVENT_TYPES.join(', ')} (endpoint.test is always sent)`,
        ),
        'must be a list of event types, or null for every type',
      ),
      v.nonEmpty('must list at least one event type, or be null for every type'),
      DistinctTypes,
    ),
  ),
  v.description(
    'The event types the endpoint receives; null (the default) for every type, including types added later. An event of another type is not created for it at all (no event, no sequence number); endpoint.test is always sent.',
  ),
);
/** An endpoint's status. */
export const EndpointStatus = v.picklist(['active', 'disabled'], 'must be "active" or "disabled"');

export const CreateEndpointInput = v.strictObject({
  title: Title,
  url: HttpUrl,
  filter_types: v.optional(FilterTypes),
  headers: v.optional(Headers),
  rate_limit: v.optional(RateLimit),
});
export const UpdateEndpointInput = v.strictObject({
  title: v.optional(Title),
  url: v.optional(HttpUrl),
  status: v.optional(EndpointStatus),
  filter_types: v.optional(FilterTypes),
  headers: v.optional(Headers),
  rate_limit: v.optional(RateLimit),
});

/** A new Standard Webhooks signing secret: whsec_ + base64 of 24 random bytes. */
export function newSecret(): string {
  return 'whsec_' + randomBytes(24).toString('base64');
}

/** The API view of an endpoint: never its secret, but its extra headers in full (as Svix shows them: whoever holds the
 *  application's key can read the signing secret too). */
export function endpointView(row: EndpointRow): EndpointView {
  const { id, title, url, status, disabled_reason, rate_limit, created_at, updated_at } = row;
  const filter_types =
    row.filter_types === null ? null : (JSON.parse(row.filter_types) as SubscriptionEventType[]);
  const headers = headersOf(row.headers);
  return {
    id,
    title,
    url,
    status,
    disabled_reason,
    filter_types,
    headers,
    rate_limit,
    created_at,
    updated_at,
  };
}

/** Creates an endpoint; the result carries its secret (the only response that does, with GET …/secret). 429 when the
 *  application has quotas.endpoints_per_application already. */
export async function createEndpoint(
  ctx: Ctx,
  applicationId: string,
  input: unknown,
): Promise<EndpointView & { secret: string }> {
  const body = validate(CreateEndpointInput, input);
  checkPrivate(ctx, body.url);
  const now = ctx.clock.now();
  const row = {
    id: newId(now),
    application_id: applicationId,
    title: body.title,
    url: body.url,
    secret: newSecret(),
    created_at: now.toISOString(),
    filter_types: filterText(body.filter_types),
    headers: headersText(body.headers ?? null),
    rate_limit: body.rate_limit ?? null,
  };
  await transaction(ctx, async (tx) => {
    await checkEndpointQuota(tx, applicationId);
    await insertEndpoint(tx.db, row);
  });
  return { ...endpointView(await requireEndpoint(ctx, applicationId, row.id)), secret: row.secret };
}

/** The application's endpoint; 404 when unknown or another application's. */
export async function requireEndpoint(
  ctx: Ctx,
  applicationId: string,
  id: string,
): Promise<EndpointRow> {
  const row = await getEndpoint(ctx.db, applicationId, id);
  if (!row) throw notFound('Endpoint');
  return row;
}

/** One page of endpoints, newest first. */
export async function listEndpointViews(
  ctx: Ctx,
  applicationId: string,
  q: PageQuery,
): Promise<Page<EndpointView>> {
  const page = await listEndpoints(ctx.db, applicationId, q);
  return { data: page.data.map(endpointView), next: page.next };
}

/** Changes title, url, status, filter_types, headers or rate_limit (each applies from the next attempt on); re-enabling
 *  clears the reason and the failure clock and makes waiting retries due now; re-enabling or a new rate limit wakes the
 *  deliverer. */
export async function updateEndpointFromInput(
  ctx: Ctx,
  applicationId: string,
  id: string,
  input: unknown,
): Promise<EndpointView> {
  const current = await requireEndpoint(ctx, applicationId, id);
  const body = validate(UpdateEndpointInput, input);
  if (body.url !== undefined) checkPrivate(ctx, body.url);
  const patch: Parameters<typeof updateEndpoint>[3] = {};
  if (body.title !== undefined) patch.title = body.title;
  if (body.url !== undefined) patch.url = body.url;
  if (body.filter_types !== undefined) patch.filter_types = filterText(body.filter_types);
  if (body.headers !== undefined) patch.headers = headersText(body.headers);
  if (body.rate_limit !== undefined) patch.rate_limit = body.rate_limit;
  if (body.status === 'active' && current.status !== 'active')
    Object.assign(patch, { status: 'active', disabled_reason: null, failing_since: null });
  if (body.status === 'disabled' && current.status !== 'disabled')
    Object.assign(patch, { status: 'disabled', disabled_reason: 'disabled by the application' });
  const now = ctx.clock.now();
  const row = await transaction(ctx, async (tx) => {
    if (patch.status === 'active') await hastenEndpointRetries(tx.db, id, now);
    return (await updateEndpoint(tx.db, applicationId, id, patch, now))!;
  });
  // A raised or removed rate limit may let waiting events go now.
  if (patch.status === 'active' || patch.rate_limit !== undefined) ctx.nudgeDeliverer();
  return endpointView(row);
}

/** Deletes an endpoint with its events; 409 while subscriptions use it (delete or move them first). The room its events
 *  took in the application's storage budget may resume a feed held for it. */
export async function removeEndpoint(ctx: Ctx, applicationId: string, id: string): Promise<void> {
  await transaction(ctx, async (tx) => {
    await requireEndpoint(tx, applicationId, id);
    const n = await countEndpointSubscriptions(tx.db, id);
    if (n > 0)
      throw conflict(
        `The endpoint is used by ${n} subscription(s); delete them or move them to another endpoint first.`,
        { subscriptions: n },
      );
    await deleteEndpoint(tx.db, applicationId, id);
  });
  await retryHeldFeeds(ctx, applicationId);
}

/** The endpoint's current signing secret (and the previous one while a rotation's grace period lasts). */
export async function endpointSecret(
  ctx: Ctx,
  applicationId: string,
  id: string,
): Promise<{
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
}> {
  const row = await requireEndpoint(ctx, applicationId, id);
  const live =
    row.previous_secret_until !== null && row.previous_secret_until > ctx.clock.now().toISOString();
  return {
    secret: row.secret,
    previous_secret: live ? row.previous_secret : null,
    previous_secret_expires_at: live ? row.previous_secret_until : null,
  };
}

/** A new signing secret; the previous one keeps signing too for delivery.secret_rotation_grace_seconds. */
export async function rotateEndpointSecret(
  ctx: Ctx,
  applicationId: string,
  id: string,
): Promise<ReturnType<typeof endpointSecret>> {
  const current = await requireEndpoint(ctx, applicationId, id);
  const now = ctx.clock.now();
  const until = new Date(
    now.getTime() + ctx.config.delivery.secret_rotation_grace_seconds * 1000,
  ).toISOString();
  await updateEndpoint(
    ctx.db,
    applicationId,
    id,
    { secret: newSecret(), previous_secret: current.secret, previous_secret_until: until },
    now,
  );
  return endpointSecret(ctx, applicationId, id);
}

/** The check of RecoverInput's `since` that the OpenAPI document says as `format: date-time` (Date.parse reads more
 *  forms than RFC 3339's; the document names the one to send). */
export const IsDateTime = v.check(
  (s: string) => !Number.isNaN(Date.parse(s)),
  'must be an ISO 8601 date-time',
);

export const RecoverInput = v.strictObject({
  since: v.pipe(v.string('must be a date-time string'), IsDateTime),
});

/** Queues again every dead or failed event of the endpoint created at or after `since` (fresh retry schedule, due now,
 *  in sequence order per subscription); returns how many. */
export async function recoverEndpoint(
  ctx: Ctx,
  applicationId: string,
  id: string,
  input: unknown,
): Promise<{ count: number }> {
  await requireEndpoint(ctx, applicationId, id);
  const since = new Date(validate(RecoverInput, input).since).toISOString();
  const count = await requeueEndpointEvents(ctx.db, id, since, ctx.clock.now());
  if (count > 0) ctx.nudgeDeliverer();
  return { count };
}

/** filter_types as stored: JSON text, or NULL for every type. */
function filterText(types: SubscriptionEventType[] | null | undefined): string | null {
  return types === null || types === undefined ? null : JSON.stringify(types);
}

function checkPrivate(ctx: Ctx, url: string): void {
  const issue = privateHostIssue('url', url, ctx.config.network.allow_private);
  if (issue) throw invalid([issue]);
}
