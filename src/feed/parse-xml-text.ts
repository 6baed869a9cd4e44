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
  let count = 0;
  const out = text.replace(STRAY_LT, () => {
    count++;
    return '&lt;';
  });
  return { text: out, count };
}

/** Replaces references to the document's declared entities with their replacement text, escaped so it reads as
 *  text in element content and attribute values alike. `budget.chars` is how many characters expansions may still
 *  add in the whole document; a reference that would exceed it is left as written. Predefined and undeclared
 *  references (`&amp;`, `&nbsp;`) are left for the text decoder. */
export function expandEntities(
  text: string,
  entities: EntityTable,
  budget: { chars: number },
): { text: string; overBudget: boolean } {
  let overBudget = false;
  const out = text.replace(ENTITY_REF, (ref: string, name: string) => {
    if (PREDEFINED.has(name) || !entities.has(name)) return ref;
    const expanded = expandOne(name, entities, budget.chars, new Set());
    if (expanded === null || expanded.length > budget.chars) {
      overBudget = true;
      return ref;
    }
    budget.chars -= expanded.length;
    return expanded;
  });
  return { text: out, overBudget };
}

// The escaped replacement text of one entity, or null when it refers to itself, nests too deep or would exceed
// `limit` characters (checked while it grows, so nested "laughs" stop early).
function expandOne(
  name: string,
  entities: EntityTable,
  limit: number,
  active: Set<string>,
): string | null {
  if (active.has(name) || active.size >= MAX_NESTING) return null;
  active.add(name);
  const value = entities.get(name) ?? '';
  let out = '';
  let last = 0;
  for (const m of value.matchAll(ENTITY_REF)) {
    out += escapeText(value.slice(last, m.index));
    const inner = m[1]!;
    let piece: string | null = m[0];
    if (entities.has(inner) && !PREDEFINED.has(inner))
      piece = expandOne(inner, entities, limit - out.length, active);
    if (piece === null) return null;
    out += piece;
    last = m.index + m[0].length;
    if (out.length > limit) return null;
  }
  out += escapeText(value.slice(last));
  active.delete(name);
  return out.length > limit ? null : out;
}

function escapeText(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}
