// The filter language: which entries keep and block rules send, on every field, case-insensitively; patterns checked
// when given; catastrophic patterns on long inputs decided in linear time; a pattern that cannot be decided within
// its bounds never keeps an entry back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFilterCache } from '../../../src/feed/filter/cache.ts';
import {
  compileFilter,
  filterSubject,
  judge,
  patternBudget,
  patternIssue,
  type FilterVerdict,
} from '../../../src/feed/filter/match.ts';
import { foldText, type Filter, type FilterRule } from '../../../src/feed/filter/rules.ts';
import type { Entry } from '../../../src/feed/types.ts';
import { entry } from '../../support/identity.ts';

const ADVISORY = entry({
  title: 'Security advisory: OpenSSL',
  content_text: 'A flaw in the\n  TLS   handshake was fixed.',
  authors: ['Alice', 'renovate-bot'],
  categories: ['CVE-2026-0001', 'tls'],
  url: 'https://example.org/advisories/1',
  enclosures: [{ url: 'https://example.org/a.mp3', type: 'audio/mpeg', length: null }],
});

function verdict(filter: Partial<Filter>, e: Entry = ADVISORY): FilterVerdict {
  const compiled = compileFilter({ keep: filter.keep ?? [], block: filter.block ?? [] });
  return judge(compiled, filterSubject(e), patternBudget());
}
const sent = (filter: Partial<Filter>, e?: Entry) => verdict(filter, e).kept;

describe('a subscription filter', () => {
  it('sends every entry when it has no rule', () => {
    assert.equal(sent({}), true);
  });

  const cases: [string, FilterRule, boolean][] = [
    ['title contains a word, whatever its case', { field: 'title', contains: 'SECURITY' }, true],
    ['title contains a phrase', { field: 'title', contains: 'advisory: openssl' }, true],
    ['title does not contain another word', { field: 'title', contains: 'remote' }, false],
    [
      'contains is a substring: "bot" in "renovate-bot"',
      { field: 'author', contains: 'bot' },
      true,
    ],
    [
      'text: white space runs count as one space',
      { field: 'text', contains: 'the tls handshake' },
      true,
    ],
    ['author: any of the list matches', { field: 'author', contains: 'alice' }, true],
    [
      'category matches a pattern case-insensitively',
      { field: 'category', matches: '^cve-\\d{4}-' },
      true,
    ],
    ['a pattern is unanchored', { field: 'title', matches: 'openssl' }, true],
    ['an anchored pattern that does not match', { field: 'title', matches: '^openssl' }, false],
    ['url', { field: 'url', contains: '/advisories/' }, true],
    ['enclosure_type', { field: 'enclosure_type', matches: '^audio/' }, true],
    ['enclosure_type that none has', { field: 'enclosure_type', contains: 'video' }, false],
  ];
  for (const [name, rule, matches] of cases)
    it(`keeps by ${name}`, () => assert.equal(sent({ keep: [rule] }), matches));

  it('reads text from the summary when the entry has no content', () => {
    const e = entry({ summary: 'Remote position', content_text: null });
    assert.equal(sent({ keep: [{ field: 'text', contains: 'remote' }] }, e), true);
  });

  it('folds Unicode case: an accented capital matches its lower case', () => {
    const e = entry({ title: 'ÉVÉNEMENT Über' });
    assert.equal(sent({ keep: [{ field: 'title', contains: 'événement über' }] }, e), true);
    assert.equal(sent({ keep: [{ field: 'title', matches: 'über' }] }, e), true);
    assert.equal(foldText('  A\tB  '), 'a b');
  });

  it('sends an entry that matches any keep rule', () => {
    const v = verdict({
      keep: [
        { field: 'title', contains: 'remote' },
        { field: 'category', matches: '^cve-' },
      ],
    });
    assert.deepEqual(v, { kept: true, undecided: [] });
  });

  it('keeps back an entry no keep rule matches, saying so', () => {
    const v = verdict({ keep: [{ field: 'title', contains: 'remote' }] });
    assert.deepEqual(v, { kept: false, reason: 'not_kept', undecided: [] });
  });

  it('blocks an entry a block rule matches, naming the first such rule, kept or not', () => {
    const v = verdict({
      keep: [{ field: 'title', contains: 'security' }],
      block: [
        { field: 'title', contains: 'remote' },
        { field: 'author', contains: 'bot' },
        { field: 'author', contains: 'alice' },
      ],
    });
    assert.deepEqual(v, {
      kept: false,
      reason: 'blocked',
      rule: { list: 'block', index: 1 },
      undecided: [],
    });
  });

  it('refuses a pattern that is not RE2, or that is too complex, and takes a plain one', () => {
    assert.match(patternIssue('(a')!, /^is not a valid RE2 pattern: /);
    assert.match(patternIssue('(?<=a)b')!, /^is not a valid RE2 pattern: /);
    assert.match(patternIssue('\\1')!, /^is not a valid RE2 pattern: /);
    assert.match(patternIssue('x{1000}')!, /^is too complex: it compiles to \d+ RE2 instructions/);
    assert.equal(patternIssue('^cve-\\d{4}-\\d+$'), undefined);
  });

  it('decides the catastrophic patterns of backtracking engines on a 1 MiB entry in linear time', () => {
    const long = 'a'.repeat(1024 * 1024);
    const e = entry({ title: long, content_text: long.replaceAll('a', 'x') });
    for (const matches of ['(a+)+$', '(a|aa)+b', '(x+x+)+y', '(\\w+\\s?)+$']) {
      const field = matches.includes('x') ? 'text' : 'title';
      const v = verdict({ keep: [{ field, matches }] }, e);
      assert.deepEqual(v.undecided, [], matches);
    }
    // a rule reads the first MATCH_INPUT_CHARS characters: "$" is the end of what it reads
    assert.equal(sent({ keep: [{ field: 'title', matches: '(a+)+$' }] }, e), true);
    assert.equal(sent({ keep: [{ field: 'title', matches: '(a|aa)+b' }] }, e), false);
  });

  it('never keeps an entry back on a pattern its DFA cannot decide within its memory', () => {
    let ab = '';
    for (let i = 0; i < 16 * 1024; i++) ab += i % 7 < 3 ? 'a' : 'b';
    const e = entry({ title: ab });
    const hostile = '[ab]*a[ab]{200}x';
    assert.equal(patternIssue(hostile), undefined, 'a valid pattern within the bounds');
    const keep = verdict({ keep: [{ field: 'title', matches: hostile }] }, e);
    assert.deepEqual(keep, { kept: true, undecided: [{ list: 'keep', index: 0 }] });
    const block = verdict({ block: [{ field: 'title', matches: hostile }] }, e);
    assert.deepEqual(block, { kept: true, undecided: [{ list: 'block', index: 0 }] });
  });

  it('leaves every pattern undecided once the batch has spent its budget', () => {
    const compiled = compileFilter({ keep: [{ field: 'title', matches: 'nomatch' }], block: [] });
    const v = judge(compiled, filterSubject(ADVISORY), { leftMs: 0 });
    assert.deepEqual(v, { kept: true, undecided: [{ list: 'keep', index: 0 }] });
  });
});

describe('the compiled filters cache', () => {
  it('compiles a filter text once, and evicts the least recently used past its patterns', () => {
    const cache = createFilterCache(2);
    const text = (p: string) =>
      JSON.stringify({ keep: [{ field: 'title', matches: p }], block: [] });
    const a = cache.get(text('a'));
    assert.equal(cache.get(text('a')), a, 'the same compiled filter');
    cache.get(text('b'));
    cache.get(text('a')); // a is now the most recent
    cache.get(text('c')); // past two patterns: b goes
    assert.equal(cache.get(text('a')), a);
    assert.equal(cache.get(null), undefined);
    assert.equal(cache.get('not json'), undefined);
  });
});
