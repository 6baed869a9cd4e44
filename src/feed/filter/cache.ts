// Compiled filters kept between polls, by their stored text: compiling a pattern and warming its DFA costs far more than
// running it, and a feed's subscriptions keep their filters for a long time. Bounded by the patterns it holds, so its
// memory is at most FILTER_CACHE_PATTERNS pattern DFAs (PATTERN_DFA_BYTES each) whatever the number of filters.
import { compileFilter, type CompiledFilter } from './match.ts';
import { readFilter } from './rules.ts';

/** Patterns the cache holds at most (with the contains-only filters beside them, which hold none). */
export const FILTER_CACHE_PATTERNS = 1024;

export type FilterCache = {
  /** The compiled filter of a stored filter text; undefined for none (null, or a text that is not a filter). */
  get(text: string | null): CompiledFilter | undefined;
};

/** A cache of compiled filters, least recently used evicted first. */
export function createFilterCache(maxPatterns = FILTER_CACHE_PATTERNS): FilterCache {
  const compiled = new Map<string, CompiledFilter>();
  let patterns = 0;
  return {
    get(text) {
      if (text === null) return undefined;
      const hit = compiled.get(text);
      if (hit !== undefined) {
        compiled.delete(text); // Map order is insertion order: re-inserting makes it the most recent
        compiled.set(text, hit);
        return hit;
      }
      const filter = readFilter(text);
      if (filter === undefined) return undefined;
      const made = compileFilter(filter);
      compiled.set(text, made);
      patterns += made.patterns;
      for (const [key, old] of compiled) {
        if (patterns <= maxPatterns || key === text) break;
        compiled.delete(key);
        patterns -= old.patterns;
      }
      return made;
    },
  };
}
