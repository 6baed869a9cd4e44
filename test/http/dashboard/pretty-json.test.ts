// The payload indenter: layout only, every token as stored.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { prettyJson } from '../../../src/http/dashboard/pretty-json.ts';

describe('prettyJson', () => {
  it('puts each member on its own line, two spaces a level, keeping key order and number spelling', () => {
    assert.equal(
      prettyJson('{"b":1.50,"2":[1,{"x":null}],"1":12345678901234567890}'),
      '{\n  "b": 1.50,\n  "2": [\n    1,\n    {\n      "x": null\n    }\n  ],\n  "1": 12345678901234567890\n}',
    );
  });

  it('leaves strings alone, escaped quotes and JSON punctuation included', () => {
    assert.equal(prettyJson('{"s":"a\\\\\\"b, {c}: [d]"}'), '{\n  "s": "a\\\\\\"b, {c}: [d]"\n}');
  });

  it('keeps empty objects and arrays on one line and replaces the whitespace it finds', () => {
    assert.equal(prettyJson(' { "a" : { } , "b" :[\n] } '), '{\n  "a": {},\n  "b": []\n}');
  });

  it('drops nothing from text that is not JSON, and never throws on it', () => {
    const bad = '}]{"x":[1,"unterminated';
    assert.equal(prettyJson(bad).replace(/\s/g, ''), bad.replace(/\s/g, ''));
  });
});
