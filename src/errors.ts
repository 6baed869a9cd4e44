// Typed errors that handlers throw and the HTTP error funnel maps to RFC 9457 problem+json.
export type FieldIssue = { path: string; message: string };

/** An error a client caused; `status` is the HTTP status it maps to. It carries no stack trace: nothing reads one
 *  (the error funnel answers from its fields alone), and capturing it cost a few per cent of the CPU of a flood of
 *  refused requests, which any key can send. */
export class ApiError extends Error {
  readonly status: number;
  readonly title: string;
  readonly errors: FieldIssue[] | undefined;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;
  constructor(
    status: number,
    title: string,
    detail: string,
    opts: {
      errors?: FieldIssue[];
      extra?: Record<string, unknown>;
      headers?: Record<string, string>;
    } = {},
  ) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(detail);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.status = status;
    this.title = title;
    this.errors = opts.errors;
    this.extra = opts.extra;
    this.headers = opts.headers;
  }
}

/** 400 with every invalid field listed. */
export const invalid = (errors: FieldIssue[], detail = 'The request has invalid fields.') =>
  new ApiError(400, 'Invalid request', detail, { errors });

/** 404 for a resource that does not exist or belongs to another application (never 403). */
export const notFound = (what: string) => new ApiError(404, 'Not found', `${what} not found.`);

/** 409 conflict, with extra members such as the existing resource's id. */
export const conflict = (detail: string, extra?: Record<string, unknown>) =>
  new ApiError(409, 'Conflict', detail, extra ? { extra } : {});

/** 401 for a missing, unknown or revoked API key. */
export const unauthorized = (detail = 'A valid API key is required in the Authorization header.') =>
  new ApiError(401, 'Unauthorized', detail);

/** 429 (RFC 6585 §4) for a spent quota or rate: `Retry-After` in whole seconds (RFC 9110 §10.2.3), and the body names
 *  the quota (its [quotas] key), its limit and the same wait, so a client can tell which limit it met. */
export const tooManyRequests = (
  quota: string,
  limit: number,
  retryAfterSeconds: number,
  detail: string,
) =>
  new ApiError(429, 'Too many requests', detail, {
    extra: { quota, limit, retry_after_seconds: retryAfterSeconds },
    headers: { 'retry-after': String(retryAfterSeconds) },
  });

/** An operator-facing configuration error: the CLI prints it on one line and exits 2. */
export class ConfigError extends Error {}
