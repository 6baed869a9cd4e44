// Turns anything a fetch can throw (DNS, socket, TLS, timeout, guard, body, redirect) into one clear message.
import { BodyError } from './body.ts';
import { ForbiddenAddressError } from '../../net/guard.ts';

/** A redirect-chain or response problem detected by the fetcher itself. */
export class HopError extends Error {
  readonly errorClass: 'network' | 'http';
  readonly status: number | null;
  constructor(errorClass: 'network' | 'http', status: number | null, message: string) {
    super(message);
    this.name = 'HopError';
    this.errorClass = errorClass;
    this.status = status;
  }
}

export type Described = { errorClass: 'network' | 'http'; status: number | null; message: string };
type Context = {
  url: string;
  aborted: boolean;
  settings: { totalTimeoutMs: number; stallTimeoutMs: number; connectTimeoutMs: number };
};

const RESOLVE_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME']);
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
]);

/** A message of the form "fetch: unable to connect to example.com: ECONNREFUSED"; never includes credentials
 *  because the URLs handed to undici and kept in ctx are already stripped of them. */
export function describeError(err: unknown, ctx: Context): Described {
  const host = hostOf(ctx.url);
  const net = (message: string): Described => ({
    errorClass: 'network',
    status: null,
    message: `fetch: ${message}`,
  });
  if (err instanceof HopError)
    return { errorClass: err.errorClass, status: err.status, message: `fetch: ${err.message}` };
  if (err instanceof BodyError)
    return { errorClass: 'http', status: null, message: `fetch: ${err.message}` };
  if (err instanceof ForbiddenAddressError)
    return net(`unable to connect to ${host}: ${err.message}`);
  if (ctx.aborted)
    return net(`no complete response from ${host} within ${seconds(ctx.settings.totalTimeoutMs)}`);
  const code = codeOf(err);
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof TypeError && code === 'ERR_INVALID_URL')
    return { errorClass: 'http', status: null, message: 'fetch: invalid URL' };
  if (code === 'UND_ERR_BODY_TIMEOUT')
    return net(`response body from ${host} stalled for ${seconds(ctx.settings.stallTimeoutMs)}`);
  if (code === 'UND_ERR_HEADERS_TIMEOUT')
    return net(`no response headers from ${host} within ${seconds(ctx.settings.totalTimeoutMs)}`);
  if (code === 'UND_ERR_CONNECT_TIMEOUT')
    return net(
      `unable to connect to ${host}: timed out after ${seconds(ctx.settings.connectTimeoutMs)}`,
    );
  if (code !== null && RESOLVE_CODES.has(code)) return net(`unable to resolve ${host}: ${code}`);
  if (code !== null && CONNECT_CODES.has(code)) return net(`unable to connect to ${host}: ${code}`);
  if (code !== null && isTlsCode(code)) return net(`TLS error with ${host}: ${code}`);
  if (
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    code === 'UND_ERR_SOCKET' ||
    code === 'UND_ERR_CLOSED'
  ) {
    return net(`connection to ${host} closed early: ${code}`);
  }
  return net(
    `unable to fetch from ${host}: ${code !== null ? `${code} ` : ''}${stripUrls(message)}`,
  );
}

function codeOf(err: unknown): string | null {
  if (typeof err !== 'object' || err === null) return null;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  const cause = (err as { cause?: unknown }).cause;
  return cause !== undefined && cause !== err ? codeOf(cause) : null;
}

function isTlsCode(code: string): boolean {
  return /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|EPROTO)/.test(
    code,
  );
}

/** Defensive: unknown error texts could carry a URL; drop anything URL-shaped. */
function stripUrls(message: string): string {
  return message.replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<url>');
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the server';
  }
}
