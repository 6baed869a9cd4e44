import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parse as parseToml } from 'smol-toml';
import { defaultConfig, loadConfig, redactUrl, withoutPassword } from '../src/config.ts';
import { ConfigError } from '../src/errors.ts';

const example = new URL('../config.example.toml', import.meta.url);

/** The directories tomlFile made, removed once the file's tests end. */
const made: string[] = [];
after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

function tomlFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-config-'));
  made.push(dir);
  const file = join(dir, 'config.toml');
  writeFileSync(file, text);
  return file;
}

describe('config', () => {
  it('parses config.example.toml and it lists every option with its default', () => {
    const fromFile = loadConfig({ file: example.pathname, env: {} });
    assert.deepEqual(fromFile, defaultConfig());
    const raw = parseToml(readFileSync(example, 'utf8')) as Record<string, Record<string, unknown>>;
    const defaults = defaultConfig() as unknown as Record<string, Record<string, unknown>>;
    for (const [section, values] of Object.entries(defaults)) {
      assert.deepEqual(
        Object.keys(raw[section] ?? {}).sort(),
        Object.keys(values).sort(),
        `section [${section}] of config.example.toml`,
      );
    }
  });

  it('has the documented defaults', () => {
    const c = defaultConfig();
    assert.equal(c.server.host, '127.0.0.1');
    assert.equal(c.server.port, 8080);
    assert.equal(c.storage.data_dir, './data');
    assert.equal(c.network.allow_private, false);
    assert.equal(c.poll.interval_seconds, 900);
    assert.equal(c.poll.min_interval_seconds, 60);
    assert.deepEqual(c.delivery.retry_schedule_seconds, [5, 300, 1800, 7200, 18000, 36000, 36000]);
  });

  it('applies file < environment < flags', () => {
    const file = tomlFile(
      '[server]\nport = 9001\nhost = "0.0.0.0"\n[poll]\ninterval_seconds = 120\n',
    );
    const env = {
      FEEDSUB_SERVER_PORT: '9002',
      FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
      FEEDSUB_DELIVERY_RETRY_SCHEDULE_SECONDS: '1, 2,3',
    };
    const c = loadConfig({ file, env, flags: { server: { port: 9003 } } });
    assert.equal(c.server.port, 9003);
    assert.equal(c.server.host, '0.0.0.0');
    assert.equal(c.poll.interval_seconds, 120);
    assert.equal(c.network.allow_private, true);
    assert.deepEqual(c.delivery.retry_schedule_seconds, [1, 2, 3]);
    assert.equal(loadConfig({ file, env }).server.port, 9002);
  });

  it('has quotas a small team never meets, and no trusted proxy', () => {
    const c = defaultConfig();
    assert.deepEqual(c.quotas, {
      endpoints_per_application: 1000,
      subscriptions_per_application: 10_000,
      new_feed_urls_per_hour: 300,
      test_events_per_minute: 60,
      backfill_entries_per_hour: 1000,
      api_requests_per_second: 50,
      api_burst: 100,
      failed_auth_per_address: 10,
      failed_auth_refill_seconds: 60,
      storage_bytes_per_application: 1024 ** 3,
    });
    assert.deepEqual(c.server.trusted_proxies, []);
  });

  it('reads server.trusted_proxies as a list of addresses and CIDR blocks, also from the environment', () => {
    const env = { FEEDSUB_SERVER_TRUSTED_PROXIES: '127.0.0.1, ::1,10.0.0.0/8' };
    assert.deepEqual(loadConfig({ env }).server.trusted_proxies, [
      '127.0.0.1',
      '::1',
      '10.0.0.0/8',
    ]);
    const file = tomlFile('[server]\ntrusted_proxies = ["fd00::/8"]\n');
    assert.deepEqual(loadConfig({ file, env: {} }).server.trusted_proxies, ['fd00::/8']);
  });

  it('keeps the database in SQLite unless storage.database_url names a PostgreSQL database', () => {
    assert.deepEqual(defaultConfig().storage, {
      data_dir: './data',
      database_url: '',
      pool_size: 10,
      statement_timeout_seconds: 30,
    });
    const env = {
      FEEDSUB_STORAGE_DATABASE_URL: 'postgresql://feedsub:pw@db.internal:5432/feedsub',
      FEEDSUB_STORAGE_POOL_SIZE: '4',
      FEEDSUB_STORAGE_STATEMENT_TIMEOUT_SECONDS: '5',
    };
    assert.deepEqual(loadConfig({ env }).storage, {
      data_dir: './data',
      database_url: 'postgresql://feedsub:pw@db.internal:5432/feedsub',
      pool_size: 4,
      statement_timeout_seconds: 5,
    });
    const file = tomlFile('[storage]\ndatabase_url = "postgres://h/db?sslmode=require"\n');
    assert.equal(
      loadConfig({ file, env: {} }).storage.database_url,
      'postgres://h/db?sslmode=require',
    );
    assert.equal(
      loadConfig({ file, env: { FEEDSUB_STORAGE_DATABASE_URL: '' } }).storage.database_url,
      '',
    );
  });

  it("refuses a database URL that is not PostgreSQL's, naming the key and never the URL", () => {
    for (const url of [
      'mysql://alice:xyzzy-secret@db/feedsub',
      'https://alice:xyzzy-secret@db/feedsub',
      'alice:xyzzy-secret@db/feedsub',
      'postgres://',
      ' postgres://alice:xyzzy-secret@db/feedsub',
    ]) {
      assert.throws(
        () => loadConfig({ env: { FEEDSUB_STORAGE_DATABASE_URL: url } }),
        (err: unknown) =>
          err instanceof ConfigError &&
          /^config: storage\.database_url: must be a postgres:\/\/ or postgresql:\/\/ URL/.test(
            err.message,
          ) &&
          !err.message.includes('xyzzy') &&
          !err.message.includes('alice'),
        url,
      );
    }
    const file = tomlFile('[storage]\ndatabase_url = 5\n');
    assert.throws(() => loadConfig({ file, env: {} }), /storage\.database_url/);
  });

  it('allows poll.min_interval_seconds as low as 1', () => {
    assert.equal(
      loadConfig({ env: { FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1' } }).poll.min_interval_seconds,
      1,
    );
  });

  const bad: [string, Parameters<typeof loadConfig>[0], RegExp][] = [
    [
      'an unknown key in the file',
      { file: tomlFile('[server]\nprot = 1\n'), env: {} },
      /unknown key server\.prot/,
    ],
    ['an unknown section', { file: tomlFile('[sever]\nport = 1\n'), env: {} }, /unknown key sever/],
    ['a port out of range', { env: { FEEDSUB_SERVER_PORT: '70000' } }, /server\.port/],
    [
      'a non-number in the environment',
      { env: { FEEDSUB_POLL_INTERVAL_SECONDS: 'soon' } },
      /FEEDSUB_POLL_INTERVAL_SECONDS must be a number/,
    ],
    [
      'a bad boolean',
      { env: { FEEDSUB_NETWORK_ALLOW_PRIVATE: 'yes' } },
      /FEEDSUB_NETWORK_ALLOW_PRIVATE must be true or false/,
    ],
    [
      'a wrong type in the file',
      { file: tomlFile('[poll]\ninterval_seconds = "fast"\n'), env: {} },
      /poll\.interval_seconds/,
    ],
    [
      'min above max',
      {
        env: { FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '600', FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '60' },
      },
      /min_interval_seconds must not exceed/,
    ],
    ['broken TOML', { file: tomlFile('[server\nport=1'), env: {} }, /unable to parse/],
    [
      'a missing file',
      { file: '/nonexistent/feedsub.toml', env: {} },
      /unable to read \/nonexistent\/feedsub\.toml: ENOENT/,
    ],
    ['a bad log level', { env: { FEEDSUB_LOG_LEVEL: 'loud' } }, /log\.level/],
    [
      'a trusted proxy that is not an address',
      { env: { FEEDSUB_SERVER_TRUSTED_PROXIES: '127.0.0.1,proxy.local' } },
      /server\.trusted_proxies\.1: must be an IP address or a CIDR block/,
    ],
    [
      'a CIDR prefix too long for its family',
      { env: { FEEDSUB_SERVER_TRUSTED_PROXIES: '10.0.0.0/33' } },
      /server\.trusted_proxies/,
    ],
    ['a pool of no connections', { env: { FEEDSUB_STORAGE_POOL_SIZE: '0' } }, /storage\.pool_size/],
    [
      'a statement timeout of 0',
      { env: { FEEDSUB_STORAGE_STATEMENT_TIMEOUT_SECONDS: '0' } },
      /storage\.statement_timeout_seconds/,
    ],
    [
      'an api_burst of 0 (a bucket holds at least one request)',
      { env: { FEEDSUB_QUOTAS_API_BURST: '0' } },
      /quotas\.api_burst/,
    ],
  ];
  for (const [name, input, message] of bad) {
    it(`rejects ${name} with a ConfigError naming it`, () => {
      assert.throws(
        () => loadConfig(input),
        (err: unknown) => err instanceof ConfigError && message.test(err.message),
      );
    });
  }
});

describe('a database URL as shown', () => {
  it('hides the password of the user information and of a password parameter, and nothing else', () => {
    const cases: [string, string][] = [
      ['postgres://alice:s3cret@db:5432/feedsub', 'postgres://alice:***@db:5432/feedsub'],
      [
        'postgresql://alice:p%40ss%2Fw@db/feedsub?sslmode=require',
        'postgresql://alice:***@db/feedsub?sslmode=require',
      ],
      ['postgres://alice:pa/ss?w#d@db/feedsub', 'postgres://alice:***@db/feedsub'],
      [
        'postgres://alice:s3cret@db/feedsub?application_name=a@b',
        'postgres://alice:***@db/feedsub?application_name=a@b',
      ],
      [
        'postgres://alice@db/feedsub?password=s3cret&sslpassword=k3y',
        'postgres://alice@db/feedsub?password=***&sslpassword=***',
      ],
      ['postgres://alice@db:5432/feedsub', 'postgres://alice@db:5432/feedsub'],
      [
        'postgresql://postgres@/feedsub?host=%2Ftmp%2Fpg',
        'postgresql://postgres@/feedsub?host=%2Ftmp%2Fpg',
      ],
      ['postgres://db:5432/feedsub', 'postgres://db:5432/feedsub'],
      ['', ''],
    ];
    for (const [url, shown] of cases) assert.equal(redactUrl(url), shown, url);
  });

  it("takes the password out of an error's message, as written and percent-decoded", () => {
    const url = 'postgres://alice:p%40ss-xyzzy@db/feedsub';
    assert.equal(
      withoutPassword(`connect to ${url} failed: bad p@ss-xyzzy, p%40ss-xyzzy`, url),
      'connect to postgres://alice:***@db/feedsub failed: bad ***, ***',
    );
    assert.equal(
      withoutPassword('connect ECONNREFUSED 10.0.0.1:5432', url),
      'connect ECONNREFUSED 10.0.0.1:5432',
    );
    assert.equal(withoutPassword('no password here', 'postgres://db/feedsub'), 'no password here');
  });
});

describe('documentation of the config', () => {
  it("lists every key in docs/configuration.md's table, with its default and its variable", () => {
    const doc = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    // The table itself, between its markers: a key's row elsewhere (another table's) does not count.
    const start = doc.indexOf('<!-- section: config -->');
    const end = doc.indexOf('<!-- /section: config -->');
    assert.ok(start >= 0 && end > start, 'docs/configuration.md marks its table');
    const table = doc.slice(start, end);
    for (const [section, values] of Object.entries(
      defaultConfig() as unknown as Record<string, Record<string, unknown>>,
    )) {
      for (const [key, value] of Object.entries(values)) {
        const shown = JSON.stringify(value).replaceAll(',', ', ');
        const variable = `FEEDSUB_${section}_${key}`.toUpperCase();
        assert.ok(
          table.includes(`| \`${section}.${key}\` | \`${shown}\` | \`${variable}\` |`),
          `${section}.${key} = ${shown} (${variable}) in docs/configuration.md's table`,
        );
      }
    }
  });
});
