// Query plans for the plan test: the statements src/store runs (read from the source), EXPLAIN QUERY PLAN of a statement
// with every parameter bound to NULL, and the scans of large tables a plan makes. The plans are SQLite's: these read
// the raw connection under the engine (sqliteConnection), never the store contract.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import type { Db } from '../../src/db/open.ts';

/** Tables that grow with feeds, entries or deliveries: walking one of them whole is what a request or loop must never do. */
export const LARGE_TABLES = [
  'feeds',
  'subscriptions',
  'entries',
  'entry_history',
  'websub_subscriptions',
  'held_entries',
  'events',
  'event_bodies',
  'attempts',
  'event_entries',
  'idempotency_keys',
  'sessions',
  'quota_usage',
  'feed_poll_hours',
  'endpoints',
  'api_keys',
];

/** One statement in src/store, run by a `db.all|get|column|run(text, …)` call: where its text is, and a pattern its SQL
 *  texts match (a `${…}` matches any). */
export type CallSite = { where: string; pattern: RegExp };

const STORE = new URL('../../src/store/', import.meta.url).pathname;

/** The methods of the store contract (src/db/engine.ts) that run one statement, prepared by the SQLite engine. */
const RUNS = new Set(['all', 'get', 'column', 'run']);

/** Every statement src/store/*.ts runs: the text of each `db.all|get|column|run(…)` call, followed to its `const` when
 *  the call names one; a text used by several calls is one site. */
export function storeCallSites(): CallSite[] {
  const sites = new Map<string, CallSite>();
  for (const name of readdirSync(STORE).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(join(STORE, name), 'utf8');
    const file = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        ts.isIdentifier(node.expression.expression) &&
        node.expression.expression.text === 'db' &&
        RUNS.has(node.expression.name.text) &&
        node.arguments.length >= 1 &&
        !postgresOnly(node)
      ) {
        const arg = textOf(node.arguments[0]!);
        const line = file.getLineAndCharacterOfPosition(arg.getStart()).line + 1;
        const where = `src/store/${name}:${line}`;
        if (!sites.has(where)) sites.set(where, { where, pattern: patternOf(arg) });
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return [...sites.values()];
}

/** True for a statement that runs only on PostgreSQL (under `if (db.dialect === 'postgres')`): SQLite never prepares
 *  it, so it has no SQLite plan. */
function postgresOnly(node: ts.Node): boolean {
  for (let at: ts.Node = node; at.parent; at = at.parent)
    if (
      ts.isIfStatement(at.parent) &&
      at === at.parent.thenStatement &&
      /\bdialect === 'postgres'/.test(at.parent.expression.getText())
    )
      return true;
  return false;
}

/** The expression a statement's text comes from: `arg` itself, or the initializer of the `const` it names (declared in
 *  an enclosing block or the file). */
function textOf(arg: ts.Expression): ts.Expression {
  if (!ts.isIdentifier(arg)) return arg;
  for (let scope: ts.Node | undefined = arg.parent; scope; scope = scope.parent) {
    if (!ts.isBlock(scope) && !ts.isSourceFile(scope)) continue;
    for (const statement of scope.statements) {
      if (!ts.isVariableStatement(statement)) continue;
      for (const decl of statement.declarationList.declarations)
        if (ts.isIdentifier(decl.name) && decl.name.text === arg.text && decl.initializer)
          return decl.initializer;
    }
  }
  return arg;
}

function patternOf(arg: ts.Expression): RegExp {
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg))
    return new RegExp(`^${escape(arg.text)}$`);
  if (ts.isTemplateExpression(arg)) {
    const parts = [arg.head.text, ...arg.templateSpans.map((s) => s.literal.text)].map(escape);
    return new RegExp(`^${parts.join('[\\s\\S]*')}$`);
  }
  return /[\s\S]*/; // built elsewhere: any statement the workload ran through it
}

/** The plan of `sql`, one detail line per step. Every parameter is bound to NULL: the plan does not depend on values. */
export function explain(db: Db, sql: string): string[] {
  const named = [...new Set([...sql.matchAll(/[@:$]([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!))];
  const positional = (sql.replace(/'[^']*'/g, '').match(/\?/g) ?? []).length;
  const stmt = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
  const args: unknown[] = Array.from({ length: positional }, () => null);
  if (named.length > 0) args.push(Object.fromEntries(named.map((n) => [n, null])));
  return (stmt.all(...args) as { detail: string }[]).map((r) => r.detail);
}

/** A step that reads a large table (or one of its indexes) from end to end. */
export type Scan = { table: string; detail: string };

/** The scans of large tables in the plan of `sql`; aliases (`FROM feeds f`) and index names are resolved to tables. */
export function scansOf(db: Db, sql: string): Scan[] {
  const aliases = new Map<string, string>();
  for (const m of sql.matchAll(
    /\b(?:FROM|JOIN|UPDATE|INTO)\s+([a-z_]+)(?:\s+(?:AS\s+)?([a-z_]+))?/gi,
  )) {
    aliases.set(m[1]!, m[1]!);
    if (m[2] && !/^(WHERE|SET|ON|JOIN|LEFT|INNER|ORDER|GROUP|LIMIT|VALUES|USING)$/i.test(m[2]))
      aliases.set(m[2], m[1]!);
  }
  const indexes = new Map(
    (
      db.prepare("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'").all() as {
        name: string;
        tbl_name: string;
      }[]
    ).map((r) => [r.name, r.tbl_name]),
  );
  const scans: Scan[] = [];
  for (const detail of explain(db, sql)) {
    // SCAN reads a table or an index end to end; so does a SEARCH with no constraint (a partial index read whole).
    const m = /^(SCAN|SEARCH) (\S+)(?: USING (?:COVERING )?INDEX (\S+))?( \(.*)?$/.exec(detail);
    if (!m || (m[1] === 'SEARCH' && m[4] !== undefined)) continue;
    const table = (m[3] ? indexes.get(m[3]) : undefined) ?? aliases.get(m[2]!) ?? m[2]!;
    if (LARGE_TABLES.includes(table)) scans.push({ table, detail });
  }
  return scans;
}
