// One webhook delivery attempt over HTTP: never throws, never follows redirects, keeps the first 4 KiB of the response,
// and ends within its total deadline, however slowly the receiver connects, answers or drips its reply.
import type { Dispatcher } from 'undici';
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
  /** The total deadline ended the attempt (before the answer, or while its body was still arriving). */
  timedOut: boolean;
};

export type SendOptions = {
  url: string;
  headers: Record<string, string>;
  body: string;
  agent: Dispatcher;
  /** The whole attempt (connecting, sending, the status line and headers, the snippet of the body) ends within this. */
  timeoutMs: number;
  userAgent: string;
  now: () => Date;
};

/** POSTs `body` with `headers`; a 2xx status is ok, anything else (3xx included) is a failure with its reason. At
 *  `timeoutMs` from the start the attempt ends: with no status yet it failed; with a status, that status decides and
 *  the snippet is what arrived. */
export function sendWebhook(opts: SendOptions): Promise<SendResult> {
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(opts.url);
    } catch {
      return resolve(failed(0, `webhook: invalid URL`, false));
    }
    new Attempt(opts, target, resolve).start();
  });
}

/** One attempt as an undici dispatch handler: no response stream and no AbortSignal per request (each costs a share of
 *  the raw POST rate); one plain timer is the total deadline and aborts through the controller. */
class Attempt implements Dispatcher.DispatchHandler {
  readonly #opts: SendOptions;
  readonly #target: URL;
  readonly #resolve: (r: SendResult) => void;
  readonly #started = performance.now();
  readonly #chunks: Buffer[] = [];
  #size = 0;
  #status: number | null = null;
  #retryAfter: string | null = null;
  #controller: Dispatcher.DispatchController | null = null;
  #timer: NodeJS.Timeout | undefined;
  #done = false;

  constructor(opts: SendOptions, target: URL, resolve: (r: SendResult) => void) {
    this.#opts = opts;
    this.#target = target;
    this.#resolve = resolve;
  }

  start(): void {
    this.#timer = setTimeout(() => this.#deadline(), this.#opts.timeoutMs);
    try {
      this.#opts.agent.dispatch(
        {
          origin: this.#target.origin,
          path: this.#target.pathname + this.#target.search,
          method: 'POST',
          headers: { ...this.#opts.headers, 'user-agent': this.#opts.userAgent },
          body: this.#opts.body,
          // Backstops only: these undici timers are idle timers, the deadline above is the total.
          headersTimeout: this.#opts.timeoutMs,
          bodyTimeout: this.#opts.timeoutMs,
        },
        this,
      );
    } catch (err) {
      this.#fail(err);
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#done) controller.abort(new DeadlineError());
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // 1xx: informational, the answer follows
    this.#status = statusCode;
    if (statusCode === 429 || statusCode === 503)
      this.#retryAfter = headerValue(headers as HeaderMap, 'retry-after');
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#done) return;
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    if (this.#size >= RESPONSE_SNIPPET_BYTES) {
      this.#answered(false);
      controller.abort(new SnippetRead()); // the rest of the body is not needed; the connection is closed
    }
  }

  onResponseEnd(): void {
    this.#answered(false);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    // A receiver that resets while we read its reply still answered with a status: what arrived is kept.
    if (this.#status !== null) this.#answered(false);
    else this.#fail(err);
  }

  /** The total deadline: the attempt ends now, and the request is aborted (at once, or as soon as it has a socket). */
  #deadline(): void {
    if (this.#done) return;
    if (this.#status !== null) this.#answered(true);
    else this.#finish(failed(this.#elapsed(), this.#timeoutMessage(), true));
    this.#controller?.abort(new DeadlineError());
  }

  #answered(timedOut: boolean): void {
    const statusCode = this.#status ?? 0;
    const ok = statusCode >= 200 && statusCode < 300;
    const retryAfterSeconds =
      this.#retryAfter === null ? null : parseRetryAfter(this.#retryAfter, this.#opts.now());
    const error = timedOut
      ? `webhook: the answer from ${this.#target.host} did not end within ${this.#opts.timeoutMs} ms (status ${statusCode} kept)`
      : ok
        ? null
        : statusCode >= 300 && statusCode < 400
          ? `webhook: receiver answered ${statusCode} (redirects are not followed)`
          : `webhook: receiver answered ${statusCode}`;
    this.#finish({
      ok,
      statusCode,
      durationMs: this.#elapsed(),
      error,
      responseBody: this.#snippet(),
      retryAfterSeconds,
      timedOut,
    });
  }

  #fail(err: unknown): void {
    this.#finish(failed(this.#elapsed(), describe(err, this.#target.host), false));
  }

  #finish(result: SendResult): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#timer);
    this.#resolve(result);
  }

  #snippet(): string | null {
    if (this.#size === 0) return null;
    const bytes = Buffer.concat(this.#chunks, Math.min(this.#size, RESPONSE_SNIPPET_BYTES));
    return bytes.toString('utf8');
  }

  #elapsed(): number {
    return Math.round(performance.now() - this.#started);
  }

  #timeoutMessage(): string {
    return `webhook: no answer from ${this.#target.host} within ${this.#opts.timeoutMs} ms`;
  }
}

/** Why an attempt was aborted by its deadline. */
class DeadlineError extends Error {
  constructor() {
    super('webhook: attempt deadline');
    this.name = 'DeadlineError';
  }
}

/** Why the rest of an answer was not read. */
class SnippetRead extends Error {
  constructor() {
    super('webhook: snippet read');
    this.name = 'SnippetRead';
  }
}

function failed(durationMs: number, error: string, timedOut: boolean): SendResult {
  return {
    ok: false,
    statusCode: null,
    durationMs,
    error,
    responseBody: null,
    retryAfterSeconds: null,
    timedOut,
  };
}

function describe(err: unknown, host: string): string {
  if (
    err instanceof ForbiddenAddressError ||
    (err instanceof Error && err.cause instanceof ForbiddenAddressError)
  ) {
    return `webhook: refused to connect to ${host}: ${(err instanceof ForbiddenAddressError ? err : (err.cause as Error)).message}`;
  }
  const e = err as { code?: string; message?: string; cause?: { code?: string } };
  if (e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT')
    return `webhook: no answer from ${host} in time`;
  const code = e.code ?? e.cause?.code;
  return `webhook: unable to reach ${host}: ${code ?? e.message ?? String(err)}`;
}
