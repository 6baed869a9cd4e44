// Text repairs inside an XML document: escaping a '<' that starts no markup, expanding internal-DTD entities.
import type { EntityTable } from './parse-xml-prolog.ts';

// A '<' starts markup only before a name character, '/', '!' or '?' (XML 1.0 §2.4, §3.1); `x < y`, `I <3`,
// `price<10` and `a <= b` are text.
const STRAY_LT = /<(?![A-Za-z_:\u00C0-\uFFFF/!?])/g;
const ENTITY_REF = /&([A-Za-z_:][\w.:-]*);/g;
const PREDEFINED = new Set(['amp', 'lt', 'gt', 'quot', 'apos']);
// Entities referring to entities: deeper chains are left unexpanded.
const MAX_NESTING = 8;

/** The text with every stray '<' escaped, and how many there were. */
export function escapeStrayLt(text: string): { text: string; count: number } {
  if (!text.includes('<')) return { text, count: 0 };
  let count = 0;
  const out = text.replace(STRAY_LT, () => {
    count++;
    return '&lt;';
  });
  return { text: out, count };
}

/** What expansions may still add in the whole document (characters), and the expansions made so far. */
export type ExpansionBudget = { chars: number; cache: Map<string, string | null> };

/** Replaces references to the document's declared entities with their replacement text, escaped so it reads as
 *  text in element content and attribute values alike. A reference whose expansion would exceed `budget.chars` is
 *  left as written. Predefined and undeclared references (`&amp;`, `&nbsp;`) are left for the text decoder. */
export function expandEntities(
  text: string,
  entities: EntityTable,
  budget: ExpansionBudget,
): { text: string; overBudget: boolean } {
  let overBudget = false;
  const out = text.replace(ENTITY_REF, (ref: string, name: string) => {
    if (PREDEFINED.has(name) || !entities.has(name)) return ref;
    const expanded = expansion(name, entities, budget, new Set());
    if (expanded === null || expanded.length > budget.chars) {
      overBudget = true;
      return ref;
    }
    budget.chars -= expanded.length;
    return expanded;
  });
  return { text: out, overBudget };
}

// The escaped replacement text of one entity, computed once per document; null when it refers to itself, nests too
// deep or would exceed the budget (checked while it grows, so nested "laughs" stop early; the budget only shrinks,
// so a null stays right).
function expansion(
  name: string,
  entities: EntityTable,
  budget: ExpansionBudget,
  active: Set<string>,
): string | null {
  const cached = budget.cache.get(name);
  if (cached !== undefined) return cached;
  if (active.has(name) || active.size >= MAX_NESTING) return null;
  const value = entities.get(name) ?? '';
  const limit = budget.chars;
  if (value.length > limit) return remember(budget, name, null);
  active.add(name);
  let out = '';
  let last = 0;
  for (const m of value.matchAll(ENTITY_REF)) {
    out += escapeText(value.slice(last, m.index));
    const inner = m[1]!;
    const declared = entities.has(inner) && !PREDEFINED.has(inner);
    const piece = declared ? expansion(inner, entities, budget, active) : m[0];
    if (piece === null || out.length + piece.length > limit) {
      active.delete(name);
      return remember(budget, name, null);
    }
    out += piece;
    last = m.index + m[0].length;
  }
  out += escapeText(value.slice(last));
  active.delete(name);
  return remember(budget, name, out.length > limit ? null : out);
}

function remember(budget: ExpansionBudget, name: string, value: string | null): string | null {
  budget.cache.set(name, value);
  return value;
}

function escapeText(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}
