// What every Kiln MCP tool shares: the caller an identity resolves to (account + Team workspace,
// re-read on every request), the tool's declared access applied before its handler (auth/access.ts,
// the one authorization path), valibot → JSON Schema, and the mapping of service errors (ApiError,
// Kiln SQLSTATEs) to tool errors typed as REST's (docs/mcp.md).
import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import { issueMessage } from '../../schemas.ts';
import { authorizeMcp, type Bucket, type Caller } from '../../auth/access.ts';
import type { Context } from '../../context.ts';
import { underSpan } from '../../telemetry/scope.ts';
import { resolveIdentity as resolveIdentitySql } from '../../db/sql/resolve_identity.ts';
import { ApiError, envelope, errors, fromDatabaseError, isStoreFailure } from '../../errors.ts';
import { IdempotencyKeySchema } from '../../idempotency.ts';
import type { Identity } from '../auth.ts';
import type { ToolContext, ToolDef, ToolError } from '../tool-server.ts';

export type ToolResult = { structuredContent: object; text: string } | ToolError;

// Filled by resolveIdentity (the route's resolveAccount, once per HTTP request) and read by the tools
// of that request: the route hands the same Identity object to both.
const callers = new WeakMap<Identity, Caller>();

/**
 * Maps a verified token identity to its account (null when unlinked), fresh from the database on
 * every request, so an unlink, a re-link or a workspace change applies to the very next call.
 */
export async function resolveIdentity(ctx: Context, identity: Identity): Promise<string | null> {
  const [row] = await resolveIdentitySql(ctx.sql, {
    issuer: identity.iss, subject: identity.sub, email: identity.email ?? null, emailVerified: identity.emailVerified ?? false,
    autoLink: ctx.config.oidcAutoLinkEmail,
  });
  if (!row) return null;
  if (row.linked_now) ctx.log.info('mcp identity auto-linked by verified email', { issuer: identity.iss, account: row.account_id });
  callers.set(identity, { accountId: row.account_id, keyId: null, workspaceId: row.workspace_id ?? null, origin: 'mcp' });
  return row.account_id;
}

/** The MCP caller of a tool call: the identity's account and billing scope, origin mcp. */
function callerOf(t: ToolContext): Caller {
  const caller = callers.get(t.identity);
  // Never guess a billing scope: a missing entry would otherwise bill the personal budget.
  if (!caller || caller.accountId !== t.accountId) throw new Error('MCP tool called without a resolved identity');
  return caller;
}

/** JSON Schema (2020-12) of a valibot schema; `$schema` is dropped: 2020-12 is MCP's default dialect. */
export function jsonSchema(schema: v.GenericSchema): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = toJsonSchema(schema, { target: 'draft-2020-12', errorMode: 'ignore' }) as Record<string, unknown>;
  return rest;
}

/** Business error as a tool result (the error type + message, and REST's `details` when the error has them). */
export function fail(type: string, message: string, details?: ToolError['error']['details']): ToolError {
  return { error: details ? { type, message, details } : { type, message } };
}

/**
 * Runs a tool body, turning ApiErrors and Kiln SQLSTATEs into typed tool errors; anything else
 * propagates, so the route logs it and answers a generic server_error without details.
 */
export async function guard(fn: () => Promise<ToolResult>): Promise<ToolResult> {
  try {
    return await fn();
  } catch (e) {
    // A StoreError (the object store down) is a retryable unavailable, as over REST.
    const api = e instanceof ApiError ? e : isStoreFailure(e) ? errors.storeUnavailable() : fromDatabaseError(e);
    if (!api || (api.status >= 500 && api.status !== 503)) throw e;
    const { error } = envelope(api);
    return fail(error.type, error.message, error.details);
  }
}

/** The optional `idempotencyKey` of the tools that start work: the REST Idempotency-Key, as an argument. */
export const IdempotencyKeyArg = v.optional(v.pipe(
  IdempotencyKeySchema,
  v.description(
    'Optional; strongly recommended. A unique string you choose for this one request (e.g. a UUID; 1–255 printable ASCII characters). ' +
    'If the call fails or times out and you retry, reuse the SAME key with the same arguments: the retry answers the id of the job ' +
    'already started instead of starting (and billing) a second one. Use a new key for a new request; reusing a key with different ' +
    'arguments is an idempotency_conflict error. Keys are kept 24 hours per account; a refused call (invalid, quota, rate limit) keeps nothing.',
  ),
));

export const READ_ONLY = { readOnlyHint: true, destructiveHint: false, openWorldHint: false, idempotentHint: true } as const;
/** Ends a job for good: not read-only, destructive (its provider call is aborted), and a repeat changes nothing more. */
export const CANCELS = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } as const;

/**
 * A tool definition built from valibot schemas (the single source shared with REST and OpenAPI).
 * Like a route, a tool declares its rate bucket: the caller's bucket is drawn on before the
 * handler runs (failing closed), and the handler gets the resolved MCP caller.
 */
export function defineTool<A>(
  ctx: Context,
  def: Omit<ToolDef, 'inputSchema' | 'outputSchema' | 'handler'> & {
    input: v.GenericSchema;
    output: v.GenericSchema;
    /** 'read' = the account's MCP read bucket, 'transform' = the transform bucket shared with REST, null = none (starts). */
    bucket: Bucket;
    /** `ctx`: the call's Context (traced under its `tools/call` span when tracing is on). */
    handler(caller: Caller, args: A, ctx: Context, t: ToolContext): Promise<ToolResult>;
  },
): ToolDef {
  const { input, output, handler, bucket, ...rest } = def;
  return {
    ...rest,
    inputSchema: jsonSchema(input),
    outputSchema: jsonSchema(output),
    // The same wording as REST's bodies (schemas.ts): `name: is required`, not a validator's own.
    checkArgs: (args) => {
      const r = v.safeParse(input, args);
      return r.success ? undefined : issueMessage(r.issues);
    },
    handler: (t, args) => guard(async () => {
      const caller = callerOf(t);
      const call = underSpan(ctx, t.span, t.requestId);
      await authorizeMcp(call, caller, bucket);
      return handler(caller, args as A, call, t);
    }),
  };
}

export function dollars(micros: number | null | undefined): string {
  if (micros == null) return 'unlimited';
  return `$${(micros / 1_000_000).toFixed(micros % 10_000 === 0 ? 2 : 6).replace(/(\.\d\d\d*?)0+$/, '$1')}`;
}
