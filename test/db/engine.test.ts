// The store contract (src/db/engine.ts) on both engines: the same statements give the same values, transactions commit
// whole or not at all, and writers racing on one row lose no update.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dialect, type Engine } from '../../src/db/engine.ts';
import { openDatabase } from '../../src/db/open.ts';
import { toPositional } from '../../src/db/postgres-engine.ts';
import { SqliteEngine } from '../../src/db/sqlite-engine.ts';
import { sharedPostgres, testEngine } from '../support/postgres.ts';

const TABLES = [
  'CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER NOT NULL, note TEXT)',
  'CREATE TABLE counters (id TEXT PRIMARY KEY, n INTEGER NOT NULL)',
];

type Made = { engine: Engine; done: () => Promise<void> };

const engines: [string, () => Promise<Made>][] = [
  [
    'SQLite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'feedsub-engine-'));
      const db = openDatabase(join(dir, 'feedsub.db'));
      for (const t of TABLES) db.exec(t);
      const engine = new SqliteEngine(db);
      return {
        engine,
        done: async () => {
          await engine.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const engine = testEngine(await (await sharedPostgres()).newDatabase(), { poolSize: 25 });
      await engine.write(async (sql) => {
        for (const t of TABLES) await sql.run(t);
      });
      return { engine, done: () => engine.close() };
    },
  ],
];

for (const [name, make] of engines) {
  describe(`the store contract on ${name}`, () => {
    let made: Made;
    let engine: Engine;
    before(async () => {
      made = await make();
      engine = made.engine;
    });
    after(() => made?.done());

    it('binds parameters by name and by position, and reads integers as numbers and NULL as null', async () => {
      await engine.write(async (sql) => {
        assert.equal(
          await sql.run('INSERT INTO items (id, n, note) VALUES (@id, @n, @note)', {
            id: 'a',
            n: 1,
            note: null,
          }),
          1,
        );
        await sql.run('INSERT INTO items (id, n, note) VALUES (?, ?, ?)', ['b', 2, "it's"]);
        await sql.run('INSERT INTO items (id, n, note) VALUES (@id, @n, @id)', { id: 'c', n: 3 });
      });
      await engine.read(async (sql) => {
        assert.deepEqual(await sql.all('SELECT id, n, note FROM items ORDER BY id'), [
          { id: 'a', n: 1, note: null },
          { id: 'b', n: 2, note: "it's" },
          { id: 'c', n: 3, note: 'c' },
        ]);
        assert.deepEqual(await sql.get('SELECT COUNT(*) AS count, SUM(n) AS total FROM items'), {
          count: 3,
          total: 6,
        });
        assert.deepEqual(
          await sql.column('SELECT id FROM items WHERE n >= @min ORDER BY id', { min: 2 }),
          ['b', 'c'],
        );
        assert.equal(await sql.get('SELECT id FROM items WHERE id = ?', ['zz']), undefined);
        assert.equal(await sql.value('SELECT id FROM items WHERE n >= ? ORDER BY id', [2]), 'b');
        assert.equal(await sql.value('SELECT n FROM items WHERE id = ?', ['zz']), undefined);
        assert.equal(
          await sql
            .get("SELECT COUNT(*) AS n FROM items WHERE note = '@id?'")
            .then((r) => (r as { n: number }).n),
          0,
          'an @ or ? inside a quoted string is text, not a parameter',
        );
      });
      assert.equal(await engine.value('SELECT COUNT(*) FROM items'), 3);
    });

    it('runs a script of several statements, without parameters', async () => {
      await engine.write((sql) =>
        sql.exec(
          "CREATE TABLE scripted (id TEXT PRIMARY KEY); INSERT INTO scripted VALUES ('s1'); INSERT INTO scripted VALUES ('s2');",
        ),
      );
      assert.deepEqual(
        await engine.read((sql) => sql.column('SELECT id FROM scripted ORDER BY id')),
        ['s1', 's2'],
      );
    });

    it('commits a write whole, and rolls it back whole when it throws', async () => {
      await assert.rejects(
        engine.write(async (sql) => {
          await sql.run("INSERT INTO items (id, n) VALUES ('d', 4)");
          await sql.run("INSERT INTO items (id, n) VALUES ('a', 9)"); // a duplicate key
        }),
      );
      await engine.read(async (sql) => {
        assert.equal(await sql.get("SELECT id FROM items WHERE id = 'd'"), undefined);
      });
      await engine.write((sql) => sql.run("INSERT INTO items (id, n) VALUES ('d', 4)"));
      assert.deepEqual(
        await engine.read((sql) => sql.column("SELECT n FROM items WHERE id = 'd'")),
        [4],
      );
    });

    it('shows a read none of a write under way: it sees the rows before it or after it, never half', async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let inserted!: () => void;
      const halfway = new Promise<void>((resolve) => (inserted = resolve));
      const writing = engine.write(async (sql) => {
        await sql.run("INSERT INTO items (id, n) VALUES ('e1', 5)");
        inserted();
        await held; // stands for the statements still to come
        await sql.run("INSERT INTO items (id, n) VALUES ('e2', 5)");
      });
      await halfway;
      const reading = engine.read((sql) =>
        sql.column<string>('SELECT id FROM items WHERE n = 5 ORDER BY id'),
      );
      setTimeout(release, 50);
      await writing;
      const seen = await reading;
      assert.ok(seen.length === 0 || seen.length === 2, `the read saw ${JSON.stringify(seen)}`);
    });

    it('loses no update when 20 writers add to one row at once, each reading it first under its lock', async () => {
      await engine.write((sql) => sql.run("INSERT INTO counters (id, n) VALUES ('c', 0)"));
      const locked = dialect(engine.dialect, {
        sqlite: "SELECT n FROM counters WHERE id = 'c'",
        postgres: "SELECT n FROM counters WHERE id = 'c' FOR UPDATE",
      });
      await Promise.all(
        Array.from({ length: 20 }, () =>
          engine.write(async (sql) => {
            const { n } = (await sql.get<{ n: number }>(locked))!;
            await sql.run("UPDATE counters SET n = @n WHERE id = 'c'", { n: n + 1 });
          }),
        ),
      );
      assert.deepEqual(
        await engine.read((sql) => sql.column("SELECT n FROM counters WHERE id = 'c'")),
        [20],
      );
    });

    it('completes two writes that take the same two rows in opposite orders', async () => {
      await engine.write(async (sql) => {
        await sql.run("INSERT INTO counters (id, n) VALUES ('x', 0), ('y', 0)");
      });
      const bump = (id: string) => `UPDATE counters SET n = n + 1 WHERE id = '${id}'`;
      let bothIn!: () => void;
      let count = 0;
      const together = new Promise<void>((resolve) => (bothIn = resolve));
      // Each takes its first row, waits (once) until the other has its own, then takes the other's: on PostgreSQL one
      // of them is chosen as the deadlock's victim and run again; on SQLite they run one after the other.
      const writer = (first: string, second: string) => {
        let waited = false;
        return engine.write(async (sql) => {
          await sql.run(bump(first));
          if (!waited && engine.dialect === 'postgres') {
            waited = true;
            if (++count === 2) bothIn();
            await Promise.race([together, new Promise((r) => setTimeout(r, 2000))]);
          }
          await sql.run(bump(second));
        });
      };
      await Promise.all([writer('x', 'y'), writer('y', 'x')]);
      assert.deepEqual(
        await engine.read((sql) =>
          sql.all("SELECT id, n FROM counters WHERE id IN ('x', 'y') ORDER BY id"),
        ),
        [
          { id: 'x', n: 2 },
          { id: 'y', n: 2 },
        ],
      );
    });
  });
}

describe('@name and ? parameters in PostgreSQL texts', () => {
  it('numbers each name once, in order of first use', () => {
    assert.deepEqual(toPositional('SELECT * FROM t WHERE a = @a AND b = @b OR a = @a'), {
      text: 'SELECT * FROM t WHERE a = $1 AND b = $2 OR a = $1',
      names: ['a', 'b'],
      count: 2,
    });
  });

  it('numbers ? in order, and leaves quoted strings, identifiers and comments alone', () => {
    assert.deepEqual(
      toPositional(`SELECT '@x?', "we@ird?" FROM t -- a @comment?\nWHERE a = ? AND b = ?`),
      {
        text: `SELECT '@x?', "we@ird?" FROM t -- a @comment?\nWHERE a = $1 AND b = $2`,
        names: null,
        count: 2,
      },
    );
  });

  it('refuses a text that mixes the two', () => {
    assert.throws(() => toPositional('SELECT 1 WHERE a = ? AND b = @b'), /both \? and @name/);
  });
});
