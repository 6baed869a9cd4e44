// Which errors mean the database cannot serve for a while, rather than that a statement is wrong: the API answers them
// with 503 and Retry-After (http/errors.ts), and /healthz names them. SQLite's are result codes; PostgreSQL's are its
// server's SQLSTATEs and the errors of the connection under them (the server down, restarting or unreachable), which
// the PostgreSQL engine marks as its own (`markPostgres`), so that a connection reset by the database is not taken for
// one reset by an HTTP client (the same ECONNRESET).

/** The mark of an error that came from the PostgreSQL engine's connections or server. */
const FROM_POSTGRES = Symbol.for('feedsub.postgres');

/** Marks `err` as the PostgreSQL engine's, and returns it (to rethrow). */
export function markPostgres(err: unknown): unknown {
  if (typeof err === 'object' && err !== null && !Object.isFrozen(err))
    Object.defineProperty(err, FROM_POSTGRES, { value: true });
  return err;
}

/** Whether `err` came from the PostgreSQL engine (see markPostgres). */
export function fromPostgres(err: unknown): boolean {
  return typeof err === 'object' && err !== null && FROM_POSTGRES in err;
}

/** SQLSTATEs of a server that cannot serve for now (https://www.postgresql.org/docs/current/errcodes-appendix.html):
 *  admin_shutdown, crash_shutdown, cannot_connect_now (starting up or shutting down), query_canceled (the statement
 *  timeout), and a read-only transaction (a standby, during a failover). Class 08 (connection exceptions) and class 53
 *  (insufficient resources: disk full, out of memory, too many connections) count whole. */
const POSTGRES_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '57014', '25006']);

/** The socket's errors when the server cannot be reached: down (a Unix socket's file gone: ENOENT), refusing,
 *  unreachable, or gone mid-answer. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOENT',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EAI_AGAIN',
]);

/** pg's own errors, which carry no code, for a connection it could not make or lost: the pool's wait for a connection
 *  and the client's connect past their timeouts, a connection ended under a query, and an answer that did not come
 *  within query_timeout. */
const CONNECTION_MESSAGES = [
  'timeout exceeded when trying to connect',
  'Connection terminated',
  'Query read timeout',
  'Client has encountered a connection error and is not queryable',
];

/** Why the database cannot serve for now, as a short code (SQLITE_BUSY, 57P01, ECONNREFUSED, "connection lost"), or
 *  undefined for any other error. SQLite: full, busy or locked past busy_timeout, read-only, an I/O error, unable to
 *  open (https://sqlite.org/rescode.html). PostgreSQL: see POSTGRES_UNAVAILABLE, CONNECTION_CODES and
 *  CONNECTION_MESSAGES. */
export function unavailableDatabase(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (!fromPostgres(err))
    return typeof code === 'string' &&
      /^SQLITE_(FULL|BUSY|LOCKED|READONLY|IOERR|CANTOPEN)/.test(code)
      ? code
      : undefined;
  if (typeof code === 'string') {
    // The socket's codes first: EPIPE is five capitals, as a SQLSTATE is.
    if (CONNECTION_CODES.has(code)) return code;
    return POSTGRES_UNAVAILABLE.has(code) || /^(08|53)[0-9A-Z]{3}$/.test(code) ? code : undefined;
  }
  const message = err instanceof Error ? err.message : '';
  return CONNECTION_MESSAGES.some((m) => message.startsWith(m)) ? 'connection lost' : undefined;
}
