// Cursor pagination shared by the list queries: newest first, `after` = last id of the previous page.
export type Page<T> = { data: T[]; next: string | null };
export type PageQuery = { limit: number; after?: string | undefined };

/** Turns `limit + 1` rows fetched newest-first into a page and the cursor of the next one. */
export function toPage<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  const data = rows.slice(0, limit);
  return { data, next: rows.length > limit ? (data[data.length - 1]?.id ?? null) : null };
}

/** The SQL condition and parameter for a cursor, for `id < ?` pagination. */
export function cursor(after: string | undefined): { sql: string; params: string[] } {
  return after ? { sql: ' AND id < ?', params: [after] } : { sql: '', params: [] };
}
