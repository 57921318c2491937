// Single sign-on to the console: the OpenID Connect authorization code flow with PKCE (S256),
// state and nonce, through openid-client. The flow's secrets travel in a short-lived encrypted
// cookie (no database write before the provider has signed someone in); a completed transaction
// is claimed in SQL so it works once. Who may enter is kiln.sign_in's rule; a session is a hashed
// row made by kiln.create_session in the same transaction.

import { createHash, timingSafeEqual } from 'node:crypto';
import * as oidc from 'openid-client';
import type { Context } from '../context.ts';
import { claimSignIn, createSession, endSession, signIn } from '../db/sql/sessions.ts';
import { errorFields } from '../log.ts';
import { seal, SEALED_OVERHEAD, unseal } from '../internal/sealed.ts';
import { actAs } from './audit.ts';
import { generateSessionSecret, hashKey, SESSION_COOKIE } from './secrets.ts';

/** The cookie that carries one sign-in's PKCE verifier, state and nonce from /auth/login to /auth/callback. */
export const TRANSACTION_COOKIE = 'kiln_sso';
/** How long a sign-in may take at the provider. */
export const TRANSACTION_SECONDS = 600;

export type SsoConfig = NonNullable<Context['config']['oidc']>;

/** The redirect URI registered at the provider: KILN_PUBLIC_URL + /auth/callback. */
export function redirectUri(ctx: Context): string {
  return `${ctx.config.publicUrl}/auth/callback`;
}

/** Cookies get `Secure` when the public URL is https. */
export function secureCookies(ctx: Context): boolean {
  return ctx.config.publicUrl.startsWith('https:');
}

/** A Set-Cookie value: HttpOnly and SameSite=Lax always (the callback is a top-level GET from the provider). */
export function cookie(ctx: Context, name: string, value: string, path: string, maxAgeSeconds: number): string {
  return `${name}=${value}; Path=${path}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secureCookies(ctx) ? '; Secure' : ''}`;
}

export const clearTransactionCookie = (ctx: Context) => cookie(ctx, TRANSACTION_COOKIE, '', '/auth', 0);
export const clearSessionCookie = (ctx: Context) => cookie(ctx, SESSION_COOKIE, '', '/', 0);

// ------------------------------------------------------------------ the provider

const clients = new WeakMap<object, Promise<oidc.Configuration>>();

/** How long Kiln waits for the provider, in seconds: a page answers well within 10 s even when it hangs. */
const PROVIDER_TIMEOUT_S = 4;

/**
 * The provider's configuration, discovered once per process (a failed discovery is tried again on
 * the next sign-in). A client secret authenticates with client_secret_basic unless the provider
 * lists only client_secret_post; no secret: a public client, PKCE alone.
 */
function provider(ctx: Context, o: SsoConfig): Promise<oidc.Configuration> {
  let p = clients.get(ctx.config);
  if (!p) {
    const insecure = o.issuer.startsWith('http:');
    p = oidc.discovery(new URL(o.issuer), o.clientId, undefined, oidc.None(), {
      execute: insecure ? [oidc.allowInsecureRequests] : [],
      timeout: PROVIDER_TIMEOUT_S,
    }).then((found) => {
      const meta = found.serverMetadata();
      const methods = meta.token_endpoint_auth_methods_supported;
      const auth = !o.clientSecret ? oidc.None()
        : methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')
          ? oidc.ClientSecretPost(o.clientSecret) : oidc.ClientSecretBasic(o.clientSecret);
      const cfg = new oidc.Configuration(meta, o.clientId, o.clientSecret ? { client_secret: o.clientSecret } : undefined, auth);
      if (insecure) oidc.allowInsecureRequests(cfg);
      cfg.timeout = PROVIDER_TIMEOUT_S;
      return cfg;
    });
    p.catch(() => clients.delete(ctx.config));
    clients.set(ctx.config, p);
  }
  return p;
}

// ------------------------------------------------------------------ the transaction cookie

interface Transaction {
  /** state */
  s: string;
  /** nonce */
  n: string;
  /** PKCE code verifier */
  v: string;
  /** expiry, epoch seconds */
  e: number;
}

/** The transaction, sealed for the cookie (internal/sealed.ts, under 'sso-transaction/v1'), as base64url. */
async function sealTransaction(ctx: Context, tx: Transaction): Promise<string> {
  return (await seal(ctx, 'sso-transaction/v1', Buffer.from(JSON.stringify(tx), 'utf8'))).toString('base64url');
}

/** The transaction of the cookie's value, or null when absent, altered, or expired. */
async function openTransaction(ctx: Context, raw: string | undefined): Promise<Transaction | null> {
  if (!raw || raw.length > 2048 || !/^[A-Za-z0-9_-]+$/.test(raw)) return null;
  const buf = Buffer.from(raw, 'base64url');
  if (buf.length <= SEALED_OVERHEAD) return null;
  try {
    const tx = JSON.parse((await unseal(ctx, 'sso-transaction/v1', buf)).toString('utf8')) as Transaction;
    if (typeof tx.s !== 'string' || typeof tx.n !== 'string' || typeof tx.v !== 'string' || typeof tx.e !== 'number') return null;
    return tx.e > Date.now() / 1000 ? tx : null;
  } catch {
    return null;
  }
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

// ------------------------------------------------------------------ the flow

const answering = new WeakMap<object, { at: number; ok: Promise<boolean> }>();

/**
 * Whether the provider answers now: its discovery document within PROVIDER_TIMEOUT_S. The
 * configuration is discovered once, so without this /auth/login would send the browser to a
 * provider that is down. Sign-ins are people's clicks: each asks, except that concurrent ones share
 * a question and a "no" holds for 2 s (a provider that is down is not asked by every click).
 */
function providerAnswers(ctx: Context, o: SsoConfig): Promise<boolean> {
  const last = answering.get(ctx.config);
  if (last && (last.at === 0 || Date.now() - last.at < 2000)) return last.ok;
  const url = `${o.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  const entry = { at: 0, ok: Promise.resolve(false) };
  entry.ok = fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(PROVIDER_TIMEOUT_S * 1000) })
    .then(async (res) => { await res.body?.cancel(); return res.status === 200; }, () => false)
    .then((ok) => {
      if (ok) answering.delete(ctx.config);
      else entry.at = Date.now();
      return ok;
    });
  answering.set(ctx.config, entry);
  return entry.ok;
}

/** The provider could not be reached: the sign-in pages answer 503 and ask to try again. */
export class ProviderUnavailable extends Error {}

/** GET /auth/login: where to send the browser, and the transaction cookie to set. */
export async function beginSignIn(ctx: Context, o: SsoConfig): Promise<{ location: string; cookie: string }> {
  const cfg = await provider(ctx, o);
  if (!(await providerAnswers(ctx, o))) throw new ProviderUnavailable('the sign-in provider does not answer');
  const tx: Transaction = {
    s: oidc.randomState(),
    n: oidc.randomNonce(),
    v: oidc.randomPKCECodeVerifier(),
    e: Math.floor(Date.now() / 1000) + TRANSACTION_SECONDS,
  };
  const url = oidc.buildAuthorizationUrl(cfg, {
    redirect_uri: redirectUri(ctx),
    scope: o.scopes.join(' '),
    response_type: 'code',
    code_challenge: await oidc.calculatePKCECodeChallenge(tx.v),
    code_challenge_method: 'S256',
    state: tx.s,
    nonce: tx.n,
  });
  return { location: url.href, cookie: cookie(ctx, TRANSACTION_COOKIE, await sealTransaction(ctx, tx), '/auth', TRANSACTION_SECONDS) };
}

/** How a callback ended; every refusal names why, for the page the browser gets. */
export type SignInResult =
  | { outcome: 'signed_in'; cookie: string; accountId: string; provisioned: boolean }
  | { outcome: 'refused'; reason: 'not_allowed' | 'email_in_use'; email: string | null }
  | { outcome: 'invalid'; reason: 'no_transaction' | 'state_mismatch' | 'provider_error' | 'code_refused' | 'replayed'; detail?: string }
  | { outcome: 'unavailable' };

/**
 * GET /auth/callback: checks the transaction (cookie present, state equal), redeems the code with
 * the PKCE verifier (the provider refuses a code used before), validates the ID token (issuer,
 * audience, signature, expiry, nonce), then in one transaction: claims the sign-in (once), applies
 * kiln.sign_in's rule and, for a user, makes the session.
 */
export async function completeSignIn(ctx: Context, o: SsoConfig, callbackUrl: URL, transactionCookie: string | undefined,
  who: { ip?: string; requestId?: string; userAgent?: string | null }): Promise<SignInResult> {
  const tx = await openTransaction(ctx, transactionCookie);
  if (!tx) return { outcome: 'invalid', reason: 'no_transaction' };
  const params = callbackUrl.searchParams;
  const state = params.get('state');
  if (state === null || !same(state, tx.s)) return { outcome: 'invalid', reason: 'state_mismatch' };
  const error = params.get('error');
  if (error !== null) return { outcome: 'invalid', reason: 'provider_error', detail: (params.get('error_description') ?? error).slice(0, 300) };

  let cfg: oidc.Configuration;
  let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
  // The URL the provider redirected to, as registered: the public URL's, whatever proxy came between.
  const current = new URL(redirectUri(ctx));
  current.search = callbackUrl.search;
  try {
    cfg = await provider(ctx, o);
    tokens = await oidc.authorizationCodeGrant(cfg, current, { pkceCodeVerifier: tx.v, expectedState: tx.s, expectedNonce: tx.n, idTokenExpected: true });
  } catch (e) {
    if (e instanceof oidc.ResponseBodyError) {
      ctx.log.info('sso: the provider refused the code', { error: e.error });
      return { outcome: 'invalid', reason: 'code_refused', detail: e.error };
    }
    if (e instanceof oidc.AuthorizationResponseError) return { outcome: 'invalid', reason: 'provider_error', detail: e.error };
    ctx.log.warn('sso: the code exchange failed', errorFields(e));
    const code = (e as { code?: string }).code;
    // openid-client's checks of the answer (ID token, nonce, …) are refusals; a timeout (a provider
    // that hangs) and the rest are the provider being unreachable.
    if (typeof code === 'string' && code.startsWith('OAUTH_') && code !== 'OAUTH_TIMEOUT') return { outcome: 'invalid', reason: 'code_refused', detail: code };
    return { outcome: 'unavailable' };
  }

  const claims = tokens.claims()!;
  let email = typeof claims.email === 'string' ? claims.email : null;
  let verified: unknown = claims.email_verified;
  let groups: unknown = claims.groups;
  // Some providers keep the scopes' claims in UserInfo only (OIDC Core 5.4 with response_type=code).
  if ((email === null || (o.adminGroup && groups === undefined)) && cfg.serverMetadata().userinfo_endpoint && tokens.access_token) {
    try {
      const info = await oidc.fetchUserInfo(cfg, tokens.access_token, claims.sub);
      if (email === null && typeof info.email === 'string') {
        email = info.email;
        verified = info.email_verified;
      }
      if (groups === undefined) groups = info.groups;
    } catch (e) {
      ctx.log.warn('sso: userinfo failed', errorFields(e));
    }
  }
  const emailVerified = verified === true || verified === 'true';
  const adminByGroup = o.adminGroup ? Array.isArray(groups) && groups.includes(o.adminGroup) : null;
  const stateHash = createHash('sha256').update(tx.s).digest();

  return ctx.sql.begin(async (sql) => {
    await actAs(sql, { type: 'identity', id: `${claims.iss} ${claims.sub}`.slice(0, 200), ip: who.ip, requestId: who.requestId });
    const [claimed] = await claimSignIn(sql, stateHash, new Date(tx.e * 1000));
    if (!claimed!.ok) return { outcome: 'invalid', reason: 'replayed' } as const;
    const [row] = await signIn(sql, claims.iss, claims.sub, email, emailVerified, o.allowedDomains, adminByGroup);
    if (!row!.account_id) return { outcome: 'refused', reason: row!.outcome === 'email_in_use' ? 'email_in_use' : 'not_allowed', email } as const;
    const { secret, hash, displayPrefix } = generateSessionSecret();
    await createSession(sql, row!.account_id, hash, displayPrefix, ctx.config.sessionIdleSeconds, ctx.config.sessionLifetimeSeconds,
      `Console${who.userAgent ? `: ${who.userAgent}` : ''}`.slice(0, 200));
    return {
      outcome: 'signed_in',
      cookie: cookie(ctx, SESSION_COOKIE, secret, '/', ctx.config.sessionLifetimeSeconds),
      accountId: row!.account_id,
      provisioned: row!.outcome === 'provisioned',
    } as const;
  }) as Promise<SignInResult>;
}

/** POST /auth/logout: ends the session of this cookie secret (audited as session.deleted by it). */
export async function signOut(ctx: Context, secret: string, who: { ip?: string; requestId?: string }): Promise<boolean> {
  return ctx.sql.begin(async (sql) => {
    // kiln.end_session adds the session's id.
    await actAs(sql, { type: 'session', ip: who.ip, requestId: who.requestId });
    const [row] = await endSession(sql, hashKey(secret));
    return row!.ended;
  }) as Promise<boolean>;
}
