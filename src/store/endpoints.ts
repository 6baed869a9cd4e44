// SQL for endpoints: webhook URLs with their signing secrets and delivery health.
import type { Db } from '../db/open.ts';
import { prepared, updateRow } from './sql.ts';
import { cursor, toPage, type Page, type PageQuery } from './page.ts';
import { deleteEndpointEvents } from './events.ts';

export type EndpointRow = {
  id: string;
  application_id: string;
  title: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  status: 'active' | 'disabled';
  disabled_reason: string | null;
  failing_since: string | null;
  created_at: string;
  updated_at: string;
  /** JSON array of the event types the endpoint receives; null = every type. */
  filter_types: string | null;
  /** JSON object of extra headers sent with every attempt; null = none. */
  headers: string | null;
  /** Attempts the endpoint may start in any one second; null = no limit. */
  rate_limit: number | null;
};

/** Stores a new endpoint; the delivery options left out are none. */
export function insertEndpoint(
  db: Db,
  row: Pick<
    EndpointRow,
    'id' | 'application_id' | 'title' | 'url' | 'secret' | 'created_at' | 'filter_types'
  > &
    Partial<Pick<EndpointRow, 'headers' | 'rate_limit'>>,
): void {
  prepared(
    db,
    `INSERT INTO endpoints (id, application_id, title, url, secret, created_at, updated_at, filter_types, headers,
                           rate_limit)
              VALUES (@id, @application_id, @title, @url, @secret, @created_at, @created_at, @filter_types, @headers,
                      @rate_limit)`,
  ).run({ headers: null, rate_limit: null, ...row });
}

/** Returns the application's endpoint, or undefined (also when it belongs to another application). */
export function getEndpoint(db: Db, applicationId: string, id: string): EndpointRow | undefined {
  return prepared(db, 'SELECT * FROM endpoints WHERE id = ? AND application_id = ?').get(
    id,
    applicationId,
  ) as EndpointRow | undefined;
}

/** Returns an endpoint by id whatever its application (delivery side only). */
export function getEndpointById(db: Db, id: string): EndpointRow | undefined {
  return prepared(db, 'SELECT * FROM endpoints WHERE id = ?').get(id) as EndpointRow | undefined;
}

/** Which of `ids` are endpoints that still exist, whatever their application (one primary-key probe each). */
export function existingEndpointIds(db: Db, ids: string[]): Set<string> {
  if (ids.length === 0) return new Set();
  return new Set(
    prepared(db, 'SELECT id FROM endpoints WHERE id IN (SELECT value FROM json_each(?))')
      .pluck()
      .all(JSON.stringify(ids)) as string[],
  );
}

/** One page of the application's endpoints, newest first. */
export function listEndpoints(db: Db, applicationId: string, q: PageQuery): Page<EndpointRow> {
  const c = cursor(q.after);
  const rows = prepared(
    db,
    `SELECT * FROM endpoints WHERE application_id = ?${c.sql} ORDER BY id DESC LIMIT ?`,
  ).all(applicationId, ...c.params, q.limit + 1) as EndpointRow[];
  return toPage(rows, q.limit);
}

/** Applies the given changes; returns the updated row, or undefined when not the application's. */
export function updateEndpoint(
  db: Db,
  applicationId: string,
  id: string,
  patch: Partial<
    Pick<
      EndpointRow,
      | 'title'
      | 'url'
      | 'status'
      | 'disabled_reason'
      | 'failing_since'
      | 'secret'
      | 'previous_secret'
      | 'previous_secret_until'
      | 'filter_types'
      | 'headers'
      | 'rate_limit'
    >
  >,
  now: Date,
): EndpointRow | undefined {
  updateRow(db, 'endpoints', patch, { id, application_id: applicationId }, now);
  return getEndpoint(db, applicationId, id);
}

/** Number of subscriptions using the endpoint. */
export function countEndpointSubscriptions(db: Db, id: string): number {
  return (
    prepared(db, 'SELECT count(*) AS n FROM subscriptions WHERE endpoint_id = ?').get(id) as {
      n: number;
    }
  ).n;
}

/** Deletes the endpoint and its events (test pings, and events of subscriptions moved to another endpoint); returns
 *  false when not the application's. */
export function deleteEndpoint(db: Db, applicationId: string, id: string): boolean {
  if (getEndpoint(db, applicationId, id) === undefined) return false;
  deleteEndpointEvents(db, id);
  return prepared(db, 'DELETE FROM endpoints WHERE id = ?').run(id).changes > 0;
}

/** A delivery succeeded: the endpoint's run of failures ends. */
export function markEndpointHealthy(db: Db, id: string): void {
  prepared(
    db,
    'UPDATE endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL',
  ).run(id);
}

/** A delivery failed: starts the run of failures if none; returns when the run started. */
export function markEndpointFailing(db: Db, id: string, now: Date): string {
  return prepared(
    db,
    'UPDATE endpoints SET failing_since = coalesce(failing_since, ?) WHERE id = ? RETURNING failing_since',
  )
    .pluck()
    .get(now.toISOString(), id) as string;
}

/** Disables an endpoint with a reason shown in the API and dashboard; delivery to it stops until it is re-enabled. */
export function disableEndpoint(db: Db, id: string, reason: string, now: Date): void {
  prepared(
    db,
    "UPDATE endpoints SET status = 'disabled', disabled_reason = ?, updated_at = ? WHERE id = ? AND status = 'active'",
  ).run(reason, now.toISOString(), id);
}

/** Number of endpoints the application has (quotas.endpoints_per_application). */
export function countApplicationEndpoints(db: Db, applicationId: string): number {
  return prepared(db, 'SELECT count(*) FROM endpoints WHERE application_id = ?')
    .pluck()
    .get(applicationId) as number;
}
