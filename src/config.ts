// Every option with its default, validated by one valibot schema; precedence: TOML file < FEEDSUB_* environment <
// flags.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parse as parseToml } from 'smol-toml';
import * as v from 'valibot';
import { ConfigError } from './errors.ts';

const int = (min: number, max: number) =>
  v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max));
const seconds = int(1, 31_536_000);
const url = v.union([v.literal(''), v.pipe(v.string(), v.url(), v.regex(/^https?:\/\//i))]);
/** A limit where 0 means "no limit". */
const limit = (max: number) => int(0, max);

/** True for an IPv4 or IPv6 address, or one with a /prefix that fits its family (a CIDR block). */
export function isAddressOrCidr(text: string): boolean {
  const [address = '', prefix, ...rest] = text.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d{1,3}$/.test(prefix) && bits <= (family === 4 ? 32 : 128);
}
/** True for a PostgreSQL connection URL: postgres:// or postgresql:// and something after it. The check names no part
 *  of a URL it refuses, which may hold a password. */
export function isPostgresUrl(text: string): boolean {
  return /^postgres(ql)?:\/\/./i.test(text);
}

/** `url` with its password shown as `***`, for every place a database URL is shown (logs, errors, `config check`): the
 *  one in the user information (postgres://user:***@host/db), and a `password` or `sslpassword` parameter. */
export function redactUrl(url: string): string {
  const p = passwordSpan(url);
  const out = p ? `${url.slice(0, p.start)}***${url.slice(p.end)}` : url;
  return out.replace(PASSWORD_PARAMETER, '$1***');
}

/** `text` (an error message) with `url` shown redacted and every other occurrence of its password replaced by `***`: a
 *  client library may quote its connection string, or a part of it, in an error. */
export function withoutPassword(text: string, url: string): string {
  let out = text.split(url).join(redactUrl(url));
  const p = passwordSpan(url);
  const found = [...url.matchAll(PASSWORD_PARAMETER)].map((m) => m[2]!);
  if (p) found.push(url.slice(p.start, p.end));
  const secrets = new Set<string>();
  for (const secret of found) {
    secrets.add(secret);
    try {
      secrets.add(decodeURIComponent(secret));
    } catch {
      // not valid percent-encoding: the text as written is all there is
    }
  }
  secrets.delete('');
  // Longest first, so a password that contains another form of itself is replaced whole.
  for (const secret of [...secrets].sort((a, b) => b.length - a.length))
    out = out.split(secret).join('***');
  return out;
}

const PASSWORD_PARAMETER = /([?&](?:ssl)?password=)([^&#]*)/gi;

/** Where the password of the user information (user:password@) is in `url`, or undefined. The user information ends
 *  at the authority's last '@'; when the authority (up to the first '/', '?' or '#') holds none, at the URL's last '@',
 *  so a password with an unescaped '/', '?' or '#' is still found whole (a URL with an '@' only in its query then loses
 *  more than its password, never less). */
function passwordSpan(url: string): { start: number; end: number } | undefined {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0];
  if (!scheme) return undefined;
  const rest = url.slice(scheme.length);
  const authority = rest.slice(0, rest.search(/[/?#]|$/));
  const at = authority.includes('@') ? authority.lastIndexOf('@') : rest.lastIndexOf('@');
  const colon = rest.indexOf(':');
  if (at < 0 || colon < 0 || colon > at) return undefined;
  return { start: scheme.length + colon + 1, end: scheme.length + at };
}

const addressOrCidr = v.pipe(
  v.string(),
  v.check(isAddressOrCidr, 'must be an IP address or a CIDR block such as 10.0.0.0/8'),
);

/** The options, section by section; the defaults here are the documented defaults. */
export const ConfigSchema = v.strictObject({
  server: v.optional(
    v.strictObject({
      host: v.optional(v.pipe(v.string(), v.minLength(1)), '127.0.0.1'),
      port: v.optional(int(0, 65535), 8080),
      public_url: v.optional(url, ''),
      shutdown_timeout_seconds: v.optional(int(1, 600), 10),
      max_body_bytes: v.optional(int(1024, 64 * 1024 * 1024), 1_048_576),
      trusted_proxies: v.optional(v.pipe(v.array(addressOrCidr), v.maxLength(100)), []),
      // V8's heap limit for serve and poll --once (src/heap.ts); 0 = the runtime's own (about 1/4 of memory).
      heap_limit_mb: v.optional(v.union([v.literal(0), int(64, 1_048_576)]), 512),
    }),
    {},
  ),
  storage: v.optional(
    v.strictObject({
      data_dir: v.optional(v.pipe(v.string(), v.minLength(1)), './data'),
      // Empty: the SQLite file in data_dir. A PostgreSQL URL: that database, which several nodes may share.
      database_url: v.optional(
        v.union([
          v.literal(''),
          v.pipe(
            v.string(),
            v.check(
              isPostgresUrl,
              'must be a postgres:// or postgresql:// URL, or empty for SQLite',
            ),
          ),
        ]),
        '',
      ),
      // PostgreSQL only: the connections a node keeps at most, and how long one statement may run.
      pool_size: v.optional(int(1, 1000), 10),
      statement_timeout_seconds: v.optional(int(1, 86_400), 30),
    }),
    {},
  ),
  cluster: v.optional(
    v.strictObject({
      // How this process is named among the nodes on the database (/healthz, /metrics, the dashboard): empty = host:pid.
      node_name: v.optional(v.pipe(v.string(), v.maxLength(200)), ''),
      // How long a node may go unseen before the others count it gone and take over its leased feeds and events; its
      // heartbeat comes three times as often.
      node_timeout_seconds: v.optional(int(3, 300), 15),
    }),
    {},
  ),
  network: v.optional(
    v.strictObject({
      allow_private: v.optional(v.boolean(), false),
    }),
    {},
  ),
  poll: v.optional(
    v.strictObject({
      interval_seconds: v.optional(seconds, 900),
      min_interval_seconds: v.optional(seconds, 60),
      max_interval_seconds: v.optional(seconds, 86_400),
      // While a WebSub hub pushes a feed, polling is the fallback, at max(interval × 4, this), up to the max.
      push_interval_seconds: v.optional(seconds, 3600),
      // hub.lease_seconds asked of WebSub hubs (a hub may grant another); renewed at 80 % of the lease.
      push_lease_seconds: v.optional(int(3600, 31_536_000), 864_000),
      // A pushed body (one feed document) read at most; a larger push is taken as a sign of change: the feed is polled.
      push_max_body_bytes: v.optional(int(1024, 1024 * 1024 * 1024), 1024 * 1024),
      // A push's whole request (headers to last byte) within this; a slower one is cut off and the feed polled.
      push_timeout_seconds: v.optional(int(1, 600), 10),
      // Pushes read at the same time, in all (at most 4 of them for the feeds of one hub); past it, 503.
      pushes_in_flight: v.optional(int(1, 1000), 16),
      failing_after: v.optional(int(1, 1000), 3),
      concurrency: v.optional(int(1, 1000), 16),
      per_host_concurrency: v.optional(int(1, 100), 2),
      timeout_seconds: v.optional(int(1, 600), 30),
      connect_timeout_seconds: v.optional(int(1, 120), 10),
      max_body_bytes: v.optional(int(1024, 1024 * 1024 * 1024), 15 * 1024 * 1024),
      user_agent: v.optional(v.string(), ''),
      // Feed bodies are read (decoded, parsed, keyed) on worker threads; 0 = the cores but one, 1 to 4.
      parse_workers: v.optional(int(0, 64), 0),
      // A parse worker's heap; a document that needs more stops that worker and fails as a parse error.
      parse_heap_mb: v.optional(int(32, 16_384), 96),
    }),
    {},
  ),
  delivery: v.optional(
    v.strictObject({
      timeout_seconds: v.optional(int(1, 300), 15),
      retry_schedule_seconds: v.optional(
        v.pipe(v.array(seconds), v.maxLength(50)),
        [5, 300, 1800, 7200, 18000, 36000, 36000],
      ),
      concurrency: v.optional(int(1, 1000), 32),
      per_endpoint_concurrency: v.optional(int(1, 100), 4),
      disable_after_seconds: v.optional(seconds, 432_000),
      retention_days: v.optional(int(1, 3650), 30),
      secret_rotation_grace_seconds: v.optional(seconds, 86_400),
      retry_after_max_seconds: v.optional(seconds, 3600),
      sanitize_html: v.optional(v.boolean(), true),
    }),
    {},
  ),
  log: v.optional(
    v.strictObject({
      level: v.optional(v.picklist(['debug', 'info', 'warn', 'error']), 'info'),
      format: v.optional(v.picklist(['auto', 'json', 'pretty']), 'auto'),
    }),
    {},
  ),
  metrics: v.optional(
    v.strictObject({
      token: v.optional(v.string(), ''),
    }),
    {},
  ),
  dashboard: v.optional(
    v.strictObject({
      session_idle_minutes: v.optional(int(1, 43_200), 720),
    }),
    {},
  ),
  // What the database keeps of each feed (docs/operations.md, "The database file"): a feed that churns holds a bounded
  // number of entries; keys of entries long gone and feeds nobody subscribes to any more are deleted by the maintenance
  // pass. The defaults are a few times what the largest feed of test/fixtures/corpus shows
  // (test/feed/parse/corpus.test.ts checks it), so a real feed's document is held or kept whole and a hostile one stops
  // early.
  retention: v.optional(
    v.strictObject({
      held_entries_per_feed: v.optional(int(1, 10_000_000), 1000),
      held_bytes_per_feed: v.optional(int(1024, 1024 * 1024 * 1024), 4 * 1024 * 1024),
      entry_key_days: v.optional(int(1, 36_500), 30),
      entry_keys_per_feed: v.optional(int(1, 100_000_000), 1000),
      // Whatever the window, a feed keeps at most this many keys (a feed with new ids on every poll would make the
      // window unbounded): a hundred times the most entries a real feed shows at once.
      entry_keys_max_per_feed: v.optional(int(1, 100_000_000), 10_000),
      orphaned_feed_days: v.optional(int(1, 36_500), 7),
      // The entry history (GET …/entries, backfill, updates, the trace): at least the 50 newest entries per feed.
      entry_history_per_feed: v.optional(int(50, 10_000), 100),
      entry_history_bytes_per_feed: v.optional(int(64 * 1024, 1024 * 1024 * 1024), 2 * 1024 * 1024),
    }),
    {},
  ),
  // Per application, then per client address; 0 turns a limit off. The defaults are far above what a small team's
  // integration does, and far below what one leaked or buggy key can do in a minute (docs/api.md, "Quotas and rate
  // limits").
  quotas: v.optional(
    v.strictObject({
      endpoints_per_application: v.optional(limit(10_000_000), 1000),
      subscriptions_per_application: v.optional(limit(100_000_000), 10_000),
      new_feed_urls_per_hour: v.optional(limit(10_000_000), 300),
      test_events_per_minute: v.optional(limit(1_000_000), 60),
      backfill_entries_per_hour: v.optional(limit(100_000_000), 1000),
      api_requests_per_second: v.optional(limit(1_000_000), 50),
      api_burst: v.optional(int(1, 10_000_000), 100),
      failed_auth_per_address: v.optional(limit(1_000_000), 10),
      failed_auth_refill_seconds: v.optional(int(1, 86_400), 60),
      // What the feeds only its subscriptions use and its events may keep (src/actions/budget.ts); past it, such a
      // feed is held. 1 GiB: several times what a few hundred real feeds keep with 30 days of their events.
      storage_bytes_per_application: v.optional(limit(1024 ** 5), 1024 ** 3),
    }),
    {},
  ),
});

export type Config = v.InferOutput<typeof ConfigSchema>;
type Raw = Record<string, Record<string, unknown>>;

/** Builds the effective config; throws ConfigError naming the first bad key (the CLI exits 2). */
export function loadConfig(
  opts: { file?: string | undefined; env?: NodeJS.ProcessEnv; flags?: Raw } = {},
): Config {
  const raw: Raw = opts.file ? readTomlFile(opts.file) : {};
  mergeInto(raw, fromEnv(opts.env ?? process.env));
  mergeInto(raw, opts.flags ?? {});
  const result = v.safeParse(ConfigSchema, raw);
  if (!result.success) throw new ConfigError(describeIssue(result.issues[0], opts.file));
  const config = result.output;
  if (config.poll.min_interval_seconds > config.poll.max_interval_seconds) {
    throw new ConfigError(
      'config: poll.min_interval_seconds must not exceed poll.max_interval_seconds',
    );
  }
  return config;
}

/** The defaults alone, for tests and tools. */
export function defaultConfig(): Config {
  return v.parse(ConfigSchema, {});
}

/** A copy of `config` with some sections' keys replaced; for tests and wiring. */
export function withConfig(
  config: Config,
  patch: { [S in keyof Config]?: Partial<Config[S]> },
): Config {
  const out = structuredClone(config) as Record<string, Record<string, unknown>>;
  for (const [section, values] of Object.entries(patch)) Object.assign(out[section] ?? {}, values);
  return out as Config;
}

function readTomlFile(file: string): Raw {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `config: unable to read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  try {
    return parseToml(text) as Raw;
  } catch (err) {
    const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new ConfigError(`config: unable to parse ${file}: ${message}`);
  }
}

/** FEEDSUB_SECTION_NAME=value → {section: {name: value}}; lists comma-separated, booleans true/false. */
function fromEnv(env: NodeJS.ProcessEnv): Raw {
  const raw: Raw = {};
  const sections = Object.keys(ConfigSchema.entries);
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('FEEDSUB_') || value === undefined) continue;
    const rest = name.slice('FEEDSUB_'.length).toLowerCase();
    const section = sections.find((s) => rest.startsWith(s + '_'));
    if (!section) continue;
    const key = rest.slice(section.length + 1);
    (raw[section] ??= {})[key] = coerce(section, key, value, name);
  }
  return raw;
}

/** Converts a string (environment or flag) to the type the schema expects for section.key. */
export function coerce(section: string, key: string, value: string, source: string): unknown {
  const sample = (defaultConfig() as unknown as Raw)[section]?.[key];
  if (typeof sample === 'number') return toNumber(value, source);
  if (typeof sample === 'boolean') {
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    throw new ConfigError(`config: ${source} must be true or false, got ${JSON.stringify(value)}`);
  }
  if (Array.isArray(sample)) {
    const items = value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    // A list whose default is empty (server.trusted_proxies) is a list of strings; the others are lists of numbers.
    return typeof sample[0] === 'number' ? items.map((s) => toNumber(s, source)) : items;
  }
  return value;
}

function toNumber(value: string, source: string): number {
  const n = Number(value.trim());
  if (value.trim() === '' || !Number.isFinite(n))
    throw new ConfigError(`config: ${source} must be a number, got ${JSON.stringify(value)}`);
  return n;
}

function mergeInto(target: Raw, source: Raw): void {
  for (const [section, values] of Object.entries(source)) {
    if (values && typeof values === 'object' && !Array.isArray(values))
      Object.assign((target[section] ??= {}), values);
    else target[section] = values as Record<string, unknown>;
  }
}

function describeIssue(issue: v.BaseIssue<unknown> | undefined, file: string | undefined): string {
  if (!issue) return 'config: invalid configuration';
  const path = (issue.path ?? []).map((p) => String(p.key)).join('.');
  const where = file ? ` (in ${file} or the environment)` : '';
  if (issue.kind === 'schema' && issue.type === 'strict_object')
    return `config: unknown key ${path}${where}`;
  return `config: ${path || 'config'}: ${issue.message}${where}`;
}
