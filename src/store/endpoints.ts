// SQL for endpoints: webhook URLs with their signing secrets and delivery health.
import type { Sql } from '../db/engine.ts';
import { jsonValues, updateRow } from './sql.ts';
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
export async function insertEndpoint(
  db: Sql,
  row: Pick<
    EndpointRow,
    'id' | 'application_id' | 'title' | 'url' | 'secret' | 'created_at' | 'filter_types'
  > &
    Partial<Pick<EndpointRow, 'headers' | 'rate_limit'>>,
): Promise<void> {
  await db.run(
    `INSERT INTO endpoints (id, application_id, title, url, secret, created_at, updated_at, filter_types, headers,
                           rate_limit)
              VALUES (@id, @application_id, @title, @url, @secret, @created_at, @created_at, @filter_types, @headers,
                      @rate_limit)`,
    { headers: null, rate_limit: null, ...row },
  );
}

/** Returns the application's endpoint, or undefined (also when it belongs to another application). */
export async function getEndpoint(
  db: Sql,
  applicationId: string,
  id: string,
): Promise<EndpointRow | undefined> {
  return db.get<EndpointRow>('SELECT * FROM endpoints WHERE id = ? AND application_id = ?', [
    id,
    applicationId,
  ]);
}

/** Returns an endpoint by id whatever its application (delivery side only). */
export async function getEndpointById(db: Sql, id: string): Promise<EndpointRow | undefined> {
  return db.get<EndpointRow>('SELECT * FROM endpoints WHERE id = ?', [id]);
}

/** Which of `ids` are endpoints that still exist, whatever their application (one primary-key probe each). */
export async function existingEndpointIds(db: Sql, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  return new Set(
    await db.column<string>(`SELECT id FROM endpoints WHERE id IN (${jsonValues(db, '?')})`, [
      JSON.stringify(ids),
    ]),
  );
}

/** One page of the application's endpoints, newest first. */
export async function listEndpoints(
  db: Sql,
  applicationId: string,
  q: PageQuery,
): Promise<Page<EndpointRow>> {
  const c = cursor(q.after);
  const rows = await db.all<EndpointRow>(
    `SELECT * FROM endpoints WHERE application_id = ?${c.sql} ORDER BY id DESC LIMIT ?`,
    [applicationId, ...c.params, q.limit + 1],
  );
  return toPage(rows, q.limit);
}

/** Applies the given changes; returns the updated row, or undefined when not the application's. */
export async function updateEndpoint(
  db: Sql,
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
): Promise<EndpointRow | undefined> {
  await updateRow(db, 'endpoints', patch, { id, application_id: applicationId }, now);
  return getEndpoint(db, applicationId, id);
}

/** Number of subscriptions using the endpoint. */
export async function countEndpointSubscriptions(db: Sql, id: string): Promise<number> {
  return (await db.get<{
    n: number;
  }>('SELECT count(*) AS n FROM subscriptions WHERE endpoint_id = ?', [id]))!.n;
}

/** Deletes the endpoint and its events (test pings, and events of subscriptions moved to another endpoint); returns
 *  false when not the application's. */
export async function deleteEndpoint(db: Sql, applicationId: string, id: string): Promise<boolean> {
  if ((await getEndpoint(db, applicationId, id)) === undefined) return false;
  await deleteEndpointEvents(db, id);
  return (await db.run('DELETE FROM endpoints WHERE id = ?', [id])) > 0;
}

/** A delivery succeeded: the endpoint's run of failures ends. */
export async function markEndpointHealthy(db: Sql, id: string): Promise<void> {
  await db.run(
    'UPDATE endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL',
    [id],
  );
}

/** A delivery failed: starts the run of failures if none; returns when the run started. */
export async function markEndpointFailing(db: Sql, id: string, now: Date): Promise<string> {
  return (await db.value(
    'UPDATE endpoints SET failing_since = coalesce(failing_since, ?) WHERE id = ? RETURNING failing_since',
    [now.toISOString(), id],
  )) as string;
}

/** Disables an endpoint with a reason shown in the API and dashboard; delivery to it stops until it is re-enabled. */
export async function disableEndpoint(
  db: Sql,
  id: string,
  reason: string,
  now: Date,
): Promise<void> {
  await db.run(
    "UPDATE endpoints SET status = 'disabled', disabled_reason = ?, updated_at = ? WHERE id = ? AND status = 'active'",
    [reason, now.toISOString(), id],
  );
}

/** Number of endpoints the application has (quotas.endpoints_per_application). */
export async function countApplicationEndpoints(db: Sql, applicationId: string): Promise<number> {
  return (await db.value('SELECT count(*) FROM endpoints WHERE application_id = ?', [
    applicationId,
  ])) as number;
}
