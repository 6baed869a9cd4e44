// Form plumbing shared by the dashboard pages: reading posted forms after their CSRF check, field errors, notices after redirects.
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { DashboardSession } from '../../actions/sessions.ts';
import type { Ctx } from '../../context.ts';
import { ApiError } from '../../errors.ts';
import { isId } from '../../ids.ts';
import { checkCsrf, viewer, type DashEnv } from './session.ts';

/** Field path → message, shown beside the field. */
export type FieldErrors = Record<string, string>;
/** What a re-rendered form shows: the values the user typed and the errors beside them. */
export type FormState = {
  values: Record<string, string>;
  errors: FieldErrors;
  message?: string | undefined;
};

/** The form's string fields (files are ignored); an empty object for a body that is not a form. */
export async function readForm(c: Context): Promise<Record<string, string>> {
  const type = (c.req.header('content-type') ?? '').toLowerCase();
  if (
    !type.startsWith('application/x-www-form-urlencoded') &&
    !type.startsWith('multipart/form-data')
  )
    return {};
  const body = await c.req.parseBody();
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(body)) if (typeof v === 'string') out[k] = v;
  return out;
}

/** A POST's form and the signed-in viewer, once the form's CSRF token matched (else CsrfError: the 403 page). */
export async function readPostedForm(
  c: Context<DashEnv>,
): Promise<{ session: DashboardSession; form: Record<string, string> }> {
  const session = viewer(c);
  const form = await readForm(c);
  checkCsrf(session, form);
  return { session, form };
}

/** A POST to a resource page the viewer owns (`/dashboard/<kind>/:id`): what each of its actions needs. */
export type Posted = {
  ctx: Ctx;
  c: Context<DashEnv>;
  applicationId: string;
  id: string;
  here: string;
  form: Record<string, string>;
};

/** Reads a POST to `/dashboard/<kind>/:id` after its CSRF check; `requireOwned` answers 404 for another application's id. */
export async function readPosted(
  ctx: Ctx,
  c: Context<DashEnv>,
  kind: 'endpoints' | 'subscriptions',
  requireOwned: (ctx: Ctx, applicationId: string, id: string) => Promise<unknown>,
): Promise<Posted> {
  const { session, form } = await readPostedForm(c);
  const id = c.req.param('id') ?? '';
  await requireOwned(ctx, session.applicationId, id);
  const here = `/dashboard/${kind}/${id}`;
  return { ctx, c, applicationId: session.applicationId, id, here, form };
}

/** The 400 for an `_action` the page does not have: a crafted form gets an answer, never a 500. */
export function unknownAction(): ApiError {
  return new ApiError(
    400,
    'Unknown action',
    'The form asked for an action this page does not have.',
  );
}

/** What a delete form shows when posted without its box ticked. */
export function unconfirmedDelete(): FormState {
  return {
    values: {},
    errors: { confirm: 'tick this box to confirm' },
    message: 'Please confirm the deletion.',
  };
}

/** The field errors of an ApiError (400 with `errors`), keyed by path; `(body)` issues keep their key. */
export function fieldErrors(err: ApiError): FieldErrors {
  return Object.fromEntries((err.errors ?? []).map((e) => [e.path, e.message]));
}

/** True for errors a form shows to the user (invalid fields, conflicts); false for 404s and bugs, which the error page handles. */
export function isFormError(err: unknown): err is ApiError {
  return err instanceof ApiError && err.status !== 404;
}

/** The HTTP status a re-rendered form answers with: the action's own (400 invalid, 409 conflict, 429 over a quota…),
 *  with the headers the error carries set on the response (a quota's Retry-After). */
export function statusOf(c: Context, err: ApiError): ContentfulStatusCode {
  for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value);
  return err.status as ContentfulStatusCode;
}

const CORRECT_FIELDS = 'Please correct the fields marked below.';

/** A form state with errors beside its fields, and the message above the page that points to them. */
export function invalidForm(values: Record<string, string>, errors: FieldErrors): FormState {
  return { values, errors, message: CORRECT_FIELDS };
}

/** A form state from an action's ApiError: field errors, plus the detail when no field is named. */
export function formStateFrom(err: ApiError, values: Record<string, string>): FormState {
  const errors = fieldErrors(err);
  return {
    values,
    errors,
    message: Object.keys(errors).length ? CORRECT_FIELDS : err.message,
  };
}

/** Messages shown after a redirect, chosen by a fixed key so nothing the user typed is reflected. */
const NOTICES: Record<string, string> = {
  'signed-out': 'You are signed out. Sign in again with an API key.',
  'endpoint-created':
    'Endpoint created. Its signing secret is shown below: configure your receiver with it.',
  'endpoint-updated': 'Endpoint saved.',
  'endpoint-enabled': 'Endpoint enabled; waiting deliveries resume.',
  'endpoint-disabled': 'Endpoint disabled; deliveries wait until you enable it again.',
  'endpoint-deleted': 'Endpoint deleted.',
  'secret-rotated':
    'Secret rotated. Deliveries carry signatures with both the new and the previous secret during the grace period.',
  'test-delivered':
    'Test event delivered: the endpoint answered with a 2xx status. Its attempt is shown below.',
  'test-failed':
    'Test event not delivered: see the attempt below for the status or error. A test event is not retried.',
  'events-recovered': 'Failed and dead events of this endpoint were queued again.',
  'nothing-to-recover':
    'No failed or dead event of this endpoint was created since that time; nothing was queued.',
  'subscription-created':
    'Subscription created. The feed is fetched within seconds; its first fetch sets the baseline and sends nothing.',
  'subscription-updated': 'Subscription saved.',
  'filter-saved':
    'Filter saved. It decides which entries are sent from the next document of the feed on.',
  'subscription-paused': 'Subscription paused; new entries are not sent until you resume it.',
  'subscription-resumed': 'Subscription resumed.',
  'subscription-deleted': 'Subscription deleted.',
  'held-delivered':
    'The held entries were queued as events for every active subscription of the feed.',
  'held-discarded': 'The held entries were marked as seen; nothing was sent.',
  'feed-refreshed': 'The feed is fetched within seconds.',
  'event-resent': 'Event queued to be sent again with the same webhook-id.',
};

/** The notice named by `?notice=`, if it is one we know. */
export function noticeOf(c: Context): string | undefined {
  const key = c.req.query('notice');
  return key ? NOTICES[key] : undefined;
}

/** A dashboard-internal path to return to after sign-in; anything else becomes /dashboard (no open redirects). */
export function safeNext(value: string | undefined): string {
  return value && /^\/dashboard(\/[A-Za-z0-9_\-/]*)?$/.test(value) ? value : '/dashboard';
}

/** An id from the query string, or undefined when absent or malformed. */
export function queryId(c: Context, name: string): string | undefined {
  const v = c.req.query(name);
  return isId(v) ? v : undefined;
}

/** The `?after=` cursor when well-formed. */
export function afterCursor(c: Context): string | undefined {
  return queryId(c, 'after');
}
