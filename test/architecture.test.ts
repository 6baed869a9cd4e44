// The layer rule of docs/ARCHITECTURE.md, executable: every import under src/ goes to its own layer or a lower rank,
// and no import, value or type-only, closes a cycle anywhere under src/.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SRC = join(ROOT, 'src');

/** One row of the layer table: its rank and the modules it names (`net/` for a folder, `ids.ts` for a file). */
type Layer = { rank: number; name: string; members: string[] };
type Import = { from: string; to: string };

/** Reads the layer table of docs/ARCHITECTURE.md: the rows `| <rank> | <modules in backticks> | … |`. */
function readLayers(markdown: string): Layer[] {
  const layers: Layer[] = [];
  for (const line of markdown.split('\n')) {
    const row = /^\|\s*(\d+)\s*\|([^|]*)\|/.exec(line);
    if (!row) continue;
    const members = [...row[2]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    layers.push({ rank: Number(row[1]), name: members.join(' '), members });
  }
  return layers;
}

/** The layer a file under src/ (path relative to src/, with forward slashes) belongs to, or undefined. */
function layerOf(file: string, layers: Layer[]): Layer | undefined {
  return layers.find((l) =>
    l.members.some((m) => (m.endsWith('/') ? file.startsWith(m) : file === m)),
  );
}

/** Every relative import (static, type-only, re-export, dynamic) of every .ts/.tsx file under src/. */
function readImports(): Import[] {
  const imports: Import[] = [];
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
      d.isDirectory() ? walk(join(dir, d.name)) : /\.tsx?$/.test(d.name) ? [join(dir, d.name)] : [],
    );
  for (const path of walk(SRC)) {
    const info = ts.preProcessFile(readFileSync(path, 'utf8'), true, true);
    for (const ref of info.importedFiles) {
      if (!ref.fileName.startsWith('.')) continue; // packages and node: built-ins
      const target = resolve(dirname(path), ref.fileName);
      imports.push({ from: toSrc(path), to: toSrc(target) });
    }
  }
  return imports;
}

function toSrc(path: string): string {
  return relative(SRC, path).split('\\').join('/');
}

/** The imports that break the rule, as "from → to (why)". */
function violations(imports: Import[], layers: Layer[]): string[] {
  const out: string[] = [];
  for (const { from, to } of imports) {
    const a = layerOf(from, layers);
    const b = layerOf(to, layers);
    if (!a || !b) {
      out.push(`${from} → ${to} (${!a ? from : to} is in no layer of the table)`);
    } else if (a !== b && b.rank >= a.rank) {
      out.push(`${from} → ${to} (${a.name} is rank ${a.rank}, ${b.name} is rank ${b.rank})`);
    }
  }
  return out;
}

/** The import cycles: each strongly connected component of two or more files (or a file importing itself), its files
 *  sorted, the components in order (Tarjan's algorithm over the import graph). */
function cycles(imports: Import[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of imports) {
    if (!next.has(from)) next.set(from, new Set());
    next.get(from)!.add(to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1 || next.get(v)?.has(v)) found.push(component.sort());
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

const layers = readLayers(readFileSync(join(ROOT, 'docs/ARCHITECTURE.md'), 'utf8'));

describe('the layer rule of docs/ARCHITECTURE.md', () => {
  it('reads a table with every rank from 0 to the top', () => {
    assert.ok(layers.length >= 10, `only ${layers.length} layer rows found`);
    const ranks = [...new Set(layers.map((l) => l.rank))].sort((x, y) => x - y);
    assert.deepEqual(
      ranks,
      ranks.map((_, i) => i),
    );
  });

  it('places every file under src/ in exactly one layer', () => {
    const files = readImports().flatMap((i) => [i.from, i.to]);
    for (const file of new Set(files)) {
      const homes = layers.filter((l) =>
        l.members.some((m) => (m.endsWith('/') ? file.startsWith(m) : file === m)),
      );
      assert.equal(homes.length, 1, `${file} is in ${homes.length} layers`);
    }
  });

  it('finds no import from a lower layer to a higher one, or between layers of one rank', () => {
    assert.deepEqual(violations(readImports(), layers), []);
  });

  it('reports an import that goes up, one between siblings of a rank, and one to an unlisted file', () => {
    const planted: Import[] = [
      { from: 'store/feeds.ts', to: 'worker/poller.ts' },
      { from: 'worker/poller.ts', to: 'http/server.ts' },
      { from: 'feed/parse.ts', to: 'somewhere/new.ts' },
      { from: 'worker/poller.ts', to: 'store/feeds.ts' },
      { from: 'feed/parse.ts', to: 'feed/types.ts' },
    ];
    assert.deepEqual(violations(planted, layers), [
      'store/feeds.ts → worker/poller.ts (store/ is rank 6, worker/ is rank 8)',
      'worker/poller.ts → http/server.ts (worker/ is rank 8, http/ is rank 8)',
      'feed/parse.ts → somewhere/new.ts (somewhere/new.ts is in no layer of the table)',
    ]);
  });
});

describe('no import cycles under src/', () => {
  it('finds no cycle of imports, value or type-only, among the files under src/', () => {
    assert.deepEqual(cycles(readImports()), []);
  });

  it('reports a planted cycle through three files, one through a type-only import, and a file importing itself', () => {
    const planted: Import[] = [
      { from: 'worker/a.ts', to: 'worker/b.ts' },
      { from: 'worker/b.ts', to: 'worker/c.ts' },
      { from: 'worker/c.ts', to: 'worker/a.ts' },
      { from: 'store/x.ts', to: 'store/y.ts' },
      { from: 'store/y.ts', to: 'store/x.ts' },
      { from: 'feed/self.ts', to: 'feed/self.ts' },
      { from: 'feed/one.ts', to: 'feed/two.ts' },
    ];
    assert.deepEqual(cycles(planted), [
      ['feed/self.ts'],
      ['store/x.ts', 'store/y.ts'],
      ['worker/a.ts', 'worker/b.ts', 'worker/c.ts'],
    ]);
    // A type-only import is read like any other: the real files' imports include `import type`.
    assert.ok(
      readImports().some((i) => i.from === 'store/feeds-poll.ts' && i.to === 'store/feeds.ts'),
    );
  });
});
