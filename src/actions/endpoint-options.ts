// An endpoint's delivery options (as Svix offers them): extra static headers sent with every attempt, and a
// rate limit (attempts it may start in any one second; the deliverer enforces it, worker/deliver/endpoint-rate.ts).
import * as v from 'valibot';

/** At most this many extra headers per endpoint. */
export const MAX_HEADERS = 20;
/** At most this many bytes in all: each header counted as `name: value` plus its CRLF, as it goes on the wire. */
export const MAX_HEADER_BYTES = 4096;

/** Header names an endpoint may not set, lower-case: the Standard Webhooks signing headers (and any other `webhook-`
 *  name, that namespace is the signature's), what describes the body we send, what undici or the connection owns
 *  (RFC 9110 §7.2 Host, §7.6.1 hop-by-hop fields, §10.1.1 Expect), and our User-Agent. */
export const RESERVED_HEADERS: readonly string[] = [
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'content-type',
  'content-length',
  'content-encoding',
  'host',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'user-agent',
];

// RFC 9110 §5.6.2: token = 1*tchar; tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" /
// "`" / "|" / "~" / DIGIT / ALPHA.
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// RFC 9110 §5.5: field-value = *field-content, visible characters with spaces and tabs between them; we take ASCII only
// (obs-text is obsolete) and no CR, LF or NUL, so a value can never end the header line.
const VALUE = /^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$/;

/** Why `name` cannot be an extra header, or undefined when it can. */
function nameIssue(name: string): string | undefined {
  if (!HEADER_NAME.test(name))
    return "is not a header name: letters, digits and !#$%&'*+-.^_`|~ only (RFC 9110 §5.6.2)";
  const lower = name.toLowerCase();
  if (lower.startsWith('webhook-') || RESERVED_HEADERS.includes(lower))
    return `is set by feedsub and cannot be replaced (reserved: ${RESERVED_HEADERS.join(', ')}, and every webhook-* name)`;
  return undefined;
}

/** The wire size of the headers: `name: value\r\n` each. */
function wireBytes(headers: Record<string, string>): number {
  return Object.entries(headers).reduce((n, [k, val]) => n + k.length + val.length + 4, 0);
}

const OBJECT = 'must be an object of header name → value, or null';
/** A header's value. */
export const HeaderValue = v.pipe(
  v.string('must be a string'),
  v.regex(
    VALUE,
    'must be visible ASCII characters, with spaces or tabs only between them (no line breaks; not empty)',
  ),
);

/** Names JavaScript objects reserve, lower-case: valibot's record leaves `__proto__`, `constructor` and `prototype` out
 *  of what it returns, and assigning `__proto__` sets an object's prototype rather than a property, so a header under
 *  one of them would be lost without a word. They are refused, in any case. */
const OBJECT_NAMES: readonly string[] = ['__proto__', 'constructor', 'prototype'];

const isObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

/** The headers object's rules: names, values, count and size. valibot's record does not see OBJECT_NAMES. */
const HeaderObject = v.pipe(
  // valibot's record takes an array as an object of its indexes: refuse it as a whole first.
  v.custom<Record<string, unknown>>(isObject, OBJECT),
  v.record(v.string(), HeaderValue, OBJECT),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const seen = new Set<string>();
    for (const name of Object.keys(dataset.value)) {
      const lower = name.toLowerCase();
      const issue = seen.has(lower)
        ? 'repeats a header name (names are case-insensitive)'
        : nameIssue(name);
      seen.add(lower);
      if (issue)
        addIssue({
          message: issue,
          path: [
            {
              type: 'object',
              origin: 'key',
              input: dataset.value,
              key: name,
              value: dataset.value[name],
            },
          ],
        });
    }
  }),
  v.check((h) => Object.keys(h).length <= MAX_HEADERS, `must have at most ${MAX_HEADERS} headers`),
  v.check(
    (h) => wireBytes(h) <= MAX_HEADER_BYTES,
    `must be at most ${MAX_HEADER_BYTES} bytes in all (each header counted as "name: value" and its line end)`,
  ),
);

/** A JSON object, not an array or null: what the headers member is before its names and values are read. */
export const HeadersShape = v.custom<Record<string, string>>(isObject, OBJECT);

/** The names and values of the headers: HeaderObject's rules, each bad name reported at its own path, and the names
 *  HeaderObject cannot see. The object's own names are read as given (JSON.parse makes `__proto__` one of them), so that
 *  such a name is refused rather than dropped. The OpenAPI document says what JSON Schema can of it (the name and
 *  value patterns, the count), the rest in the description. */
export const HeaderRules = v.rawCheck<Record<string, string>>(({ dataset, config, addIssue }) => {
  if (!dataset.typed) return;
  const headers = dataset.value;
  const { lang, abortEarly, abortPipeEarly } = config;
  const checked = v.safeParse(HeaderObject, headers, { lang, abortEarly, abortPipeEarly });
  for (const issue of checked.issues ?? [])
    addIssue({ message: issue.message, ...(issue.path ? { path: issue.path } : {}) });
  for (const name of Object.keys(headers))
    if (OBJECT_NAMES.includes(name.toLowerCase()))
      addIssue({
        message:
          'cannot be set: __proto__, constructor and prototype are names JavaScript objects reserve (in any case)',
        path: [{ type: 'object', origin: 'key', input: headers, key: name, value: headers[name] }],
      });
});

/** Extra headers: null for none, else an object of header name → value; what passes is the object as given. */
export const Headers = v.pipe(
  v.nullable(v.pipe(HeadersShape, HeaderRules)),
  v.description(
    `Extra headers sent with every attempt (and the test event), name → value; null (the default) for none. Names are RFC 9110 tokens, values visible ASCII with inner spaces or tabs; at most ${MAX_HEADERS} headers and ${MAX_HEADER_BYTES} bytes in all (each counted as "name: value" and its line end). Case-insensitively refused: ${RESERVED_HEADERS.join(', ')}, every webhook-* name, and __proto__, constructor and prototype (names JavaScript objects reserve). Shown in full in answers.`,
  ),
);

/** Headers as stored: JSON text of the object as given (names keep their case), or NULL for none. An empty object is
 *  none. */
export function headersText(headers: Record<string, string> | null): string | null {
  return headers === null || Object.keys(headers).length === 0 ? null : JSON.stringify(headers);
}

/** The stored headers: the object, or null for none. */
export function headersOf(text: string | null): Record<string, string> | null {
  return text === null ? null : (JSON.parse(text) as Record<string, string>);
}

/** The highest rate limit: past it the limit is no protection, and the deliverer's slots bound the rate anyway. */
export const MAX_RATE_LIMIT = 1000;

/** Attempts the endpoint may start in any one second: an integer from 1 to MAX_RATE_LIMIT, or null for no limit. */
export const RateLimit = v.pipe(
  v.nullable(
    v.pipe(
      v.number('must be a whole number of deliveries per second, or null for no limit'),
      v.integer('must be a whole number of deliveries per second, or null for no limit'),
      v.minValue(1, 'must be at least 1 (null for no limit)'),
      v.maxValue(MAX_RATE_LIMIT, `must be at most ${MAX_RATE_LIMIT} (null for no limit)`),
    ),
  ),
  v.description(
    'Attempts the endpoint may start in any one second; null (the default) for no limit. Events over the rate wait their turn (in order per subscription) without delaying other endpoints; test events are not counted.',
  ),
);
