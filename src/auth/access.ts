// The one authorization path. A REST route declares its scope, its rate bucket and, optionally,
// the read or write done in the same SQL call (an AuthorizedCall); the server applies that before
// the handler and hands it a resolved Caller. MCP tools declare their bucket the same way and get
// an MCP Caller. Services take a Caller — never a key hash or an HTTP event. The limiter's 503 is
// produced here and nowhere else: a failed or timed-out authorizing call never lets a request pass.

import { getRequestIP, type H3Event } from 'h3';
import { byOrd, perOwner, REQUEST_BATCHES_IN_FLIGHT, type Batcher } from '../db/batch.ts';
import type { Context } from '../context.ts';
import { authorizeRequests as authorizeRequestsSql } from '../db/sql/authorize_requests.ts';
import { consumeAccountRateLimit } from '../db/sql/consume_account_rate_limit.ts';
import { keyCarriesScope } from '../db/sql/keys.ts';
import { ApiError, errors, isDataError, UNSTORABLE_MESSAGE } from '../errors.ts';
import { errorFields } from '../log.ts';
import { withTimeout } from '../db/timeout.ts';
import type { Queryable, Sql } from '../db/pool.ts';
import { currentQueryParent } from '../db/query-parent.ts';
import { bindPool } from '../telemetry/pool.ts';
import { readTolerant } from '../db/replica.ts';
import { bearerKey, hashKey } from './secrets.ts';
import { sessionSecret } from './session-cookie.ts';
import { KEY_SCOPES, type Scope } from './scopes.ts';

export { KEY_SCOPES, type Scope };
/** Endpoint bucket: per-key reads, per-account transforms, or none (starts are bounded by budgets and slots). */
export type Bucket = 'read' | 'transform' | null;
export type Origin = 'api' | 'mcp' | 'app' | 'workflow';

/** Who is calling, resolved once per request: an API key or console session (origin api) or an MCP identity (origin mcp). */
export interface Caller {
  accountId: string;
  /** The API key or console session, when the call came with one (null for MCP). */
  keyId: string | null;
  /** Team pool to bill; null = the personal budget. */
  workspaceId: string | null;
  origin: 'api' | 'mcp';
  /** The credential: a bearer key, a console session cookie, or an MCP identity (default by origin). */
  via?: 'key' | 'session' | 'identity';
  /** The credential's scopes (admin only for admins); unknown for MCP identities. */
  scopes?: string[];
  /** For the audit log: the client's address and the request's X-Request-ID. */
  ip?: string;
  requestId?: string;
}

/** A request's credential: the hash of its bearer key or of its session cookie. */
export interface Credential {
  hash: Buffer;
  via: 'key' | 'session';
}

/** What every authorizing SQL call returns for a request (kiln.authorize_requests' columns). */
export interface AuthRow {
  ord: number;
  status: 'ok' | 'unauthorized' | 'insufficient_scope' | 'rate_limited' | string;
  key_id: string | null;
  account_id: string | null;
  workspace_id: string | null;
  scopes?: string[] | null;
  retry_after: number | null;
}

/** One request for an authorizing call: the hashed key, what it needs, and what the call also does. */
export interface KeyRequest<P> {
  hash: Buffer;
  scope: Scope;
  bucket: Bucket;
  payload: P;
}

/**
 * A batched SQL call that authorizes keys and does one read or write in the same statement: the
 * requests arriving together go out as one call (at most `max`), two calls in flight per process.
 */
export type AuthorizedCall<P, X> = (ctx: Context) => Batcher<KeyRequest<P>, AuthRow & X>;

export function authorizedCall<P, X>(
  max: number,
  run: (ctx: Context, items: Array<KeyRequest<P>>) => Promise<Iterable<AuthRow & X>> & { cancel?: () => unknown },
  /** A call's whole wait, queueing included (default KILN_LIMITER_TIMEOUT_MS); past it, a 503. */
  timeoutMs: (ctx: Context) => number = (ctx) => ctx.config.limiterTimeoutMs,
): AuthorizedCall<P, X> {
  return perOwner<Context, KeyRequest<P>, AuthRow & X>(
    max,
    (ctx) => async (items, timeLeftMs) => byOrd(items.length, await withTimeout(run(ctx, items), timeLeftMs)),
    (ctx) => ({ maxInFlight: REQUEST_BATCHES_IN_FLIGHT, timeoutMs: timeoutMs(ctx) }),
  );
}

/** One read of a caller the primary has authorized already. */
export interface CallerItem<P> {
  caller: Caller;
  payload: P;
}

/**
 * A batched read that tolerates the replica's bounded lag (db/replica.ts) for callers already
 * authorized: a replica cannot write, so it cannot run an AuthorizedCall (which debits the read
 * bucket in the same statement). `run` is one read-only SQL call returning a row per item by ord.
 */
export type CallerRead<P, X> = (ctx: Context) => Batcher<CallerItem<P>, X>;

export function callerRead<P, X>(
  max: number,
  run: (sql: Queryable, ctx: Context, items: Array<CallerItem<P>>) => Promise<Iterable<{ ord: number } & X>> & { cancel?: () => unknown },
): CallerRead<P, X> {
  return perOwner<Context, CallerItem<P>, X>(
    max,
    (ctx) => async (items, timeLeftMs) => {
      // Traced under the batch's first traced request, on whichever pool readTolerant picks.
      const parent = currentQueryParent();
      return byOrd(items.length, await readTolerant(ctx, (sql) => run(parent ? bindPool(sql as Sql, parent) : sql, ctx, items), timeLeftMs));
    },
    (ctx) => ({ maxInFlight: REQUEST_BATCHES_IN_FLIGHT, timeoutMs: ctx.config.limiterTimeoutMs }),
  );
}

/** A route's or tool's access rule. */
export interface Access<P = unknown, X = unknown> {
  scope: Scope;
  bucket: Bucket;
  /** The read or write done in the same SQL call as the authorization (default: authorization alone). */
  call?: AuthorizedCall<P, X>;
  /**
   * The same read as `call` for a caller authorized already, on the read replica: used instead of
   * `call` while a replica is configured and within KILN_REPLICA_MAX_LAG — the key is then
   * authorized on the primary first (authorizeOnly: the same scope, bucket and rpm) — so the
   * limits stay exact and only the read tolerates the lag.
   */
  replicaRead?: CallerRead<P, X>;
  /**
   * Reads and checks what `call` needs (the body, the path ids, the query) before the SQL call.
   * Errors it throws are answered only once the key checks out (a 401/403/429 comes first).
   * Returning ALONE authorizes alone: the handler does its work after (e.g. a large body read
   * only for an authorized key).
   */
  prepare?(ctx: Context, event: H3Event): Promise<P | typeof ALONE> | P | typeof ALONE;
}

export const ALONE = Symbol('authorize alone');

/** What a route's handler receives: the caller and, when the route declared a call, its row. */
export interface Authorized<P = unknown, X = unknown> {
  caller: Caller;
  /** The call's row (null when the request was authorized alone). */
  row: (AuthRow & X) | null;
  payload: P | null;
}

/** The limiter's call failed or timed out: fail closed with a 503, never a pass. The one place. */
export function limiterFailed(ctx: Context, e: unknown): ApiError {
  if (e instanceof ApiError && e.status !== 500) return e;
  ctx.log.warn('authorize failed; failing closed', errorFields(e));
  return errors.unavailable('The rate limiter is briefly unavailable. Retry with backoff.');
}

/** The caller of an authorizing call's row, or the key's 401 / 403 / 429. */
export function callerOf(row: AuthRow | null | undefined, scope: Scope, via: 'key' | 'session' = 'key'): Caller {
  switch (row?.status) {
    case 'ok':
      return { accountId: row.account_id!, keyId: row.key_id, workspaceId: row.workspace_id, origin: 'api', via, scopes: row.scopes ?? [] };
    case 'insufficient_scope':
      throw errors.scope(scope);
    case 'rate_limited':
      throw errors.rateLimited(row.retry_after ?? 1);
    default:
      throw errors.unauthorized();
  }
}

/**
 * callerOf, with the true reason of an admin route's 403: a credential that carries the admin
 * scope of a user who is not an admin is told so (one extra read, on that refusal only).
 */
async function callerOrRefusal(ctx: Context, row: AuthRow | null | undefined, scope: Scope, via: 'key' | 'session'): Promise<Caller> {
  if (scope === 'admin' && row?.status === 'insufficient_scope' && row.key_id) {
    let carries = via === 'session';
    if (!carries) {
      try {
        const [r] = await withTimeout(keyCarriesScope(ctx.sql, row.key_id, 'admin'), ctx.config.limiterTimeoutMs);
        carries = r?.carries === true;
      } catch (e) {
        ctx.log.warn('reading a refused key\'s scopes failed; answering the plain 403', errorFields(e));
      }
    }
    if (carries) throw errors.notAdmin();
  }
  return callerOf(row, scope, via);
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The credential of a request: its bearer key, else its console session cookie, else a 401. A
 * request authenticated by cookie must come from the console's own origin on every unsafe
 * method (a cross-site form or fetch carries the cookie too): else 403. Keys are unaffected.
 */
export function requireCredential(ctx: Context, event: H3Event): Credential {
  const authorization = event.req.headers.get('authorization');
  if (authorization !== null) {
    const key = bearerKey(authorization);
    if (!key) throw errors.unauthorized();
    return { hash: hashKey(key), via: 'key' };
  }
  const secret = sessionSecret(event);
  if (!secret) throw errors.unauthorized();
  if (!SAFE_METHODS.has(event.req.method) && event.req.headers.get('origin') !== publicOrigin(ctx)) {
    throw errors.crossOrigin();
  }
  return { hash: hashKey(secret), via: 'session' };
}

/** The origin (scheme://host[:port]) of KILN_PUBLIC_URL. */
export function publicOrigin(ctx: Context): string {
  return new URL(ctx.config.publicUrl).origin;
}

/** The client's address for the audit log (X-Forwarded-For only when KILN_TRUST_PROXY is set). */
export function clientIp(ctx: Context, event: H3Event): string | undefined {
  return getRequestIP(event, { xForwardedFor: ctx.config.trustProxy }) ?? undefined;
}

/** kiln.authorize_requests alone: scope, the key's own rpm and the endpoint bucket. */
export const authorizeOnly: AuthorizedCall<null, object> = authorizedCall(100, authorizeRequests<null>(false));

/** kiln.authorize_requests, with or without the usage body of each key's billing scope (GET /usage). */
export function authorizeRequests<P>(withUsage: boolean) {
  return ({ sql, config }: Context, items: Array<KeyRequest<P>>) => {
    const rpm = (b: Bucket) => (b === 'read' ? config.readRpm : b === 'transform' ? config.transformRpm : null);
    return authorizeRequestsSql(
      sql, items.map((i) => i.hash), items.map((i) => i.scope),
      items.map((i) => i.bucket), items.map((i) => rpm(i.bucket)), items.map(() => withUsage),
    ) as never;
  };
}

/** Counters for the benchmark report (mean batch size of the plain authorizations). */
export function authStats(ctx: Context) {
  return authorizeOnly(ctx).stats;
}

async function submit<P, X>(ctx: Context, call: AuthorizedCall<P, X>, req: KeyRequest<P>): Promise<AuthRow & X> {
  try {
    return await call(ctx).add(req, ctx.span);
  } catch (e) {
    if (isDataError(e) && call !== (authorizeOnly as unknown)) {
      // Run alone (a failed batch is retried per item), the call still hit a value it cannot
      // store: this request's 400 — once its key checks out. Anything else fails closed.
      ctx.log.warn('an authorized call hit a value that got past the checks before SQL', errorFields(e));
      callerOf(await submit(ctx, authorizeOnly, { ...req, payload: null }), req.scope);
      throw errors.invalid(UNSTORABLE_MESSAGE);
    }
    throw limiterFailed(ctx, e);
  }
}

/**
 * Applies a route's access rule to a request: the key, then `prepare`, then one SQL call that
 * authorizes and does the route's read or write. Throws the key's 401/403/429, `prepare`'s
 * error once the key checks out, or the limiter's 503.
 */
export async function authorizeRequest<P, X>(ctx: Context, event: H3Event, access: Access<P, X>): Promise<Authorized<P, X>> {
  const { hash, via } = requireCredential(ctx, event);
  let payload: P | typeof ALONE = access.call ? (null as P) : ALONE;
  if (access.prepare) {
    try {
      payload = await access.prepare(ctx, event);
    } catch (e) {
      await callerOrRefusal(ctx, await submit(ctx, authorizeOnly, { hash, scope: access.scope, bucket: access.bucket, payload: null }), access.scope, via);
      throw e;
    }
  }
  const auth = await authorizeKey(ctx, hash, access, payload, via);
  auth.caller.ip = clientIp(ctx, event);
  auth.caller.requestId = event.context.requestId;
  return auth;
}

/**
 * The SQL call of an access rule for a hashed key and its prepared payload (ALONE: the
 * authorization alone). Throws the key's 401/403/429 or the limiter's 503.
 */
export async function authorizeKey<P, X>(ctx: Context, hash: Buffer, access: Access<P, X>, payload: P | typeof ALONE, via: 'key' | 'session' = 'key'): Promise<Authorized<P, X>> {
  if (payload === ALONE || !access.call) {
    const caller = await callerOrRefusal(ctx, await submit(ctx, authorizeOnly, { hash, scope: access.scope, bucket: access.bucket, payload: null }), access.scope, via);
    return { caller, row: null, payload: payload === ALONE ? null : payload };
  }
  if (access.replicaRead && ctx.replica?.fresh()) {
    const auth = await submit(ctx, authorizeOnly, { hash, scope: access.scope, bucket: access.bucket, payload: null });
    const caller = await callerOrRefusal(ctx, auth, access.scope, via);
    const read = await access.replicaRead(ctx).add({ caller, payload }, ctx.span);
    return { caller, row: { ...auth, ...read } as AuthRow & X, payload };
  }
  const row = await submit(ctx, access.call, { hash, scope: access.scope, bucket: access.bucket, payload });
  return { caller: await callerOrRefusal(ctx, row, access.scope, via), row, payload };
}

/**
 * An MCP tool's access rule for a resolved identity: one request against the account's bucket
 * ("mcp:<account>" for reads, "transform:<account>" shared with REST). Fails closed.
 */
export async function authorizeMcp(ctx: Context, caller: Caller, bucket: Bucket): Promise<void> {
  if (!bucket) return;
  const [name, rpm] = bucket === 'read' ? ['mcp', ctx.config.readRpm] : ['transform', ctx.config.transformRpm];
  let retryAfter: number;
  try {
    const [row] = await withTimeout(
      consumeAccountRateLimit(ctx.sql, caller.accountId, name, rpm),
      ctx.config.limiterTimeoutMs,
    );
    retryAfter = Number(row!.retry);
  } catch (e) {
    throw limiterFailed(ctx, e);
  }
  if (retryAfter > 0) throw errors.rateLimited(retryAfter);
}
