// One JSON-over-HTTP call to an upstream model API with per-attempt timeout, cancellation and
// retries (429 honouring retry-after, 408/409/5xx, network errors) — errors made client-safe.

import { readCapped as readStream } from '../http/streams.ts';
import { abortedError, sleep, throwIfAborted } from './sleep.ts';
import { ProviderError } from './types.ts';

export interface RetryOptions {
  /** Per attempt, covering connect, upstream work and reading the body. Default 120 s. */
  timeoutMs?: number;
  /** Total attempts including the first. Default 3. */
  maxAttempts?: number;
  /** Backoff base; attempt n waits base × 2^(n-1), jittered to 50–100 %, capped. Default 500 ms. */
  baseDelayMs?: number;
  /** Default 8 s. */
  maxDelayMs?: number;
  /** A longer retry-after is not waited out: the call fails (retryable, with retryAfterMs). Default 60 s. */
  maxRetryAfterMs?: number;
  /** Cap on a successful response body. Default 64 MiB (base64 images are large). */
  maxResponseBytes?: number;
  random?: () => number;
}

export interface Call {
  url: string;
  headers: Record<string, string>;
  body: string | FormData;
  signal: AbortSignal;
}

const TIMEOUT = Symbol('timeout');
const ERROR_BODY_BYTES = 64 * 1024;

/**
 * OpenAI error types/codes are words like `invalid_request_error` (OpenRouter uses numbers).
 * Anything with digits mixed in or dashes is dropped: that is how keys and ids look.
 */
function errorToken(v: unknown): string | null {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v < 1000 ? String(v) : null;
  return typeof v === 'string' && /^[A-Za-z][A-Za-z_.]{0,47}$/.test(v) ? v : null;
}

function requestId(v: string | null): string | null {
  return v !== null && /^[A-Za-z0-9_.:-]{1,128}$/.test(v) ? v : null;
}

/** Only OpenAI's machine-readable `error.type`/`error.code` survive; free text may echo secrets. */
function errorDetail(body: string): { detail: string; code: string | null } {
  try {
    const e = (JSON.parse(body) as { error?: { type?: unknown; code?: unknown } }).error;
    const type = errorToken(e?.type), code = errorToken(e?.code);
    const uniq = [...new Set([type, code].filter((x): x is string => x !== null))];
    return { detail: uniq.length ? ` (${uniq.join('/')})` : '', code };
  } catch {
    return { detail: '', code: null };
  }
}

export function parseRetryAfter(headers: Headers, now = Date.now()): number | undefined {
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.get('retry-after-ms') !== null && Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
  const raw = headers.get('retry-after');
  if (raw === null) return undefined;
  const secs = Number(raw);
  if (raw.trim() !== '' && Number.isFinite(secs) && secs >= 0) return Math.ceil(secs * 1000);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export async function readCapped(res: Response, cap: number): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > cap) {
    await res.body?.cancel().catch(() => {});
    throw new ProviderError('upstream response is too large', { code: 'bad_response', retryable: false });
  }
  if (!res.body) return Buffer.alloc(0);
  const buf = await readStream(res.body, cap);
  if (!buf) throw new ProviderError('upstream response is too large', { code: 'bad_response', retryable: false });
  return buf;
}

function statusError(status: number, body: string, headers: Headers): ProviderError {
  const { detail, code } = errorDetail(body);
  const message = `upstream provider returned ${status}${detail}`;
  if (status === 429 && code !== 'insufficient_quota') {
    return new ProviderError(message, { code: 'rate_limited', retryable: true, status, retryAfterMs: parseRetryAfter(headers) });
  }
  if (status === 408 || status === 409 || status >= 500) {
    return new ProviderError(message, { code: 'upstream_error', retryable: true, status });
  }
  // Includes 429 insufficient_quota: the upstream account is out of credit, waiting will not help.
  return new ProviderError(message, { code: 'rejected', retryable: false, status });
}

/** POSTs and returns the parsed JSON body plus the upstream request id. */
export async function postJson(
  call: Call,
  opts: RetryOptions = {},
): Promise<{ json: unknown; requestId: string | null }> {
  const maxAttempts = Math.max(1, opts.maxAttempts ?? 3);
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const random = opts.random ?? Math.random;
  let last: ProviderError | undefined;

  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    throwIfAborted(call.signal);
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(TIMEOUT), timeoutMs);
    const onAbort = () => ctl.abort(call.signal.reason);
    call.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await fetch(call.url, {
        method: 'POST',
        headers: call.headers,
        body: call.body,
        signal: ctl.signal,
        redirect: 'manual', // a redirect would re-send the Authorization header elsewhere
      });
      if (res.status >= 200 && res.status < 300) {
        const raw = await readCapped(res, opts.maxResponseBytes ?? 64 * 1024 * 1024);
        let json: unknown;
        try {
          json = JSON.parse(raw.toString('utf8'));
        } catch {
          throw new ProviderError('upstream provider returned malformed JSON', { code: 'bad_response', retryable: false });
        }
        return { json, requestId: requestId(res.headers.get('x-request-id')) };
      }
      const body = await readCapped(res, ERROR_BODY_BYTES).then((b) => b.toString('utf8'), () => '');
      last = res.status >= 300 && res.status < 400
        ? new ProviderError(`upstream provider returned ${res.status} (redirects are not followed)`, { code: 'rejected', retryable: false, status: res.status })
        : statusError(res.status, body, res.headers);
    } catch (err) {
      if (err instanceof ProviderError) throw err;
      if (call.signal.aborted) throw abortedError(call.signal.reason);
      last = ctl.signal.reason === TIMEOUT
        ? new ProviderError(`upstream provider timed out after ${timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`}`, { code: 'timeout', retryable: true, cause: err })
        : new ProviderError('could not reach upstream provider', { code: 'network', retryable: true, cause: err });
    } finally {
      clearTimeout(timer);
      call.signal.removeEventListener('abort', onAbort);
    }

    if (!last.retryable) throw last;
    const maxRetryAfter = opts.maxRetryAfterMs ?? 60_000;
    if (last.retryAfterMs !== undefined && last.retryAfterMs > maxRetryAfter) throw last;
    if (attempt === maxAttempts) break;
    const backoff = Math.min(opts.maxDelayMs ?? 8_000, (opts.baseDelayMs ?? 500) * 2 ** (attempt - 1));
    const jittered = Math.round(backoff * (0.5 + random() / 2));
    await sleep(last.retryAfterMs ?? jittered, call.signal);
  }
  throw new ProviderError(`${last!.message} after ${maxAttempts} attempts`, {
    code: last!.code,
    retryable: true,
    status: last!.status,
    retryAfterMs: last!.retryAfterMs,
    cause: last,
  });
}
