// HTTP helpers shared by routes: JSON bodies validated by valibot, key authorization with
// rate limits in one SQL call (failing closed), and response headers.

import type { H3Event } from 'h3';
import * as v from 'valibot';
import type { Context } from './context.ts';
import { ApiError, errors } from './errors.ts';
import { bearerKey, hashKey } from './keys.ts';
import { errorFields } from './log.ts';

export interface KeyAuth {
  keyId: string;
  accountId: string;
  workspaceId: string | null;
  tier: string;
  scopes: string[];
}

/** Formats the first valibot issue as "field: message". */
export function issueMessage(issues: readonly v.BaseIssue<unknown>[]): string {
  const issue = issues[0];
  const path = v.getDotPath(issue);
  return path ? `${path}: ${issue.message}` : issue.message;
}

export function parseWith<S extends v.GenericSchema>(schema: S, input: unknown): v.InferOutput<S> {
  const res = v.safeParse(schema, input);
  if (!res.success) throw errors.invalid(issueMessage(res.issues));
  return res.output;
}

/** Reads a JSON body with a size cap; malformed or oversized bodies are 400/413 envelopes. */
export async function readJson(event: H3Event, maxBytes: number): Promise<unknown> {
  const len = Number(event.req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(len) && len > maxBytes) {
    throw new ApiError('invalid_request', `Request body is larger than ${maxBytes} bytes.`, { status: 413 });
  }
  const ctype = event.req.headers.get('content-type') ?? '';
  if (ctype && !/^application\/(.+\+)?json\b/i.test(ctype)) {
    throw new ApiError('invalid_request', 'Request body must be application/json.', { status: 415 });
  }
  const body = event.req.body;
  if (!body) throw errors.invalid('Request body is required.');
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new ApiError('invalid_request', `Request body is larger than ${maxBytes} bytes.`, { status: 413 });
    }
    chunks.push(value);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text.trim()) throw errors.invalid('Request body is required.');
  try {
    return JSON.parse(text);
  } catch {
    throw errors.invalid('Request body is not valid JSON.');
  }
}

export interface AuthorizeOptions {
  scope: 'read' | 'write';
  /** Endpoint bucket: per-key reads, per-account transforms, or none (generation starts). */
  bucket: 'read' | 'transform' | null;
}

/**
 * Authenticates the bearer key, checks its scope and consumes its rate-limit buckets in one
 * SQL call. Any failure or timeout of that call is a 503: the limiter never fails open.
 */
export async function authorize(ctx: Context, event: H3Event, opts: AuthorizeOptions): Promise<KeyAuth> {
  const key = bearerKey(event.req.headers.get('authorization'));
  if (!key) throw errors.unauthorized();
  const rpm = opts.bucket === 'read' ? ctx.config.readRpm : opts.bucket === 'transform' ? ctx.config.transformRpm : null;
  let row: any;
  try {
    [row] = await withTimeout(
      ctx.sql`select (a).* from kiln.authorize_request(${hashKey(key)}, ${opts.scope}, ${opts.bucket}, ${rpm}::int) a`,
      ctx.config.limiterTimeoutMs,
    );
  } catch (e) {
    ctx.log.warn('authorize failed; failing closed', errorFields(e));
    throw errors.unavailable('The rate limiter is briefly unavailable. Retry with backoff.');
  }
  return authResult(row, opts.scope);
}

export function authResult(row: any, scope: string): KeyAuth {
  switch (row?.status) {
    case 'ok':
      return { keyId: row.key_id, accountId: row.account_id, workspaceId: row.workspace_id, tier: row.tier, scopes: row.scopes };
    case 'insufficient_scope':
      throw errors.scope(scope);
    case 'rate_limited':
      throw errors.rateLimited(row.retry_after);
    default:
      throw errors.unauthorized();
  }
}

/** Rejects when `p` takes longer than `ms`; a cancellable postgres.js query is cancelled. */
export async function withTimeout<T>(p: Promise<T> & { cancel?: () => unknown }, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      try { p.cancel?.(); } catch { /* already done */ }
      reject(Object.assign(new Error('timed out'), { code: 'KILN_TIMEOUT' }));
    }, ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}
