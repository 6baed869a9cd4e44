import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extractMember, minify, RawJson, toJson } from '../src/rawjson.ts';

describe('extractMember', () => {
  const cases: [string, string, string, string | undefined][] = [
    [
      'keeps key order and number spelling',
      '{"metadata": {"z": 1.50, "10": true, "a": 1e3}}',
      'metadata',
      '{"z":1.50,"10":true,"a":1e3}',
    ],
    [
      'keeps strings with escapes and spaces intact',
      '{"metadata":{"s":"a \\"b\\" \\\\ }, ]"}}',
      'metadata',
      '{"s":"a \\"b\\" \\\\ }, ]"}',
    ],
    [
      'skips other members holding look-alikes',
      '{"x":{"metadata":1},"metadata":[1, {"k": "v"}]}',
      'metadata',
      '[1,{"k":"v"}]',
    ],
    [
      'takes the last of duplicate members as JSON.parse does',
      '{"metadata":1,"metadata":2}',
      'metadata',
      '2',
    ],
    ['returns null literally', '{"metadata": null}', 'metadata', 'null'],
    ['is undefined when absent', '{"url":"x"}', 'metadata', undefined],
    ['is undefined for a non-object', '[1,2]', 'metadata', undefined],
    [
      'handles whitespace everywhere',
      ' {\n "metadata" :\t{ "a" : [ 1 , 2 ] } \n}',
      'metadata',
      '{"a":[1,2]}',
    ],
  ];
  for (const [name, text, key, expected] of cases)
    it(name, () => assert.equal(extractMember(text, key), expected));
});

describe('toJson', () => {
  it('writes RawJson verbatim and everything else as JSON.stringify would', () => {
    assert.equal(
      toJson({ a: new RawJson('{"z":1.50}'), b: [new RawJson('1e3')], c: 'x' }),
      '{"a":{"z":1.50},"b":[1e3],"c":"x"}',
    );
  });
  it('cannot be tricked by a string that looks like its placeholder', () => {
    const out = toJson({ title: ':0', meta: new RawJson('{"n":1}') });
    assert.equal(out, '{"title":":0","meta":{"n":1}}');
  });
  it('writes RawJson verbatim in nested objects, arrays and at the top', () => {
    assert.equal(toJson(new RawJson('[1.0]')), '[1.0]');
    assert.equal(
      toJson({ page: [{ m: new RawJson('{"b":2,"a":1}') }, { m: null }], next: null }),
      '{"page":[{"m":{"b":2,"a":1}},{"m":null}],"next":null}',
    );
  });
  it('leaves a plain JSON.stringify of a RawJson the value it holds', () => {
    assert.equal(JSON.stringify({ m: new RawJson('{"z":1.50}') }), '{"m":{"z":1.5}}');
  });
  it('minify keeps whitespace inside strings', () =>
    assert.equal(minify('{ "a b" : "c d" }'), '{"a b":"c d"}'));
});
