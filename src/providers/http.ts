// One JSON-over-HTTP call to an upstream model API with per-attempt timeout, cancellation and
// retries (429 honouring retry-after, 408/409/5xx, network errors) — errors made client-safe —,
// its streamed variant (server-sent events, retried only until the first event), and the frame of
// a queued upstream job (submit, poll, fetch) under one deadline that cancels the upstream job
// when it is abandoned.

import { readCapped as readStream } from '../streams.ts';
import { abortedError, sleep, throwIfAborted } from './sleep.ts';
import { readSse, SILENT, type SseEvent } from './sse.ts';
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

export interface JsonCall {
  method: 'GET' | 'POST' | 'PUT';
  url: string;
  headers: Record<string, string>;
  body?: string | FormData;
  signal: AbortSignal;
  /**
   * The answer is the outcome of work that already ran upstream (a finished queue request's
   * result): an error status is that outcome, so it fails at once and is never retried, by this
   * call or by running the job again. Network errors and timeouts are still retried.
   */
  outcome?: boolean;
}

const TIMEOUT = Symbol('timeout');

const duration = (ms: number) => (ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`);
const ERROR_BODY_BYTES = 64 * 1024;
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

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

/**
 * Only machine-readable error categories survive; free text may echo secrets or prompts: OpenAI's
 * and Anthropic's `error.type`/`error.code`, Google's `error.status` (its `error.code` only repeats
 * the HTTP status and is dropped), fal's request-error `error_type` (or its `X-Fal-Error-Type`
 * header) and model-error `detail[0].type`.
 */
function errorDetail(body: string, status: number, headers: Headers): { detail: string; code: string | null } {
  // fal repeats a request error's `error_type` in this header (the body may be empty or cut).
  const headerType = errorToken(headers.get('x-fal-error-type'));
  try {
    const parsed = JSON.parse(body) as { error?: { type?: unknown; code?: unknown; status?: unknown }; error_type?: unknown; detail?: unknown };
    const e = parsed?.error;
    // Google's APIs put the HTTP status itself in `error.code` and their reason in `error.status`.
    const rawCode = errorToken(e?.code);
    const code = rawCode === String(status) ? null : rawCode;
    const type = errorToken(e?.type) ?? errorToken(e?.status);
    const falType = errorToken(parsed?.error_type);
    const first = Array.isArray(parsed?.detail) ? (parsed.detail[0] as { type?: unknown } | undefined) : undefined;
    const detailType = typeof first === 'object' && first !== null ? errorToken(first.type) : null;
    const uniq = [...new Set([type, code, falType ?? headerType, detailType].filter((x): x is string => x !== null))];
    return { detail: uniq.length ? ` (${uniq.join('/')})` : '', code };
  } catch {
    return { detail: headerType ? ` (${headerType})` : '', code: null };
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

function statusError(status: number, body: string, headers: Headers, outcome = false): ProviderError {
  const { detail, code } = errorDetail(body, status, headers);
  const message = `upstream provider returned ${status}${detail}`;
  if (outcome) {
    return new ProviderError(message, { code: status >= 500 ? 'upstream_error' : 'rejected', retryable: false, status });
  }
  if (status === 429 && code !== 'insufficient_quota') {
    return new ProviderError(message, { code: 'rate_limited', retryable: true, status, retryAfterMs: parseRetryAfter(headers) });
  }
  if (status === 408 || status === 409 || status >= 500) {
    return new ProviderError(message, { code: 'upstream_error', retryable: true, status });
  }
  // Includes 429 insufficient_quota: the upstream account is out of credit, waiting will not help.
  return new ProviderError(message, { code: 'rejected', retryable: false, status });
}

/** The client-safe error of a non-2xx answer (its body read up to a cap). */
async function errorAnswer(res: Response, outcome?: boolean): Promise<ProviderError> {
  const body = await readCapped(res, ERROR_BODY_BYTES).then((b) => b.toString('utf8'), () => '');
  return res.status >= 300 && res.status < 400
    ? new ProviderError(`upstream provider returned ${res.status} (redirects are not followed)`, { code: 'rejected', retryable: false, status: res.status })
    : statusError(res.status, body, res.headers, outcome);
}

function parseJsonBody(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ProviderError('upstream provider returned malformed JSON', { code: 'bad_response', retryable: false });
  }
}

const answerId = (res: Response) => requestId(res.headers.get('x-request-id') ?? res.headers.get('request-id'));

/** POSTs and returns the parsed JSON body plus the upstream request id. */
export async function postJson(call: Call, opts: RetryOptions = {}): Promise<{ json: unknown; requestId: string | null }> {
  const { json, requestId } = await requestJson({ ...call, method: 'POST' }, opts);
  return { json, requestId };
}

/** One JSON call (any method) with postJson's timeout, retry and error rules; also returns the 2xx status. */
export function requestJson(
  call: JsonCall,
  opts: RetryOptions = {},
): Promise<JsonAnswer> {
  return withAttempts(call.signal, opts, async (signal): Promise<Attempt<JsonAnswer>> => {
    const res = await fetch(call.url, {
      method: call.method,
      headers: call.headers,
      ...(call.body === undefined ? {} : { body: call.body }),
      signal,
      redirect: 'manual', // a redirect would re-send the Authorization header elsewhere
    });
    if (res.status >= 200 && res.status < 300) {
      const json = parseJsonBody(await readCapped(res, opts.maxResponseBytes ?? MAX_RESPONSE_BYTES));
      return { done: { json, requestId: answerId(res), status: res.status } };
    }
    return { retry: await errorAnswer(res, call.outcome) };
  });
}

interface JsonAnswer {
  json: unknown;
  requestId: string | null;
  status: number;
}

/** What one attempt came to: the call's answer, or an error the next attempt may retry. */
type Attempt<T> = { done: T } | { retry: ProviderError };

/**
 * The attempts of one upstream call: each gets its own signal, aborted after `timeoutMs` or with
 * the caller's (`settled()` ends the timeout, for a stream that then times its silences itself).
 * A ProviderError an attempt throws ends the call as it is; a failed fetch is a retryable network
 * error or timeout; between attempts, backoff or retry-after (beforeRetry).
 */
async function withAttempts<T>(
  callSignal: AbortSignal,
  opts: RetryOptions,
  attempt: (signal: AbortSignal, settled: () => void) => Promise<Attempt<T>>,
): Promise<T> {
  const maxAttempts = Math.max(1, opts.maxAttempts ?? 3);
  const timeoutMs = opts.timeoutMs ?? 120_000;
  let last: ProviderError | undefined;
  for (let n = 1; n <= maxAttempts; n++) {
    throwIfAborted(callSignal);
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(TIMEOUT), timeoutMs);
    const onAbort = () => ctl.abort(callSignal.reason);
    callSignal.addEventListener('abort', onAbort, { once: true });
    try {
      const r = await attempt(ctl.signal, () => clearTimeout(timer));
      if ('done' in r) return r.done;
      last = r.retry;
    } catch (err) {
      if (err instanceof ProviderError) throw err;
      if (callSignal.aborted) throw abortedError(callSignal.reason);
      last = ctl.signal.reason === TIMEOUT
        ? timedOut(timeoutMs, err)
        : new ProviderError('could not reach upstream provider', { code: 'network', retryable: true, cause: err });
    } finally {
      clearTimeout(timer);
      callSignal.removeEventListener('abort', onAbort);
    }
    if (n === maxAttempts) break;
    await beforeRetry(last, n, opts, callSignal);
  }
  throw exhausted(last!, maxAttempts, opts);
}

const timedOut = (ms: number, cause?: unknown) =>
  new ProviderError(`upstream provider timed out after ${duration(ms)}`, { code: 'timeout', retryable: true, ...(cause === undefined ? {} : { cause }) });

/** An error no attempt of the call retries: not retryable, or a retry-after longer than the call waits. */
function final(last: ProviderError, opts: RetryOptions): boolean {
  return !last.retryable || (last.retryAfterMs !== undefined && last.retryAfterMs > (opts.maxRetryAfterMs ?? 60_000));
}

/** Throws `last` when it may not be retried (or its retry-after is too long), else waits out the backoff. */
async function beforeRetry(last: ProviderError, attempt: number, opts: RetryOptions, signal: AbortSignal): Promise<void> {
  if (final(last, opts)) throw last;
  const backoff = Math.min(opts.maxDelayMs ?? 8_000, (opts.baseDelayMs ?? 500) * 2 ** (attempt - 1));
  const jittered = Math.round(backoff * (0.5 + (opts.random ?? Math.random)() / 2));
  await sleep(last.retryAfterMs ?? jittered, signal);
}

/** The last attempt's error, once every attempt failed. */
function exhausted(last: ProviderError, maxAttempts: number, opts: RetryOptions): ProviderError {
  if (final(last, opts)) return last;
  return new ProviderError(`${last.message} after ${maxAttempts} attempts`, {
    code: last.code,
    retryable: true,
    status: last.status,
    retryAfterMs: last.retryAfterMs,
    cause: last,
  });
}

/**
 * What a stream's reader makes of one event: `stop` — the protocol's end marker, nothing more is
 * read; `complete` — the answer is whole, but what follows is still read (a trailing usage chunk)
 * and a break after it is no error; nothing — more is to come.
 */
export type EventVerdict = 'stop' | 'complete' | void;

export interface StreamOptions extends RetryOptions {
  /** Cap on one event, in characters. Default 48 Mi (a streamed image's final event carries it whole, in base64). */
  maxEventChars?: number;
}

/** The upstream's answer to postStream, once its stream is complete. */
export interface StreamAnswer {
  requestId: string | null;
  /** The parsed body when the upstream answered plain JSON instead of a stream (a server that ignores `stream`). */
  json?: unknown;
}

const streamCut = () => new ProviderError('upstream stream ended before it was complete', { code: 'network', retryable: true });

/**
 * POSTs a request that asks for a server-sent event stream and hands each event to `onEvent` as
 * it arrives (docs/providers.md, "Streaming"). Until the first event, postJson's rules hold: the
 * same retries (status errors, 429 retry-after, network errors, timeouts — `timeoutMs` bounds the
 * wait for the answer and then each silence before the first event) and the same client-safe
 * errors. Once an event has been handed over, nothing is retried here: a connection cut, a
 * silence longer than `timeoutMs` or a stream ending before `onEvent` called it complete is a
 * retryable `network` error, for the job to retry under its attempt rules; whatever `onEvent`
 * throws (an error event, malformed data) propagates as it is. The caller's signal bounds it all.
 */
export function postStream(call: Call, opts: StreamOptions, onEvent: (ev: SseEvent) => EventVerdict): Promise<StreamAnswer> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const maxBytes = opts.maxResponseBytes ?? MAX_RESPONSE_BYTES;
  return withAttempts(call.signal, opts, async (signal, settled): Promise<Attempt<StreamAnswer>> => {
    const res = await fetch(call.url, { method: 'POST', headers: call.headers, body: call.body, signal, redirect: 'manual' });
    if (res.status < 200 || res.status >= 300) return { retry: await errorAnswer(res) };
    const id = answerId(res);
    if (!/^text\/event-stream\b/i.test(res.headers.get('content-type') ?? '')) {
      return { done: { requestId: id, json: parseJsonBody(await readCapped(res, maxBytes)) } };
    }
    // From here on the timeout is the longest silence allowed (readSse's idle timer).
    settled();
    let started = false;
    let complete = false;
    try {
      if (res.body) {
        const events = readSse(res.body, { signal: call.signal, idleMs: timeoutMs, maxEventChars: opts.maxEventChars ?? 48 * 1024 * 1024, maxTotalBytes: maxBytes });
        for await (const ev of events) {
          started = true;
          let verdict: EventVerdict;
          try {
            verdict = onEvent(ev);
          } catch (err) {
            // What the protocol made of an event (an error event, malformed data) is the answer.
            throw new Handled(err);
          }
          if (verdict === 'stop') return { done: { requestId: id } };
          if (verdict === 'complete') complete = true;
        }
      }
    } catch (err) {
      if (err instanceof Handled) throw err.cause;
      if (call.signal.aborted) throw abortedError(call.signal.reason);
      if (!(err instanceof ProviderError)) throw err;
      if (!err.retryable || err.code === 'aborted') throw err;
      // A cut or a silence: after the answer was whole it does not matter; after the first event
      // it is the job's to retry; before it, the next attempt's.
      if (!complete && !started) return { retry: err.cause === SILENT ? timedOut(timeoutMs) : err };
      if (!complete) throw err;
    }
    if (complete) return { done: { requestId: id } };
    if (started) throw streamCut();
    return { retry: streamCut() };
  });
}

/** An error thrown by postStream's onEvent, carried past the transport's error handling unchanged. */
class Handled {
  constructor(readonly cause: unknown) {}
}

/**
 * An error event inside a stream (Anthropic's `overloaded_error`, an OpenAI-compatible server's
 * `error` chunk): its machine-readable type and HTTP-like status, when it gives them, are kept.
 * Overload, rate limits and server errors may pass (retryable); a 4xx the same request would
 * meet again is `rejected`.
 */
export function streamErrorEvent(type: unknown, status?: unknown): ProviderError {
  const token = errorToken(type);
  const code = typeof status === 'number' && Number.isInteger(status) && status >= 400 && status < 600 ? status : null;
  const detail = [token, code === null ? null : String(code)].filter((x) => x !== null);
  const message = `upstream provider reported an error during the stream${detail.length ? ` (${detail.join('/')})` : ''}`;
  if (code === 429 || token === 'rate_limit_error') return new ProviderError(message, { code: 'rate_limited', retryable: true });
  if (code !== null && code < 500 && code !== 408 && code !== 409) return new ProviderError(message, { code: 'rejected', retryable: false });
  if (token === 'invalid_request_error' || token === 'authentication_error' || token === 'permission_error') {
    return new ProviderError(message, { code: 'rejected', retryable: false });
  }
  return new ProviderError(message, { code: 'upstream_error', retryable: true });
}

/** An event whose data is not the JSON the protocol promises. */
export function malformedEvent(): ProviderError {
  return new ProviderError('upstream provider sent malformed data in its stream', { code: 'bad_response', retryable: false });
}

/** An event's data parsed as JSON (a malformedEvent error when it is not). */
export function eventJson(ev: SseEvent): any {
  try {
    return JSON.parse(ev.data);
  } catch {
    throw malformedEvent();
  }
}

/**
 * A call whose outcome does not matter (cancelling an abandoned upstream job): one attempt under
 * its own short timeout — never the caller's signal, which has usually fired already — and no
 * error ever escapes.
 */
export async function bestEffort(call: Omit<JsonCall, 'signal'>, timeoutMs = 5_000): Promise<void> {
  try {
    const res = await fetch(call.url, {
      method: call.method,
      headers: call.headers,
      ...(call.body === undefined ? {} : { body: call.body }),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'manual',
    });
    await res.body?.cancel().catch(() => {});
  } catch {
    // Best effort: the upstream may have finished or be unreachable; nothing else to do.
  }
}

/** `url` when it is an absolute URL on `origin` (where the key may go), else null. */
export function onOrigin(url: unknown, origin: string): string | null {
  if (typeof url !== 'string') return null;
  try {
    const u = new URL(url);
    return u.origin === origin && (u.protocol === 'https:' || u.protocol === 'http:') ? u.href : null;
  } catch {
    return null;
  }
}

/** Bytes and media type of a base64 `data:` URL (fal's sync mode, Replicate's data outputs), else null. */
export function decodeDataUrl(url: string): { data: Buffer; mediaType: string } | null {
  const m = /^data:([a-z]+\/[a-z0-9.+-]+)?(?:;[a-z0-9-]+=[^;,]*)*;base64,/i.exec(url.slice(0, 200));
  if (!m) return null;
  const b64 = url.slice(m[0].length);
  if (!/^[A-Za-z0-9+/=\s]*$/.test(b64)) {
    throw new ProviderError('upstream provider returned malformed image data', { code: 'bad_response', retryable: false });
  }
  return { data: Buffer.from(b64, 'base64'), mediaType: (m[1] ?? 'application/octet-stream').toLowerCase() };
}

export interface UpstreamJob {
  /** Fires on the caller's signal and at the job deadline: every call of the job uses it. */
  signal: AbortSignal;
  /** Milliseconds left before the deadline. */
  remainingMs(): number;
  /**
   * Once the upstream accepted the job: how to cancel it if the job is abandoned (abort, deadline,
   * or an error while it still runs upstream). Pass null once the upstream job has ended.
   */
  cancelWith(cancel: (() => Promise<void>) | null): void;
  /**
   * The upstream job has ended and its outcome is known (fal's COMPLETED, a succeeded
   * prediction): nothing is left to cancel, and from here on no failure is retryable — running
   * the Kiln job again would submit a new upstream job for one that already ran (and was billed
   * or already retried upstream). A call may still retry itself (a network error on a fetch).
   */
  completed(): void;
}

/**
 * Runs a queued upstream job (submit, poll, fetch) under one deadline of `timeoutMs`. When the
 * caller's signal fires the upstream job is cancelled and the error is `aborted`; at the deadline
 * it is cancelled and the error is a retryable `timeout`; any other failure while the upstream
 * job still runs cancels it too, so nothing keeps running (and billing) that no one will collect.
 * Once the job reported `completed()`, no failure is retryable any more (see UpstreamJob).
 */
export async function runUpstreamJob<T>(
  opts: { signal: AbortSignal; timeoutMs: number },
  run: (job: UpstreamJob) => Promise<T>,
): Promise<T> {
  const deadline = new AbortController();
  const ends = Date.now() + opts.timeoutMs;
  const timer = setTimeout(() => deadline.abort(TIMEOUT), opts.timeoutMs);
  const signal = AbortSignal.any([opts.signal, deadline.signal]);
  let cancel: (() => Promise<void>) | null = null;
  let ended = false;
  try {
    return await run({
      signal,
      remainingMs: () => Math.max(0, ends - Date.now()),
      cancelWith: (c) => void (cancel = c),
      completed: () => {
        ended = true;
        cancel = null;
      },
    });
  } catch (err) {
    const pending = cancel as (() => Promise<void>) | null;
    if (pending) await pending();
    if (opts.signal.aborted) throw abortedError(opts.signal.reason);
    if (deadline.signal.aborted) {
      throw new ProviderError(`upstream provider timed out after ${duration(opts.timeoutMs)}`, { code: 'timeout', retryable: !ended, cause: err });
    }
    if (ended && err instanceof ProviderError && err.retryable) {
      throw new ProviderError(err.message, { code: err.code, retryable: false, status: err.status, usage: err.usage, cause: err });
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
