// The bench's result table, in the order the measures were taken (a PostgreSQL row beside its SQLite row), and the rate
// and median arithmetic of its values.

/** Adds one line to the table. */
export type Row = (what: string, value: string, note?: string) => void;
export type Table = { row: Row; print: (title: string) => void };

/** The label prefix of a row measured on PostgreSQL: such a row whose label is otherwise another row's is printed right
 *  after that one, wherever it was measured, so the two engines' figures read side by side. */
export const POSTGRES = 'PostgreSQL: ';

/** `row` with POSTGRES before every label. */
export const onPostgres =
  (row: Row): Row =>
  (what, value, note) =>
    row(`${POSTGRES}${what}`, value, note);

/** An empty table; print() writes the title, then a Markdown-like table padded to its widest cells. */
export function createTable(): Table {
  const rows: [string, string, string][] = [];
  return {
    row: (what, value, note = '') => {
      rows.push([what, value, note]);
    },
    print: (title) => {
      const labels = new Set(rows.map((r) => r[0]));
      const paired = (label: string) =>
        label.startsWith(POSTGRES) && labels.has(label.slice(POSTGRES.length));
      const seen = new Set<string>();
      const ordered = rows.flatMap((r) => {
        if (paired(r[0])) return [];
        if (seen.has(r[0])) return [r]; // a repeated label: its pair is printed after the first
        seen.add(r[0]);
        return [r, ...rows.filter((p) => paired(p[0]) && p[0] === `${POSTGRES}${r[0]}`)];
      });
      const width = [
        Math.max(...rows.map((r) => r[0].length)),
        Math.max(...rows.map((r) => r[1].length)),
      ];
      console.log(title);
      console.log(`| ${'measure'.padEnd(width[0]!)} | ${'value'.padEnd(width[1]!)} | note`);
      console.log(`|${'-'.repeat(width[0]! + 2)}|${'-'.repeat(width[1]! + 2)}|------`);
      for (const [a, b, c] of ordered)
        console.log(`| ${a.padEnd(width[0]!)} | ${b.padEnd(width[1]!)} | ${c}`);
    },
  };
}

/** `n` in `ms` as a whole rate per second, e.g. `120/s`. */
export const rate = (n: number, ms: number) => `${(n / (ms / 1000)).toFixed(0)}/s`;

/** Rates per second as `120/s, 130/s, …`. */
export const listRates = (rates: number[]) => rates.map((r) => `${r.toFixed(0)}/s`).join(', ');

/** The middle value (the upper one of an even count), so one noisy trial does not decide a result. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** The value below which a share `p` (0-1) of `values` lie (nearest rank); NaN when there are none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)]!;
}

/** Milliseconds as `12 ms` (or with `digits` decimals); seconds from 10 s on, as `12.3 s`. */
export const ms = (value: number, digits = 0) =>
  value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : `${value.toFixed(digits)} ms`;

/** A table of one column per run (e.g. per node count): a row per measure, its cells filled as each run measures it. */
export type Columns = {
  /** Sets the cell of `what` in column `column`; a note, when given, replaces the row's note. */
  cell: (what: string, column: number, value: string, note?: string) => void;
  print: (title: string) => void;
};

/** An empty table with the column headers `headers`, its rows in the order first measured; print() pads every cell to
 *  its column's widest and leaves a cell never measured empty. */
export function createColumns(headers: string[]): Columns {
  const rows = new Map<string, { values: string[]; note: string }>();
  return {
    cell: (what, column, value, note) => {
      const r = rows.get(what) ?? { values: headers.map(() => ''), note: '' };
      r.values[column] = value;
      if (note !== undefined) r.note = note;
      rows.set(what, r);
    },
    print: (title) => {
      const lines = [
        ['measure', ...headers, 'note'],
        ...[...rows].map(([what, r]) => [what, ...r.values, r.note]),
      ];
      const width = headers.map((_, i) => Math.max(...lines.map((l) => l[i + 1]!.length)));
      const label = Math.max(...lines.map((l) => l[0]!.length));
      const line = (l: string[]) =>
        `| ${l[0]!.padEnd(label)} | ${width.map((w, i) => l[i + 1]!.padEnd(w)).join(' | ')} | ${l.at(-1)}`;
      console.log(title);
      console.log(line(lines[0]!));
      console.log(`|${[label, ...width].map((w) => '-'.repeat(w + 2)).join('|')}|------`);
      for (const l of lines.slice(1)) console.log(line(l));
    },
  };
}
