#!/usr/bin/env node
// The command line (cac): parses arguments and calls the app's entry points. No logic lives here.
import { cac } from 'cac';
import { openForCommand } from './commands.ts';
import { createKey, listKeys, revokeKey } from './actions/keys.ts';
import { loadConfig, redactUrl, type Config } from './config.ts';
import { configWarnings } from './config-warnings.ts';
import { backupDatabase, BackupExistsError } from './db/backup.ts';
import { configuredEngine, databaseFile, databaseName } from './db/connect.ts';
import { DataDirLockedError } from './db/lock.ts';
import { ConfigError } from './errors.ts';
import { applyHeapLimit } from './heap.ts';
import { createLogger, type Logger } from './log.ts';
import { versionLine } from './version.ts';

type Flags = {
  config?: string;
  host?: string;
  port?: string | number;
  dataDir?: string;
  json?: boolean;
  app?: string;
  name?: string;
  once?: boolean;
  force?: boolean;
};

const cli = cac('feedsub');

cli
  .command('serve', 'Start the daemon: API, dashboard, poller and deliverer')
  .option('--config <file>', 'TOML config file')
  .option('--host <host>', 'Listen address (server.host, default 127.0.0.1)')
  .option('--port <port>', 'Listen port (server.port, default 8080)')
  .option('--data-dir <dir>', 'Where the SQLite database lives (storage.data_dir, default ./data)')
  .action(async (flags: Flags) => {
    const config = configFrom(flags);
    const logger = loggerFor(config);
    heapLimit(config, logger, 'info');
    for (const w of configWarnings(config))
      logger.warn('config: a value is overridden by another key', {
        key: w.key,
        overridden_by: w.by,
        detail: w.message,
      });
    const { startApp } = await import('./app.ts');
    const app = await startApp(config, logger);
    let signals = 0;
    const onSignal = (signal: string) => {
      signals += 1;
      if (signals > 1) {
        logger.warn('feedsub: second signal, exiting at once', { signal });
        process.exit(1);
      }
      logger.info('feedsub: stopping', { signal });
      void app.stop().then(() => process.exit(0));
    };
    process.on('SIGTERM', () => onSignal('SIGTERM'));
    process.on('SIGINT', () => onSignal('SIGINT'));
  });

cli
  .command(
    'keys <action> [id]',
    'Manage API keys: keys create --app NAME [--name LABEL] | keys list | keys revoke KEY_ID',
  )
  .option('--app <name>', 'Application the key belongs to (created if missing)')
  .option('--name <label>', 'A label for the key')
  .option('--json', 'Print JSON')
  .option('--config <file>', 'TOML config file')
  .option('--data-dir <dir>', 'Where the SQLite database lives')
  .action(async (action: string, id: string | undefined, flags: Flags) => {
    // Arguments first: a mistyped command must not create (or migrate) a database anywhere.
    if (!['create', 'list', 'revoke'].includes(action))
      usage(`unknown keys action "${action}" (use create, list or revoke)`);
    if (action === 'create' && (!flags.app || typeof flags.app !== 'string'))
      usage('keys create needs --app NAME');
    if (action === 'revoke' && !id) usage('keys revoke needs KEY_ID');
    const config = configFrom(flags);
    const { ctx, close } = await openForCommand(config);
    try {
      if (action === 'create') {
        if (!flags.app || typeof flags.app !== 'string') usage('keys create needs --app NAME');
        const made = await createKey(
          ctx,
          flags.app,
          typeof flags.name === 'string' ? flags.name : null,
        );
        if (flags.json)
          console.log(
            JSON.stringify({
              id: made.id,
              application: made.application.id,
              application_name: made.application.name,
              key: made.key,
            }),
          );
        else {
          console.log(
            `Created key ${made.id} for application "${made.application.name}" (${made.application.id}).`,
          );
          console.log('Store it now; it is not shown again:');
          console.log(made.key);
        }
      } else if (action === 'list') {
        const keys = await listKeys(ctx);
        if (flags.json) console.log(JSON.stringify(keys));
        else
          for (const k of keys)
            console.log(
              `${k.id}  ${k.prefix}…  app=${k.application_name}  name=${k.name ?? '-'}  created=${k.created_at}  last_used=${k.last_used_at ?? '-'}${k.revoked_at ? `  REVOKED ${k.revoked_at}` : ''}`,
            );
      } else if (action === 'revoke') {
        if (!id) usage('keys revoke needs KEY_ID');
        if (!(await revokeKey(ctx, id))) {
          console.error(`feedsub: no live key with id ${id}`);
          process.exitCode = 1;
        } else console.log(`Revoked key ${id}.`);
      } else usage(`unknown keys action "${action}" (use create, list or revoke)`);
    } finally {
      await close();
    }
  });

cli
  .command(
    'config <action>',
    'config check: validate the configuration, print the effective values and warn about values another key overrides',
  )
  .option('--config <file>', 'TOML config file')
  .option('--data-dir <dir>', 'Where the SQLite database lives')
  .action((action: string, flags: Flags) => {
    if (action !== 'check') usage(`unknown config action "${action}" (use check)`);
    const config = configFrom(flags);
    console.log(
      JSON.stringify(
        {
          ...config,
          storage: { ...config.storage, database_url: redactUrl(config.storage.database_url) },
          metrics: { token: config.metrics.token ? '(set)' : '' },
        },
        null,
        2,
      ),
    );
    const warnings = configWarnings(config);
    for (const w of warnings) console.error(`config: warning: ${w.message}`);
    const noted = warnings.length === 0 ? '' : ` with ${warnings.length} warning(s)`;
    const database =
      configuredEngine(config) === 'postgres'
        ? `PostgreSQL database ${databaseName(config)}`
        : `database ${databaseFile(config)}`;
    console.error(`config: ok${noted} (${database})`);
  });

cli
  .command(
    'poll',
    'poll --once: fetch every active feed once, queue events, try delivering, print a summary',
  )
  .option('--once', 'Run one cycle and exit (required)')
  .option(
    '--force',
    "Poll even while a serve runs on the data directory (it changes that daemon's feeds)",
  )
  .option('--config <file>', 'TOML config file')
  .option('--data-dir <dir>', 'Where the SQLite database lives')
  .action(async (flags: Flags) => {
    if (!flags.once) usage('poll needs --once (the daemon polls continuously: use feedsub serve)');
    const config = configFrom(flags);
    const logger = loggerFor(config);
    heapLimit(config, logger, 'debug'); // a short command's output stays its one summary
    const { runPollOnce } = await import('./app.ts');
    console.log(await runPollOnce(config, logger, { force: flags.force === true }));
  });

cli
  .command(
    'backup <file>',
    'Write a consistent copy of the database to FILE, also while serve runs',
  )
  .option('--force', 'Overwrite FILE if it exists')
  .option('--config <file>', 'TOML config file')
  .option('--data-dir <dir>', 'Where the SQLite database lives')
  .action(async (file: string, flags: Flags) => {
    const config = configFrom(flags);
    if (configuredEngine(config) === 'postgres')
      usage(
        `backup copies the SQLite database file, and this configuration uses PostgreSQL (${databaseName(config)}): back it up with pg_dump instead, e.g. pg_dump --format=custom --file=${String(file)} "<storage.database_url>"`,
      );
    try {
      const done = await backupDatabase(databaseFile(config), String(file), {
        force: flags.force === true,
      });
      console.log(
        `Backed up ${databaseFile(config)} to ${done.file}: ${(done.bytes / 1048576).toFixed(2)} MiB (${done.bytes} bytes, ${done.pages} pages) in ${Math.round(done.durationMs)} ms.`,
      );
    } catch (err) {
      if (err instanceof BackupExistsError) usage(err.message);
      throw err;
    }
  });

cli
  .command(
    'storage <action>',
    "storage copy --to URL: copy the SQLite database into an empty PostgreSQL database, and check every table's count",
  )
  .option(
    '--to <url>',
    'The PostgreSQL database to copy into: postgres://user:password@host:port/database',
  )
  .option('--config <file>', 'TOML config file')
  .option('--data-dir <dir>', 'Where the SQLite database lives')
  .action(async (action: string, flags: Flags & { to?: unknown }) => {
    if (action !== 'copy') usage(`unknown storage action "${action}" (use copy)`);
    if (typeof flags.to !== 'string' || flags.to === '')
      usage('storage copy needs --to postgres://user:password@host/database');
    const config = configFrom(flags);
    const { runStorageCopy } = await import('./storage-copy.ts');
    await runStorageCopy(config, flags.to, {
      stdout: (line) => console.log(line),
      stderr: (line) => console.error(line),
    });
  });

cli.help();
cli.option('-v, --version', "Print feedsub's and the runtime's versions");

function configFrom(flags: Flags): Config {
  const server: Record<string, unknown> = {};
  if (flags.host !== undefined) server.host = String(flags.host);
  if (flags.port !== undefined) {
    const port = Number(flags.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new ConfigError(
        `--port must be an integer from 0 to 65535, got ${JSON.stringify(flags.port)}`,
      );
    server.port = port;
  }
  const storage = flags.dataDir !== undefined ? { data_dir: String(flags.dataDir) } : {};
  return loadConfig({ file: flags.config, flags: { server, storage } });
}

function loggerFor(config: Config): Logger {
  const format =
    config.log.format === 'auto' ? (process.stderr.isTTY ? 'pretty' : 'json') : config.log.format;
  return createLogger({ level: config.log.level, format });
}

/** server.heap_limit_mb for a long-running command, before it opens the database: restarts the process in place with
 *  the heap flags when it was started without them (src/heap.ts), else says what is in effect. */
function heapLimit(config: Config, logger: Logger, level: 'info' | 'debug'): void {
  const configured = config.server.heap_limit_mb;
  const { effectiveMb, notApplied } = applyHeapLimit(configured);
  if (notApplied)
    logger.warn('heap: unable to apply server.heap_limit_mb, this Node.js cannot restart itself', {
      heap_limit_mb: configured,
      effective_mb: effectiveMb,
      node: process.version,
      start_node_with: notApplied.join(' '),
    });
  else
    logger[level]('heap: limit in effect', {
      heap_limit_mb: configured,
      effective_mb: effectiveMb,
    });
}

function usage(message: string): never {
  throw new ConfigError(message);
}

async function main(): Promise<void> {
  // What ps, top and systemd show: the single executable's embedded Node names its main thread "MainThread", and under
  // `make serve` the process is a bare `node`. Setting the title also renames the main thread (prctl PR_SET_NAME).
  process.title = 'feedsub';
  try {
    cli.parse(process.argv, { run: false });
    if (!cli.matchedCommand && cli.args.length > 0)
      usage(`unknown command "${cli.args[0]}" (see feedsub --help)`);
    if (cli.options.version && !cli.options.help) {
      console.log(versionLine());
      return;
    }
    if (!cli.matchedCommand && !cli.options.help) {
      cli.outputHelp();
      return;
    }
    await cli.runMatchedCommand();
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // Exit 2: the command cannot run as given (a bad flag or value, or another serve holds the data directory).
    const expected =
      err instanceof ConfigError ||
      err instanceof DataDirLockedError ||
      (err instanceof Error && err.name === 'CACError');
    console.error(`feedsub: ${message}`);
    process.exit(expected ? 2 : 1);
  }
}

// Not awaited: the bundle for the single executable is CommonJS, which has no top-level await; main() catches everything.
void main();
