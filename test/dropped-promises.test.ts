// The type check's rule beyond tsc (scripts/dropped-promises.ts), on a small program of its own.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { droppedPromises } from '../scripts/dropped-promises.ts';

/** The rule's findings on `code`, compiled as /virtual/src/x.ts with the standard library. */
function check(code: string): string[] {
  const file = '/virtual/src/x.ts';
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    lib: ['lib.es2022.d.ts'],
  };
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version) =>
    name === file ? ts.createSourceFile(name, code, version) : read(name, version);
  host.fileExists = (
    (exists) => (name: string) =>
      name === file || exists(name)
  )(host.fileExists.bind(host));
  const program = ts.createProgram([file], options, host);
  return droppedPromises(program, '/virtual/src/').map((d) => d.replace(`${file}:`, ''));
}

describe('the dropped-promise rule', () => {
  it('reports a promise a bare statement drops, from a call or a method', () => {
    assert.deepEqual(
      check(`async function write(): Promise<number> { return 1; }
const store = { write };
export async function f() {
  write();
  store.write();
}`).map((d) => d.split(':').slice(0, 2).join(':')),
      ['4:3', '5:3'],
    );
  });

  it('accepts a promise awaited, returned, let go with void, assigned, or ending in .catch or a two-handed .then', () => {
    assert.deepEqual(
      check(`async function write(): Promise<number> { return 1; }
let kept: Promise<number> | undefined;
export async function f() {
  await write();
  void write().catch(() => {});
  kept = write();
  const p = write();
  await p;
  write().catch(() => {});
  write().then(() => {}, () => {});
  write().catch(() => {}).finally(() => {});
  return write();
}`),
      [],
    );
  });

  it('reports a promise-returning call in any statement position: an arrow body block, a loop, a callback', () => {
    assert.equal(
      check(`async function write(): Promise<void> {}
export function f(items: number[]) {
  for (const _ of items) write();
  items.forEach(() => { write(); });
}`).length,
      2,
    );
  });

  it('reports a chain whose end handles nothing: .then with one handler, .finally alone', () => {
    assert.equal(
      check(`async function write(): Promise<void> {}
export function f() {
  write().then(() => {});
  write().finally(() => {});
}`).length,
      2,
    );
  });
});
