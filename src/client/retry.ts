// The client's fetch layer: 503 answers and network errors retried with jittered exponential
// backoff, 429 `rate_limited` waiting for `retry-after`; every other answer returned as is. A
// retry never pays twice: the POSTs that start work carry an Idempotency-Key, set once per call
// by index.ts, so every attempt of the call sends the same one.

import { KilnError, retryAfterSeconds } from './errors.ts';

export interface RetryOptions {
  /** Attempts per call, the first included (1 = never retry). */
  maxAttempts: number;
  /** Backoff before retry n is a random delay in [0, min(maxDelayMs, baseDelayMs · 2ⁿ)]. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A 429 asking to wait longer than this is thrown at once instead of waited for. */
  maxRetryAfterSeconds: number;
}

export const DEFAULT_RETRY: RetryOptions = { maxAttempts: 5, baseDelayMs: 200, maxDelayMs: 5_000, maxRetryAfterSeconds: 60 };

/** The defaults with the caller's overrides. */
export function retryOptions(options: Partial<RetryOptions> = {}): RetryOptions {
  return { ...DEFAULT_RETRY, ...options };
}

type Fetch = (request: Request) => Promise<Response>;

export function retryingFetch(inner: Fetch, options: Partial<RetryOptions> = {}): Fetch {
  const o = retryOptions(options);
  return async (request) => {
    const signal = request.signal;
    for (let attempt = 1; ; attempt++) {
      signal.throwIfAborted();
      const last = attempt >= o.maxAttempts;
      let response: Response;
      try {
        response = await inner(request.clone());
      } catch (error) {
        signal.throwIfAborted();
        // No answer: the request may have landed. Only calls that cannot do anything twice are
        // sent again (reads, keyed POSTs, cancels, PUT and DELETE).
        if (last || !resendable(request)) {
          throw new KilnError({ status: 0, type: 'network_error', message: `could not reach ${new URL(request.url).origin}: ${(error as Error)?.message ?? error}`, cause: error });
        }
        await sleep(backoff(o, attempt), signal);
        continue;
      }
      if (last) return response;
      if (response.status === 503) {
        // The service refused before doing anything (the limiter fails closed; a transaction
        // rolled back), so any call may be sent again.
        const hinted = (retryAfterSeconds(response) ?? 0) * 1000;
        await response.body?.cancel();
        await sleep(Math.max(backoff(o, attempt), Math.min(hinted, o.maxRetryAfterSeconds * 1000)), signal);
        continue;
      }
      if (response.status === 429) {
        const seconds = retryAfterSeconds(response);
        if (seconds !== null && seconds <= o.maxRetryAfterSeconds && (await errorType(response)) === 'rate_limited') {
          await response.body?.cancel();
          // A little jitter so that many clients limited together do not return together.
          await sleep(seconds * 1000 + Math.random() * o.baseDelayMs, signal);
          continue;
        }
      }
      return response;
    }
  };
}

/**
 * Calls that cannot do anything twice: reads, keyed POSTs, cancels, and PUT and DELETE (idempotent
 * by definition; with If-Match a resent save that had landed answers 412, a resent delete 404 —
 * an error, never a second write).
 */
function resendable(request: Request): boolean {
  return ['GET', 'HEAD', 'PUT', 'DELETE'].includes(request.method) || request.headers.has('idempotency-key') || new URL(request.url).pathname.endsWith('/cancel');
}

/** A random delay in [0, min(maxDelayMs, baseDelayMs · 2^attempt)] ("full jitter"). */
export function backoff(o: RetryOptions, attempt: number): number {
  return Math.random() * Math.min(o.maxDelayMs, o.baseDelayMs * 2 ** attempt);
}

async function errorType(response: Response): Promise<string | null> {
  try {
    const body = await response.clone().json();
    return typeof body?.error?.type === 'string' ? body.error.type : null;
  } catch {
    return null;
  }
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
