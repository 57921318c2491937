// The one error the client throws: an error answer of the API (its envelope's `type`, status and
// request id), or `network_error` (status 0) when no answer came after the retries.

export class KilnError extends Error {
  override name = 'KilnError';
  /** HTTP status; 0 when the service could not be reached. */
  readonly status: number;
  /** The error envelope's type (`invalid_request`, `rate_limited`, …; docs/api.md), or `network_error`. */
  readonly type: string;
  /** The answer's `x-request-id`, for the service's logs. */
  readonly requestId: string | null;
  /** Seconds from the answer's `retry-after`, when it had one. */
  readonly retryAfter: number | null;
  /** Every problem of a refused body (`error.details`: a JSON pointer `path` and a `message`), when the answer listed them; else empty. */
  readonly details: Array<{ path: string; message: string }>;

  constructor(init: {
    status: number; type: string; message: string; requestId?: string | null; retryAfter?: number | null; cause?: unknown;
    details?: Array<{ path: string; message: string }>;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.type = init.type;
    this.requestId = init.requestId ?? null;
    this.retryAfter = init.retryAfter ?? null;
    this.details = init.details ?? [];
  }

  /** From an error answer and its parsed body (the envelope, or whatever a proxy sent instead). */
  static from(response: Response, body: unknown): KilnError {
    const envelope = (body as { error?: { type?: unknown; message?: unknown; details?: unknown } } | null)?.error;
    const type = typeof envelope?.type === 'string' ? envelope.type : fallbackType(response.status);
    const message = typeof envelope?.message === 'string' ? envelope.message : `HTTP ${response.status}`;
    return new KilnError({
      status: response.status,
      type,
      message,
      requestId: response.headers.get('x-request-id'),
      retryAfter: retryAfterSeconds(response),
      details: Array.isArray(envelope?.details)
        ? envelope.details.filter((d): d is { path: string; message: string } => typeof d?.path === 'string' && typeof d?.message === 'string')
        : [],
    });
  }
}

/** Whole seconds of `retry-after` (the API sends integers), or null. */
export function retryAfterSeconds(response: Response): number | null {
  const value = response.headers.get('retry-after');
  if (value === null || !/^\d+$/.test(value.trim())) return null;
  return Number(value);
}

/** The error type for a status when the body is not the envelope (a proxy's page, say). */
function fallbackType(status: number): string {
  switch (status) {
    case 400: return 'invalid_request';
    case 401: return 'unauthorized';
    case 402: return 'payment_required';
    case 403: return 'insufficient_scope';
    case 404: return 'not_found';
    case 409: return 'conflict';
    case 412: return 'precondition_failed';
    case 410: return 'gone';
    case 429: return 'rate_limited';
    default: return 'server_error';
  }
}
