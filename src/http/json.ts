// HTTP helpers shared by routes: JSON bodies (capped, parsed, refused when Postgres could not
// store them), valibot validation messages, and responses. Authorization: auth/access.ts.

import type { IncomingMessage } from 'node:http';
import type { H3Event } from 'h3';
import { ApiError, errors } from '../errors.ts';
import { readCapped } from '../streams.ts';
import { unstorableValue } from './storable.ts';

/**
 * Reads a body of one of `types` (its Content-Type) with a size cap, as bytes: 415 for another
 * type, 413 past the cap, 400 when empty.
 */
export async function readRaw(event: H3Event, maxBytes: number, types: readonly string[]): Promise<Buffer> {
  const len = Number(event.req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(len) && len > maxBytes) {
    throw new ApiError('invalid_request', `Request body is larger than ${maxBytes} bytes.`, { status: 413 });
  }
  const ctype = (event.req.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (!types.includes(ctype)) {
    throw new ApiError('invalid_request', `Request body must be ${types.join(' or ')}.`, { status: 415 });
  }
  const nodeReq = (event.runtime?.node as { req?: IncomingMessage } | undefined)?.req;
  const body = nodeReq && !event.req.bodyUsed && !nodeReq.readableDidRead ? nodeReq : event.req.body;
  if (!body) throw errors.invalid('Request body is required.');
  const buf = await readCapped(body as AsyncIterable<Uint8Array>, maxBytes);
  if (!buf) throw new ApiError('invalid_request', `Request body is larger than ${maxBytes} bytes.`, { status: 413 });
  if (!buf.length) throw errors.invalid('Request body is required.');
  return buf;
}

/**
 * Reads a JSON body with a size cap; malformed or oversized bodies are 400/413 envelopes, and so
 * is a body holding a value Postgres cannot store (NUL, a lone surrogate, a non-finite number).
 */
export async function readJson(event: H3Event, maxBytes: number): Promise<unknown> {
  const len = Number(event.req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(len) && len > maxBytes) {
    throw new ApiError('invalid_request', `Request body is larger than ${maxBytes} bytes.`, { status: 413 });
  }
  const ctype = event.req.headers.get('content-type') ?? '';
  if (ctype && !/^application\/(.+\+)?json\b/i.test(ctype)) {
    throw new ApiError('invalid_request', 'Request body must be application/json.', { status: 415 });
  }
  // On Node, read the IncomingMessage itself: wrapping it in a web ReadableStream first costs
  // as much CPU as the rest of a small JSON route's handling (BENCH.md, "String bodies").
  const nodeReq = (event.runtime?.node as { req?: IncomingMessage } | undefined)?.req;
  const body = nodeReq && !event.req.bodyUsed && !nodeReq.readableDidRead ? nodeReq : event.req.body;
  if (!body) throw errors.invalid('Request body is required.');
  const buf = await readCapped(body as AsyncIterable<Uint8Array>, maxBytes);
  if (!buf) throw new ApiError('invalid_request', `Request body is larger than ${maxBytes} bytes.`, { status: 413 });
  const text = buf.toString('utf8');
  if (!text.trim()) throw errors.invalid('Request body is required.');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw errors.invalid('Request body is not valid JSON.');
  }
  // Before any SQL: a value Postgres cannot store is this request's 400, never the failure of
  // a batch it shares. Strings can hold NUL or a lone surrogate only through a \u escape.
  const bad = unstorableValue(value, { strings: text.includes('\\u'), root: 'body' });
  if (bad) throw errors.invalid(bad);
  return value;
}

/**
 * Sends a JSON body through h3's fast path (a string, headers on event.res): returning a web
 * Response costs noticeably more CPU per request on Node (BENCH.md, "String bodies").
 */
export function sendJson(event: H3Event, body: unknown, opts: { status?: number; headers?: Record<string, string>; raw?: boolean } = {}): string {
  event.res.status = opts.status ?? 200;
  event.res.headers.set('content-type', 'application/json; charset=utf-8');
  for (const [k, v] of Object.entries(opts.headers ?? {})) event.res.headers.set(k, v);
  return opts.raw ? (body as string) : JSON.stringify(body);
}

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}
