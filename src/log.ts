// Structured logger: one line per outcome, a constant message plus snake_case fields; JSON lines or human-readable.
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;
export type Logger = {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
};

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A logger writing to `write` (stderr by default); format 'pretty' is for terminals, 'json' for collectors. */
export function createLogger(opts: {
  level: LogLevel;
  format: 'json' | 'pretty';
  write?: (line: string) => void;
  base?: LogFields;
}): Logger {
  const write = opts.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const base = opts.base ?? {};
  const emit = (level: LogLevel, msg: string, fields: LogFields = {}) => {
    if (RANK[level] < RANK[opts.level]) return;
    write(
      opts.format === 'json'
        ? jsonLine(level, msg, base, fields)
        : prettyLine(level, msg, { ...base, ...fields }),
    );
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({ ...opts, write, base: { ...base, ...fields } }),
  };
}

/** A logger that drops everything (tests, one-shot commands that print their own summary). */
export const silentLogger: Logger = createLogger({
  level: 'error',
  format: 'json',
  write: () => {},
});

// A line is written per delivery attempt and per request: one object, and JSON.stringify's fast path (no replacer)
// unless a field holds an Error (fields are flat).
function jsonLine(level: LogLevel, msg: string, base: LogFields, fields: LogFields): string {
  const line = { time: new Date().toISOString(), level, msg, ...base, ...fields };
  return JSON.stringify(
    line,
    Object.values(fields).some((v) => v instanceof Error) ? errorReplacer : undefined,
  );
}

function prettyLine(level: LogLevel, msg: string, fields: LogFields): string {
  const parts = Object.entries(fields).map(([k, v]) => `${k}=${formatValue(v)}`);
  const time = new Date().toISOString().slice(11, 23);
  return `${time} ${level.toUpperCase().padEnd(5)} ${msg}${parts.length ? ' ' + parts.join(' ') : ''}`;
}

function formatValue(v: unknown): string {
  if (v instanceof Error) return JSON.stringify(v.message);
  if (typeof v === 'string') return /[\s"=]/.test(v) ? JSON.stringify(v) : v;
  return JSON.stringify(v) ?? String(v);
}

function errorReplacer(_key: string, value: unknown): unknown {
  return value instanceof Error ? value.message : value;
}
