// SQL for what an event is about, read from its stored body: the feed's title and URL, and its first entries' titles
// (the dashboard's lists show these instead of bare ids).
import type { Sql } from '../db/engine.ts';
import { jsonValues } from './sql.ts';
import { dialect } from '../db/engine.ts';

/** What an event's body says it is about; every field null when the body does not say (a test ping). */
export type EventSummary = {
  feed_title: string | null;
  feed_url: string | null;
  entry_count: number | null;
  /** The titles of its first entries (at most `maxTitles`), null for an entry without one. */
  titles: (string | null)[];
};

/** The summaries of the events `ids` (at most one page of a list), by id. Each body is read by its primary key
 *  (event_bodies) and parsed once by the database's JSON functions, which return only these few fields; a body that is not
 *  JSON (never written by feedsub) reads as saying nothing. */
export async function eventSummaries(
  db: Sql,
  ids: string[],
  maxTitles = 3,
): Promise<Map<string, EventSummary>> {
  if (ids.length === 0) return new Map();
  const rows = await db.all<
    Omit<EventSummary, 'titles'> & {
      id: string;
      titles: string | null;
    }
  >(
    dialect(db.dialect, {
      sqlite: `SELECT id, json_extract(j, '$.data.feed.title') AS feed_title, json_extract(j, '$.data.feed.url') AS feed_url,
            json_array_length(j, '$.data.entries') AS entry_count,
            (SELECT json_group_array(json_extract(value, '$.title'))
               FROM (SELECT value FROM json_each(j, '$.data.entries') LIMIT ?)) AS titles
       FROM (SELECT event_id AS id, CASE WHEN json_valid(body) THEN body ELSE '{}' END AS j
               FROM event_bodies WHERE event_id IN (SELECT value FROM json_each(?))) b`,
      // PostgreSQL 14 has no test for valid JSON text: every body feedsub writes is JSON.
      postgres: `SELECT id, j #>> '{data,feed,title}' AS feed_title, j #>> '{data,feed,url}' AS feed_url,
            CASE WHEN json_typeof(j #> '{data,entries}') = 'array' THEN json_array_length(j #> '{data,entries}') END
              AS entry_count,
            (SELECT json_agg(t.value ->> 'title') FROM (
               SELECT value FROM json_array_elements(
                 CASE WHEN json_typeof(j #> '{data,entries}') = 'array' THEN j #> '{data,entries}' ELSE '[]' END)
               LIMIT ?) t)::text AS titles
       FROM (SELECT event_id AS id, body::json AS j
               FROM event_bodies WHERE event_id IN (${jsonValues(db, '?')})) b`,
    }),
    [maxTitles, JSON.stringify(ids)],
  );
  return new Map(
    rows.map((r) => [
      r.id,
      {
        feed_title: r.feed_title,
        feed_url: r.feed_url,
        entry_count: r.entry_count,
        titles: r.titles === null ? [] : (JSON.parse(r.titles) as (string | null)[]),
      },
    ]),
  );
}
