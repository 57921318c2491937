// What every Kiln MCP tool shares: the caller an identity resolves to (account + Team workspace,
// re-read on every request), valibot → JSON Schema, per-account rate limits, and the mapping of
// service errors (ApiError, Kiln SQLSTATEs) to SPEC-typed tool errors.
import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { Context } from '../../context.ts';
import { ApiError, envelope, errors, fromDatabaseError } from '../../errors.ts';
import { withTimeout } from '../../http.ts';
import { errorFields } from '../../log.ts';
import type { Identity } from '../auth.ts';
import type { ToolContext, ToolDef, ToolError } from '../tools.ts';

export type ToolResult = { structuredContent: object; text: string } | ToolError;

/** The billing side of a resolved identity: kiln.resolve_identity's row for this request. */
export interface Caller {
  accountId: string;
  /** Team workspace the identity bills to; null = the personal budget. */
  workspaceId: string | null;
}

// Filled by resolveIdentity (the route's resolveAccount, once per HTTP request) and read by the tools
// of that request: the route hands the same Identity object to both.
const callers = new WeakMap<Identity, Caller>();

/**
 * Maps a verified token identity to its account (null when unlinked), fresh from the database on
 * every request, so an unlink, a re-link or a workspace change applies to the very next call.
 */
export async function resolveIdentity(ctx: Context, identity: Identity): Promise<string | null> {
  const [row] = await ctx.sql`
    select account_id, workspace_id, linked_now
    from kiln.resolve_identity(${identity.iss}, ${identity.sub}, ${identity.email ?? null}, ${identity.emailVerified ?? false}, ${ctx.config.oidcAutoLinkEmail})`;
  if (!row) return null;
  if (row.linked_now) ctx.log.info('mcp identity auto-linked by verified email', { issuer: identity.iss, account: row.account_id });
  callers.set(identity, { accountId: row.account_id, workspaceId: row.workspace_id ?? null });
  return row.account_id;
}

export function callerOf(t: ToolContext): Caller {
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

/** Business error as a tool result (SPEC type + message). */
export function fail(type: string, message: string): ToolError {
  return { error: { type, message } };
}

/**
 * Runs a tool body, turning ApiErrors and Kiln SQLSTATEs into SPEC-typed tool errors; anything else
 * propagates, so the route logs it and answers a generic server_error without details.
 */
export async function guard(fn: () => Promise<ToolResult>): Promise<ToolResult> {
  try {
    return await fn();
  } catch (e) {
    const api = e instanceof ApiError ? e : fromDatabaseError(e);
    if (!api || (api.status >= 500 && api.status !== 503)) throw e;
    const { error } = envelope(api);
    return fail(error.type, error.message);
  }
}

/**
 * One request against a per-account GCRA bucket ("mcp:<account>" for reads, "transform:<account>"
 * shared with REST and the application). Fails closed: a limiter error is a 503-style server_error.
 */
export async function consumeRateLimit(ctx: Context, accountId: string, bucket: 'mcp' | 'transform', rpm: number): Promise<void> {
  let retryAfter: number;
  try {
    const [row] = await withTimeout(
      ctx.sql`select kiln.consume_account_rate_limit(${accountId}::uuid, ${bucket}, ${rpm}::int) as retry`,
      ctx.config.limiterTimeoutMs,
    );
    retryAfter = Number(row.retry);
  } catch (e) {
    ctx.log.warn('mcp rate limiter failed; failing closed', errorFields(e));
    throw errors.unavailable('The rate limiter is briefly unavailable. Retry with backoff.');
  }
  if (retryAfter > 0) throw errors.rateLimited(retryAfter);
}

/** Reads are limited per account on the MCP read bucket (KILN_READ_RPM per minute, like a key's reads). */
export function consumeRead(ctx: Context, accountId: string): Promise<void> {
  return consumeRateLimit(ctx, accountId, 'mcp', ctx.config.readRpm);
}

export const READ_ONLY = { readOnlyHint: true, destructiveHint: false, openWorldHint: false, idempotentHint: true } as const;

/** A tool definition built from valibot schemas (the single source shared with REST and OpenAPI). */
export function defineTool(
  def: Omit<ToolDef, 'inputSchema' | 'outputSchema' | 'handler'> & {
    input: v.GenericSchema;
    output: v.GenericSchema;
    handler(t: ToolContext, args: any): Promise<ToolResult>;
  },
): ToolDef {
  const { input, output, handler, ...rest } = def;
  return { ...rest, inputSchema: jsonSchema(input), outputSchema: jsonSchema(output), handler: (t, args) => guard(() => handler(t, args)) };
}

export function dollars(micros: number | null | undefined): string {
  if (micros == null) return 'unlimited';
  return `$${(micros / 1_000_000).toFixed(micros % 10_000 === 0 ? 2 : 6).replace(/(\.\d\d\d*?)0+$/, '$1')}`;
}
