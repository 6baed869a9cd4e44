// Deciding whether a subscription's filter sends an entry. `matches` rules run on RE2 (re2js): matching time linear in
// the input, never the backtracking RegExp; each pattern runs on its lazy DFA alone, within a fixed memory, and a DFA
// that cannot finish within it gives up instead of falling back to the much slower NFA. Work is bounded three ways:
// a pattern reads at most MATCH_INPUT_CHARS of a value, its program is at most FILTER_PROGRAM_MAX instructions, and
// patterns run within time budgets: one filter's on one entry, and all the filters' on one batch of entries; a pattern
// that gives up or finds a budget spent is undecided, and an undecided rule never keeps an entry from being sent (a
// keep rule counts as matching, a block rule as not).
import { RE2JS, RE2Set } from 're2js';
import {
  fieldValues,
  foldText,
  MATCH_INPUT_CHARS,
  FILTER_PROGRAM_MAX,
  type Filter,
  type FilterField,
  type FilterList,
  type FilterRule,
} from './rules.ts';
import type { Entry } from '../types.ts';

/** The memory each pattern's DFA may fill (re2js's own default is 8 MiB): enough for the states of ordinary patterns,
 *  and a pattern whose states explode gives up within a few milliseconds. */
export const PATTERN_DFA_BYTES = 64 * 1024;
/** Time the patterns of one batch of entries (one document's new entries for every subscription of the feed) may run
 *  in all (compiling them aside); once it is spent the remaining patterns are undecided. */
export const PATTERN_BUDGET_MS = 50;
/** Time one filter's patterns may run on one entry: a tenant's filter cannot spend the batch's budget on its own. */
export const JUDGE_BUDGET_MS = 10;

/** What a filter decided about an entry. `undecided` lists rules whose pattern did not run to its end. */
export type FilterVerdict =
  | { kept: true; undecided: RuleRef[] }
  | { kept: false; reason: 'blocked'; rule: RuleRef; undecided: RuleRef[] }
  | { kept: false; reason: 'not_kept'; undecided: RuleRef[] };
export type RuleRef = { list: FilterList; index: number };

/** Why a pattern is refused, or undefined when it compiles within the bounds. */
export function patternIssue(source: string): string | undefined {
  try {
    const program = compilePattern(source).instructions;
    if (program > FILTER_PROGRAM_MAX)
      return `is too complex: it compiles to ${program} RE2 instructions, at most ${FILTER_PROGRAM_MAX}`;
    return undefined;
  } catch (error) {
    return `is not a valid RE2 pattern: ${(error as Error).message}`;
  }
}

/** A compiled `matches` pattern, case-insensitive, run on its DFA alone (see the file's head). */
type Pattern = { instructions: number; test: (s: string) => boolean | undefined };

function compilePattern(source: string): Pattern {
  const set = new RE2Set(RE2Set.UNANCHORED, RE2JS.CASE_INSENSITIVE, PATTERN_DFA_BYTES);
  set.add(source);
  set.compile();
  // RE2Set.match asks the DFA first and runs the NFA when the DFA returns null (its states did not fit its memory).
  // Answering [] in its place ends the match there; `gaveUp` tells that answer from a real "no match".
  const dfa = set.dfa;
  const run = dfa.matchSet.bind(dfa);
  let gaveUp = false;
  dfa.matchSet = (input: unknown, pos: unknown, anchor: unknown) => {
    const found = run(input, pos, anchor) as number[] | null;
    if (found !== null) return found;
    gaveUp = true;
    return [];
  };
  return {
    instructions: set.prog.numInst(),
    test: (s) => {
      gaveUp = false;
      const found = set.match(s.length > MATCH_INPUT_CHARS ? s.slice(0, MATCH_INPUT_CHARS) : s);
      return gaveUp ? undefined : found.length > 0;
    },
  };
}

type CompiledRule = { field: FilterField; needle?: string; pattern?: Pattern };
/** A filter ready to run: `contains` phrases folded, patterns compiled. */
export type CompiledFilter = { keep: CompiledRule[]; block: CompiledRule[]; patterns: number };

/** Compiles a stored filter. Never throws: a pattern that no longer compiles (one the API took under another engine
 *  version) is undecided on every entry. */
export function compileFilter(filter: Filter): CompiledFilter {
  let patterns = 0;
  const rule = (r: FilterRule): CompiledRule => {
    if ('contains' in r) return { field: r.field, needle: foldText(r.contains) };
    patterns += 1;
    try {
      return { field: r.field, pattern: compilePattern(r.matches) };
    } catch {
      return { field: r.field, pattern: { instructions: 0, test: () => undefined } };
    }
  };
  return { keep: filter.keep.map(rule), block: filter.block.map(rule), patterns };
}

/** An entry as rules read it, its values read and folded once whatever the number of filters run on it. */
export type FilterSubject = {
  values: (field: FilterField) => string[];
  folded: (field: FilterField) => string[];
};

/** The entry as rules read it. */
export function filterSubject(entry: Entry): FilterSubject {
  const raw = new Map<FilterField, string[]>();
  const folded = new Map<FilterField, string[]>();
  const values = (field: FilterField) => {
    let v = raw.get(field);
    if (v === undefined) raw.set(field, (v = fieldValues(entry, field)));
    return v;
  };
  return {
    values,
    folded: (field) => {
      let v = folded.get(field);
      if (v === undefined) folded.set(field, (v = values(field).map(foldText)));
      return v;
    },
  };
}

/** The time the patterns of one batch may still run, in milliseconds. */
export type PatternBudget = { leftMs: number };

/** A budget of `ms`. */
export function patternBudget(ms = PATTERN_BUDGET_MS): PatternBudget {
  return { leftMs: ms };
}

/** The pattern's answer on `value`, its time taken from each budget; undefined once one is spent. */
function timedTest(pattern: Pattern, value: string, budgets: PatternBudget[]): boolean | undefined {
  if (budgets.some((b) => b.leftMs <= 0)) return undefined;
  const t = performance.now();
  const found = pattern.test(value);
  const took = performance.now() - t;
  for (const b of budgets) b.leftMs -= took;
  return found;
}

/** Whether `filter` sends the entry: a matching block rule (the first in list order) blocks it; else it is sent when
 *  there is no keep rule or one matches. Its patterns run within JUDGE_BUDGET_MS and what is left of the batch's
 *  `budget`. Never throws. */
export function judge(
  filter: CompiledFilter,
  subject: FilterSubject,
  budget: PatternBudget,
): FilterVerdict {
  const budgets = [budget, patternBudget(JUDGE_BUDGET_MS)];
  const undecided: RuleRef[] = [];
  const test = (list: FilterList, index: number, r: CompiledRule): boolean | undefined => {
    if (r.needle !== undefined) {
      const needle = r.needle;
      return subject.folded(r.field).some((v) => v.includes(needle));
    }
    let unsure = false;
    for (const value of subject.values(r.field)) {
      const found = timedTest(r.pattern!, value, budgets);
      if (found === true) return true;
      if (found === undefined) unsure = true;
    }
    if (!unsure) return false;
    undecided.push({ list, index });
    return undefined;
  };
  for (const [index, r] of filter.block.entries())
    if (test('block', index, r) === true)
      return { kept: false, reason: 'blocked', rule: { list: 'block', index }, undecided };
  if (filter.keep.length === 0) return { kept: true, undecided };
  for (const [index, r] of filter.keep.entries())
    if (test('keep', index, r) !== false) return { kept: true, undecided };
  return { kept: false, reason: 'not_kept', undecided };
}
