// One error catalogue (type → status), one mapping from database errors, one renderer.
// Nothing raw from Postgres (detail, query, parameters) ever reaches a client or a log line.

export type ErrorType =
  | 'invalid_request'
  | 'unauthorized'
  | 'insufficient_scope'
  | 'forbidden'
  | 'rate_limited'
  | 'insufficient_quota'
  | 'payment_required'
  | 'not_found'
  | 'gone'
  | 'method_not_allowed'
  | 'conflict'
  | 'precondition_failed'
  | 'idempotency_conflict'
  | 'server_error';

const STATUS: Record<ErrorType, number> = {
  invalid_request: 400,
  unauthorized: 401,
  payment_required: 402,
  insufficient_scope: 403,
  /**
   * A console request that is not the console's own (its session cookie without the public Origin),
   * or an act beyond the caller's own rights (a key with a scope the caller lacks: docs/security.md#api-keys).
   */
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  /** `If-Match` names a version that is no longer the resource's (an optimistic write lost). */
  precondition_failed: 412,
  /** An output removed by retention (KILN_RETENTION): its record stays, its bytes are gone. */
  gone: 410,
  idempotency_conflict: 422,
  rate_limited: 429,
  insufficient_quota: 429,
  server_error: 500,
};

/** One problem of a request body: a JSON pointer into the body (`/graph/nodes/3/model`) and what is wrong there. */
export interface ErrorDetail {
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly type: ErrorType;
  readonly status: number;
  readonly headers: Record<string, string>;
  /** Every problem found, when the request was checked as a whole (the envelope's additive `details`). */
  readonly details: ErrorDetail[] | undefined;
  constructor(type: ErrorType, message: string, opts: { status?: number; headers?: Record<string, string>; cause?: unknown; details?: ErrorDetail[] } = {}) {
    super(message, { cause: opts.cause });
    this.type = type;
    this.status = opts.status ?? STATUS[type];
    this.headers = opts.headers ?? {};
    this.details = opts.details;
  }
}

export const UNAUTHORIZED_MESSAGE = 'Missing or invalid API key.';

export const errors = {
  invalid: (message: string) => new ApiError('invalid_request', message),
  /** A 400 that lists every problem of the body (`error.details`); `message` names the first ones. */
  invalidBody: (message: string, details: ErrorDetail[]) => new ApiError('invalid_request', message, { details }),
  unauthorized: () => new ApiError('unauthorized', UNAUTHORIZED_MESSAGE, { headers: { 'www-authenticate': 'Bearer' } }),
  scope: (scope: string) => new ApiError('insufficient_scope', `This API key lacks the "${scope}" scope.`),
  /** The admin routes for a credential that carries the admin scope, of a user who is not an admin. */
  notAdmin: () => new ApiError('insufficient_scope', 'This account is not an admin: the admin scope counts only for admins.'),
  crossOrigin: () =>
    new ApiError('forbidden', 'This request carries a console session cookie but does not come from the console (its Origin is not the public URL\'s). Use an API key from other sites and programs.'),
  notFound: (what = 'Resource') => new ApiError('not_found', `${what} not found.`),
  gone: (what: string, at: Date) => new ApiError('gone', `${what} expired on ${at.toISOString()} and was removed (retention).`),
  /** The resource is not in a state that allows this (e.g. canceling a job that already ended). */
  conflict: (message: string) => new ApiError('conflict', message),
  rateLimited: (retryAfter: number) =>
    new ApiError('rate_limited', `Too many requests. Retry after ${retryAfter} second${retryAfter === 1 ? '' : 's'}.`, {
      headers: { 'retry-after': String(retryAfter) },
    }),
  unavailable: (message = 'A dependency is briefly unavailable. Retry with backoff.', retryAfter = 1) =>
    new ApiError('server_error', message, { status: 503, headers: { 'retry-after': String(retryAfter) } }),
  /** The object store (the S3 bucket) failed a read or write: docs/storage.md, "When the store is down". */
  storeUnavailable: () => new ApiError('server_error', 'The image store is unavailable. Retry with backoff.', { status: 503, headers: { 'retry-after': String(STORE_RETRY_AFTER) } }),
  internal: () => new ApiError('server_error', 'Unexpected error.'),
};

/** Kiln's SQLSTATEs (db/ERROR_CODES.md) → API errors. The SQL message is written for clients. */
const SQLSTATE: Record<string, ErrorType> = {
  KI001: 'invalid_request',
  KI002: 'invalid_request',
  KQ001: 'insufficient_quota',
  KP001: 'payment_required',
  KN001: 'not_found',
  KF001: 'insufficient_scope',
  KF002: 'forbidden',
  KC001: 'invalid_request',
  KT001: 'conflict',
  KD001: 'idempotency_conflict',
  KV001: 'precondition_failed',
};

/**
 * Connection-level failures that mean "briefly unavailable" (503), not a bug (500); KS001 = stale
 * catalog price, KS002 = store bytes swept before their row committed, KD002 = an idempotency key
 * without a stored answer: all retryable.
 */
const UNAVAILABLE = /^(08|53|57P0[1-3]|55P03|57014|40001|40P01|KS001|KS002|KD002)/;
/** postgres.js's own connection errors and the socket errors it passes on. */
const CONNECTION = /^(CONNECTION_|CONNECT_TIMEOUT$|ECONNREFUSED$|ECONNRESET$|ECONNABORTED$|EPIPE$|ETIMEDOUT$|EHOSTUNREACH$|ENETUNREACH$|ENOTFOUND$|EAI_AGAIN$)/;

/**
 * The database (or the wait for it) failed, not the request: a timeout (KILN_TIMEOUT, a
 * cancelled statement), a lost or refused connection, a server shutting down or out of
 * resources, a lock or serialization conflict. Such a failure says nothing about which call of
 * a batch caused it, and the outcome of a timed-out call is unknown: answer 503, never retry.
 */
export function isUnavailable(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code === 'KILN_TIMEOUT' || UNAVAILABLE.test(code) || CONNECTION.test(code));
}

/** SQLSTATE class 22 (data exception): a value the statement could not store or convert. */
export function isDataError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code);
}

/** The message for a data error that got past the checks before SQL (the field is unknown there). */
export const UNSTORABLE_MESSAGE = 'The request contains a value that cannot be stored.';

export function fromDatabaseError(e: any): ApiError | null {
  const code: string | undefined = e?.code;
  if (typeof code !== 'string') return null;
  const type = SQLSTATE[code];
  if (code === 'KI002') return endUserRequired(String(e.message ?? END_USER_REQUIRED));
  if (code === 'KR001') return endUserRateLimited(String(e.message ?? ''));
  if (type) return new ApiError(type, String(e.message ?? 'Request failed.'));
  if (isUnavailable(e)) return errors.unavailable();
  // Postgres's own text names columns and values: never sent.
  if (isDataError(e)) return errors.invalid(UNSTORABLE_MESSAGE);
  return null;
}

/** KI002's message (docs/api.md, "Attribution"). */
export const END_USER_REQUIRED = 'endUser: is required: this API key requires an end user (requireEndUser)';

/**
 * A request that spends without `endUser` by a key made with requireEndUser (KI002): a 400 whose
 * details point at `/endUser` under `at` (a batch line's `/lines/N/body`).
 */
export function endUserRequired(message = END_USER_REQUIRED, at = ''): ApiError {
  return errors.invalidBody(message, [{ path: `${at}/endUser`, message: message.replace(/^endUser: /, '') }]);
}

/**
 * An end user over its own rpm (KR001, docs/usage.md#budgets-per-end-user): a 429 rate_limited
 * whose Retry-After is the seconds the SQL message names ("Retry after N seconds.").
 */
export function endUserRateLimited(message: string): ApiError {
  const seconds = Math.max(1, Number(/Retry after (\d+) second/.exec(message)?.[1] ?? 1));
  return new ApiError('rate_limited', message || `Too many requests. Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`, {
    headers: { 'retry-after': String(seconds) },
  });
}

/** Seconds a client is told to wait while the object store is down. */
export const STORE_RETRY_AFTER = 5;

/** A StoreError (src/storage/health.ts): a bucket read or write failed. */
export function isStoreFailure(e: unknown): boolean {
  return (e as { code?: unknown } | null)?.code === 'KILN_STORE_UNAVAILABLE';
}

export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (isStoreFailure(e)) return errors.storeUnavailable();
  return fromDatabaseError(e) ?? errors.internal();
}

export function envelope(e: ApiError): { error: { type: string; message: string; details?: ErrorDetail[] } } {
  const type = e.type === 'method_not_allowed' ? 'invalid_request' : e.type;
  return { error: e.details ? { type, message: e.message, details: e.details } : { type, message: e.message } };
}
