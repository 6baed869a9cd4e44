// Every statement the store prepares, explained against a populated schema: none may scan a large table unless it is
// allowed below with its reason. Which statements exist is read from src/store itself, so a new one is covered or fails.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Db } from '../../src/db/open.ts';
import { SqliteEngine } from '../../src/db/sqlite-engine.ts';
import { makeWorld, sqliteOnly, type World } from '../support/world.ts';
import { exerciseStore } from './exercise.ts';
import { explain, scansOf, storeCallSites, type Scan } from './plans.ts';

/** Scans that are allowed, each by a fragment of its statement's text and why walking the whole thing is right. */
const ALLOWED: { sql: string; table: string; reason: string }[] = [
  {
    sql: 'SELECT f.id, f.updated_at, EXISTS',
    table: 'feeds',
    reason:
      'maintenance walks every feed 100 at a time in id order (feedsAfter): a range of the primary key',
  },
  {
    sql: 'min(max(e.next_attempt_at',
    table: 'events',
    reason: 'nextEventDueAt is only called by tests (to move a manual clock), never by src/',
  },
  {
    sql: 'FROM api_keys k JOIN applications a',
    table: 'api_keys',
    reason:
      '`feedsub keys list` shows every key: an operator command, over keys an operator created',
  },
  {
    sql: 'DELETE FROM sessions WHERE last_seen_at <= ?',
    table: 'sessions',
    reason:
      'maintenance, every 10 minutes, over at most 100 sessions per live key; an index on last_seen_at would be rewritten by every touch',
  },
  {
    sql: "UPDATE events SET lease_until = NULL WHERE status IN ('pending', 'failed') AND lease_until IS NOT NULL",
    table: 'events',
    reason: 'once, when serve starts, over the partial index of waiting events only',
  },
  {
    sql: 'FROM events INDEXED BY events_',
    table: 'events',
    reason:
      'a status count for /metrics walks the partial index (events_due, events_delivered, events_dead) holding exactly what it counts',
  },
  {
    sql: "SELECT min(created_at) FROM events WHERE status IN ('pending', 'failed')",
    table: 'events',
    reason:
      "the oldest waiting event's age for /metrics: the partial index of waiting events (events_waiting), nothing else",
  },
  {
    sql: 'SELECT f.status, count(*) AS n FROM feeds f WHERE EXISTS',
    table: 'feeds',
    reason:
      '/metrics counts every polled feed by status: the count is the walk, over the narrow feeds_by_status index (status, id), never a feed row',
  },
  {
    sql: 'SELECT count(*) FROM feeds',
    table: 'feeds',
    reason:
      '/metrics counts every feed (the idle ones are the rest): SQLite counts the narrowest index, never a feed row',
  },
];

/** The world's SQLite engine (whose statement cache tells which statements ran) and its connection (which explains
 *  them): the plans checked are SQLite's. */
function sqliteOf(w: World): { engine: SqliteEngine; db: Db } {
  const engine = w.ctx.store;
  assert.ok(engine instanceof SqliteEngine, 'the plan test runs on SQLite');
  return { engine, db: engine.db };
}

function disallowed(db: Db, sql: string): Scan[] {
  const text = sql.replace(/\s+/g, ' ');
  return scansOf(db, sql).filter(
    (s) => !ALLOWED.some((a) => text.includes(a.sql) && a.table === s.table),
  );
}

test('every statement in src/store is run by the plan test', sqliteOnly, async () => {
  const w = makeWorld();
  try {
    await exerciseStore(w.ctx.db, w.clock.now());
    const seen = sqliteOf(w).engine.preparedTexts();
    const missing = storeCallSites().filter((site) => !seen.some((sql) => site.pattern.test(sql)));
    assert.deepEqual(
      missing.map((m) => m.where),
      [],
      'these statements never ran: add them to exercise.ts',
    );
  } finally {
    await w.close();
  }
});

test(
  'no statement the store prepares scans a large table, unless allowed with a reason',
  sqliteOnly,
  async () => {
    const w = makeWorld();
    try {
      await exerciseStore(w.ctx.db, w.clock.now());
      const { engine, db } = sqliteOf(w);
      const found = engine
        .preparedTexts()
        .flatMap((sql) =>
          disallowed(db, sql).map((s) => ({ sql: sql.replace(/\s+/g, ' ').trim(), ...s })),
        );
      assert.deepEqual(found, []);
    } finally {
      await w.close();
    }
  },
);

test(
  'the plan check finds a scan of a large table, through an alias or an index',
  sqliteOnly,
  async () => {
    const w = makeWorld();
    try {
      const { db } = sqliteOf(w);
      assert.deepEqual(
        scansOf(db, 'SELECT * FROM events e WHERE e.type = ?').map((s) => s.table),
        ['events'],
      );
      assert.deepEqual(
        scansOf(
          db,
          "SELECT f.id FROM feeds f WHERE f.status <> 'gone' AND (@all = 1 OR f.next_poll_at <= @t) ORDER BY f.next_poll_at LIMIT 5",
        ).map((s) => s.table),
        ['feeds'],
      );
      assert.deepEqual(scansOf(db, 'SELECT * FROM events WHERE id = ?'), []);
      assert.match(explain(db, 'SELECT * FROM feeds WHERE id = ?').join('\n'), /SEARCH/);
    } finally {
      await w.close();
    }
  },
);

/** Runs the store's workload, then checks each prepared list statement `lists` picks: every filter combination ran,
 *  the plan seeks on one of the statement's `AND <column> = ?` filters, and it does not sort (unless `sorts` says it
 *  may: a seek that finds a few rows). */
async function checkListPlans(opts: {
  lists: RegExp;
  filter: RegExp;
  atLeast: number;
  sorts?: (sql: string) => boolean;
}): Promise<void> {
  const w = makeWorld();
  try {
    await exerciseStore(w.ctx.db, w.clock.now());
    const { engine, db } = sqliteOf(w);
    const lists = engine.preparedTexts().filter((sql) => opts.lists.test(sql));
    assert.ok(lists.length >= opts.atLeast, 'every filter combination was run');
    for (const sql of lists) {
      const plan = explain(db, sql).join('\n');
      if (!opts.sorts?.(sql)) assert.doesNotMatch(plan, /TEMP B-TREE/, sql);
      const filters = [...sql.matchAll(opts.filter)].map((m) => m[1]!);
      if (filters.length > 0)
        assert.ok(
          filters.some((f) => plan.includes(`${f}=?`)),
          `${sql}\n${plan}\nseeks on none of ${filters.join(', ')}`,
        );
    }
  } finally {
    await w.close();
  }
}

test(
  'each filter of GET /v1/events seeks on its own column, in id order, without sorting',
  sqliteOnly,
  () =>
    checkListPlans({
      lists: /FROM events(?: INDEXED BY \w+)?\s+WHERE application_id = \?/,
      filter: /AND (\w+) = \?/g,
      atLeast: 6,
    }),
);

test(
  'each filter of GET /v1/subscriptions seeks on its own column, in id order, without sorting',
  sqliteOnly,
  () =>
    checkListPlans({
      lists: /WHERE s\.application_id = \?.*ORDER BY s\.id DESC/s,
      filter: /AND s\.(\w+) = \?/g,
      atLeast: 3,
      // ?feed= sorts what it seeks: the application's subscriptions to one feed, a few rows.
      sorts: (sql) => sql.includes('INDEXED BY subscriptions_by_application_feed'),
    }),
);

test(
  "the trace's lookups by guid and by URL each seek on the feed and the value in their own index, without sorting",
  sqliteOnly,
  async () => {
    const w = makeWorld();
    try {
      await exerciseStore(w.ctx.db, w.clock.now());
      const { engine, db } = sqliteOf(w);
      const lookups = engine.preparedTexts().flatMap((sql) => {
        const m =
          /FROM (entry_history|held_entries)\s+WHERE feed_id = \? AND entry ->> '\$\.(guid|url)' = \?/.exec(
            sql,
          );
        return m ? [{ sql, table: m[1]!, field: m[2]! }] : [];
      });
      assert.deepEqual(
        lookups.map((l) => `${l.table} by ${l.field}`).sort(),
        [
          'entry_history by guid',
          'entry_history by url',
          'held_entries by guid',
          'held_entries by url',
        ],
        'every lookup ran',
      );
      for (const l of lookups) {
        const plan = explain(db, l.sql).join('\n');
        assert.match(
          plan,
          new RegExp(
            `^SEARCH ${l.table} USING (COVERING )?INDEX ${l.table}_by_${l.field} \\(feed_id=\\? AND <expr>=\\?\\)$`,
          ),
          `${l.sql}\n${plan}`,
        );
      }
    } finally {
      await w.close();
    }
  },
);
