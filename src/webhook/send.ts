// One webhook delivery attempt over HTTP: never throws, never follows redirects, keeps the first 4 KiB of the response.
import type { Dispatcher } from 'undici';
import { request } from 'undici';
import { headerValue, parseRetryAfter, type HeaderMap } from '../net/headers.ts';
import { ForbiddenAddressError } from '../net/guard.ts';

export const RESPONSE_SNIPPET_BYTES = 4096;

export type SendResult = {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
  retryAfterSeconds: number | null;
};

/** POSTs `body` with `headers`; 2xx within `timeoutMs` is ok, anything else (3xx included) is a failure with its reason. */
export async function sendWebhook(opts: {
  url: string;
  headers: Record<string, string>;
  body: string;
  agent: Dispatcher;
  timeoutMs: number;
  userAgent: string;
  now: () => Date;
}): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const res = await request(opts.url, {
      method: 'POST',
      body: opts.body,
      headers: { ...opts.headers, 'user-agent': opts.userAgent },
      dispatcher: opts.agent,
      // undici's own timers bound the wait for the answer and the (4 KiB) read of its body; an AbortSignal timer per
      // request cost a quarter of the raw POST rate in make bench. Connecting is bounded by the agent's connect timeout.
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
    const responseBody = await readSnippet(res.body);
    const statusCode = res.statusCode;
    const ok = statusCode >= 200 && statusCode < 300;
    const retryAfterSeconds =
      statusCode === 429 || statusCode === 503
        ? parseRetryAfter(headerValue(res.headers as HeaderMap, 'retry-after'), opts.now())
        : null;
    const error = ok
      ? null
      : statusCode >= 300 && statusCode < 400
        ? `webhook: receiver answered ${statusCode} (redirects are not followed)`
        : `webhook: receiver answered ${statusCode}`;
    return { ok, statusCode, durationMs: elapsed(), error, responseBody, retryAfterSeconds };
  } catch (err) {
    return {
      ok: false,
      statusCode: null,
      durationMs: elapsed(),
      error: describe(err, opts.url, opts.timeoutMs),
      responseBody: null,
      retryAfterSeconds: null,
    };
  }
}

/** The first RESPONSE_SNIPPET_BYTES of the answer (null when empty); stops reading there. Never rejects: a receiver that
 *  resets while we read its reply still answered with a status, so what arrived is kept. Plain stream events, not an
 *  async iterator: this runs once per delivery attempt. */
function readSnippet(body: Dispatcher.ResponseData['body']): Promise<string | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      body.off('data', onData);
      body.off('end', finish);
      body.destroy(); // its abort error, if any, comes to `finish` again: the listener stays
      resolve(
        size === 0
          ? null
          : Buffer.concat(chunks, Math.min(size, RESPONSE_SNIPPET_BYTES)).toString('utf8'),
      );
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= RESPONSE_SNIPPET_BYTES) finish();
    };
    body.on('data', onData);
    body.on('end', finish);
    body.on('error', finish);
  });
}

function describe(err: unknown, url: string, timeoutMs: number): string {
  let host = url;
  try {
    host = new URL(url).host;
  } catch {
    /* keep the raw url */
  }
  if (
    err instanceof ForbiddenAddressError ||
    (err instanceof Error && err.cause instanceof ForbiddenAddressError)
  ) {
    return `webhook: refused to connect to ${host}: ${(err instanceof ForbiddenAddressError ? err : (err.cause as Error)).message}`;
  }
  const e = err as {
    name?: string;
    code?: string;
    message?: string;
    cause?: { code?: string; message?: string };
  };
  if (
    e.name === 'TimeoutError' ||
    e.name === 'AbortError' ||
    e.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    e.code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return `webhook: no answer from ${host} within ${timeoutMs} ms`;
  }
  const code = e.code ?? e.cause?.code;
  return `webhook: unable to reach ${host}: ${code ?? e.message ?? String(err)}`;
}
