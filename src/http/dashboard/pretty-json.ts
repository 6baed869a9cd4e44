// JSON text re-indented for reading, token by token: key order, number spelling and string escapes stay exactly as
// stored (JSON.parse would reorder integer-like keys and round large numbers).

/** `text` with each member and element on its own line, indented by two spaces per level; empty objects and arrays stay
 *  `{}` and `[]`. Whitespace outside strings is replaced, nothing else changes. Text that is not JSON comes out
 *  re-spaced but whole: nothing is dropped. */
export function prettyJson(text: string): string {
  const out: string[] = [];
  const newline = (depth: number) => out.push('\n', '  '.repeat(Math.max(0, depth)));
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '"') {
      const end = stringEnd(text, i);
      out.push(text.slice(i, end));
      i = end - 1;
    } else if (ch === '{' || ch === '[') {
      const next = nextToken(text, i + 1);
      if (text[next] === (ch === '{' ? '}' : ']')) {
        out.push(ch, text[next]!);
        i = next;
      } else {
        out.push(ch);
        newline(++depth);
      }
    } else if (ch === '}' || ch === ']') {
      newline(--depth);
      out.push(ch);
    } else if (ch === ',') {
      out.push(',');
      newline(depth);
    } else if (ch === ':') out.push(': ');
    else if (ch !== ' ' && ch !== '\n' && ch !== '\r' && ch !== '\t') out.push(ch);
  }
  return out.join('');
}

/** The index just after the string that opens at `start` (a backslash escapes the next character), or the end. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i + 1;
  }
  return text.length;
}

/** The index of the first character at or after `from` that is not JSON whitespace. */
function nextToken(text: string, from: number): number {
  let i = from;
  while (i < text.length && ' \n\r\t'.includes(text[i]!)) i++;
  return i;
}
