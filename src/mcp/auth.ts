// Bearer-JWT authentication for the MCP endpoint: jose verification against the issuer's cached remote
// JWKS (OIDC discovery once), plus the RFC 6750 challenge and RFC 9728 protected-resource metadata helpers.
import { createLocalJWKSet, createRemoteJWKSet, errors, jwtVerify } from 'jose';
import type { JWTHeaderParameters, JWTPayload, FlattenedJWSInput } from 'jose';
import { KEY_PREFIX } from '../auth/secrets.ts';

export interface Identity {
  iss: string;
  sub: string;
  email?: string;
  /** The provider's `email_verified` claim was true (only then may an email auto-link an account). */
  emailVerified?: boolean;
}

export interface AuthConfig {
  /** OIDC issuer URL; must equal the tokens' `iss` exactly. */
  issuer: string;
  /** JWKS URL; when absent it is discovered once from `<issuer>/.well-known/openid-configuration`. */
  jwksUrl?: string;
  /** Required `aud`: the MCP URL. */
  audience: string;
  /** Accepted JWS algorithms; `none` and HS* are refused even if listed. */
  algorithms?: string[];
  clockToleranceSec?: number;
  /** jose createRemoteJWKSet knobs (ms). */
  jwksCooldownMs?: number;
  jwksCacheMaxAgeMs?: number;
  timeoutMs?: number;
  /** Allow http:// issuer/JWKS URLs off loopback (never in production). */
  allowInsecureHttp?: boolean;
}

export const DEFAULT_ALGORITHMS = ['RS256', 'ES256', 'PS256', 'EdDSA'];
export const SCOPES_SUPPORTED = ['openid', 'email', 'profile'];
const MAX_TOKEN_LENGTH = 16 * 1024;

/** invalid_request / invalid_token / missing_token → 401; unavailable (issuer unreachable) → 503. */
export type AuthErrorCode = 'missing_token' | 'invalid_request' | 'invalid_token' | 'unavailable';

export class AuthError extends Error {
  constructor(readonly code: AuthErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AuthError';
  }
}

export interface TokenVerifier {
  /** Verifies a compact JWT; resolves the identity and claims or throws AuthError. */
  verify(token: string): Promise<{ identity: Identity; claims: JWTPayload }>;
  /** Extracts the bearer token from a request (header only) and verifies it. */
  authenticate(req: Request): Promise<Identity>;
}

function isLoopback(url: URL): boolean {
  return url.hostname === 'localhost' || url.hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
}

function checkUrl(value: string, what: string, allowInsecure: boolean): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`${what} is not a valid URL: ${value}`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (allowInsecure || isLoopback(url)))) {
    throw new TypeError(`${what} must use https (http is allowed on loopback only): ${value}`);
  }
  return url;
}

function checkAlgorithms(algs: string[]): string[] {
  for (const alg of algs) {
    if (alg.toLowerCase() === 'none' || /^HS/i.test(alg)) throw new TypeError(`algorithm ${alg} is not allowed for MCP tokens`);
  }
  if (algs.length === 0) throw new TypeError('at least one algorithm is required');
  return algs;
}

/** Loads `<issuer>/.well-known/openid-configuration` and returns its jwks_uri (issuer must match). */
export async function discoverJwksUri(issuer: string, timeoutMs = 5000): Promise<string> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  const res = await fetch(url, { headers: { accept: 'application/json' }, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
  if (res.status !== 200) throw new Error(`OIDC discovery ${url} answered ${res.status}`);
  const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
  if (doc.issuer !== issuer) throw new Error(`OIDC discovery issuer mismatch: expected ${issuer}, got ${String(doc.issuer)}`);
  if (typeof doc.jwks_uri !== 'string') throw new Error(`OIDC discovery ${url} has no jwks_uri`);
  return doc.jwks_uri;
}

function describe(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'token expired';
  if (err instanceof errors.JWTClaimValidationFailed) return `${err.claim} claim invalid (${err.reason.replace(/_/g, ' ')})`;
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'signature verification failed';
  if (err instanceof errors.JWKSNoMatchingKey) return 'no matching signing key';
  if (err instanceof errors.JOSEAlgNotAllowed) return 'algorithm not allowed';
  return 'malformed or unverifiable token';
}

export function createTokenVerifier(config: AuthConfig): TokenVerifier {
  const allowInsecure = config.allowInsecureHttp ?? false;
  checkUrl(config.issuer, 'OIDC issuer', allowInsecure);
  const issuer = config.issuer;
  checkUrl(config.audience, 'MCP URL (audience)', true);
  const algorithms = checkAlgorithms(config.algorithms ?? DEFAULT_ALGORITHMS);
  const audience = [...new Set([config.audience, config.audience.replace(/\/+$/, ''), config.audience.replace(/\/*$/, '/')])];
  const timeoutMs = config.timeoutMs ?? 5000;

  let remote: ReturnType<typeof createRemoteJWKSet> | undefined;
  let pending: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;

  // Resolves the remote set once (discovery is cached; a failed discovery is retried on the next call).
  function jwks(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (remote) return Promise.resolve(remote);
    pending ??= (async () => {
      const uri = config.jwksUrl ?? (await discoverJwksUri(issuer, timeoutMs));
      remote = createRemoteJWKSet(checkUrl(uri, 'JWKS URL', allowInsecure), {
        cooldownDuration: config.jwksCooldownMs ?? 30_000,
        cacheMaxAge: config.jwksCacheMaxAgeMs ?? 3_600_000,
        timeoutDuration: timeoutMs,
      });
      return remote;
    })().finally(() => {
      pending = undefined;
    });
    return pending;
  }

  // Key lookup. When a JWKS refresh fails, the last good key set keeps serving (refresh retried after 30 s);
  // with no key set at all the request gets 'unavailable' (503), never a 500.
  let staleUntil = 0;
  async function getKey(header: JWTHeaderParameters, token: FlattenedJWSInput) {
    let set: ReturnType<typeof createRemoteJWKSet>;
    try {
      set = await jwks();
    } catch (err) {
      throw new AuthError('unavailable', 'token issuer metadata is unavailable', { cause: err });
    }
    const stale = set.jwks();
    if (stale && Date.now() < staleUntil) return createLocalJWKSet(stale)(header, token);
    try {
      return await set(header, token);
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys || err instanceof errors.JOSENotSupported) throw err;
      if (!stale) throw new AuthError('unavailable', 'token signing keys are unavailable', { cause: err });
      staleUntil = Date.now() + 30_000;
      return createLocalJWKSet(stale)(header, token);
    }
  }

  async function verify(token: string) {
    if (token.length > MAX_TOKEN_LENGTH) throw new AuthError('invalid_token', 'token too large');
    try {
      const { payload } = await jwtVerify(token, getKey, {
        issuer,
        audience,
        algorithms,
        clockTolerance: config.clockToleranceSec ?? 30,
        requiredClaims: ['iss', 'sub', 'aud', 'exp'],
      });
      const identity: Identity = { iss: payload.iss!, sub: payload.sub! };
      if (typeof payload.email === 'string') identity.email = payload.email;
      if (payload.email_verified === true || payload.email_verified === 'true') identity.emailVerified = true;
      return { identity, claims: payload };
    } catch (err) {
      if (err instanceof AuthError) throw err;
      throw new AuthError('invalid_token', describe(err), { cause: err });
    }
  }

  async function authenticate(req: Request): Promise<Identity> {
    const url = new URL(req.url);
    if (url.searchParams.has('access_token')) throw new AuthError('invalid_request', 'access tokens are accepted in the Authorization header only');
    const header = req.headers.get('authorization');
    if (!header) throw new AuthError('missing_token', 'authorization required');
    const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
    if (!m) throw new AuthError('invalid_request', 'malformed Authorization header (expected Bearer token)');
    // A Kiln API key is for /api/v1: say so rather than that it is no JWT (docs/mcp.md).
    if (m[1]!.startsWith(KEY_PREFIX)) throw new AuthError('invalid_token', 'API keys are not accepted here; use an OAuth token');
    return (await verify(m[1]!)).identity;
  }

  return { verify, authenticate };
}

/** The RFC 9728 metadata URL for a resource: `<origin>/.well-known/oauth-protected-resource<path>`. */
export function resourceMetadataUrl(mcpUrl: string): string {
  const u = new URL(mcpUrl);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
  return `${u.origin}/.well-known/oauth-protected-resource${path}`;
}

/** Paths to mount the metadata document on: the bare well-known URI and the path-suffixed one. */
export function metadataPaths(mcpUrl: string): string[] {
  const suffixed = new URL(resourceMetadataUrl(mcpUrl)).pathname;
  return [...new Set(['/.well-known/oauth-protected-resource', suffixed])];
}

export function protectedResourceMetadata(mcpUrl: string, issuer: string) {
  return {
    resource: mcpUrl,
    authorization_servers: [issuer],
    scopes_supported: SCOPES_SUPPORTED,
    bearer_methods_supported: ['header'],
    resource_name: 'Kiln MCP',
  };
}

/** Web handler serving the metadata document (GET/HEAD, public CORS, cacheable). */
export function protectedResourceMetadataHandler(mcpUrl: string, issuer: string): (req: Request) => Response {
  const body = JSON.stringify(protectedResourceMetadata(mcpUrl, issuer));
  const cors = { 'access-control-allow-origin': '*', 'access-control-allow-methods': 'GET, HEAD, OPTIONS' };
  return (req) => {
    if (req.method === 'OPTIONS') return new Response(null, { status: 204, headers: { ...cors, 'access-control-max-age': '86400' } });
    if (req.method !== 'GET' && req.method !== 'HEAD') return new Response(null, { status: 405, headers: { allow: 'GET, HEAD, OPTIONS' } });
    return new Response(req.method === 'HEAD' ? null : body, {
      headers: { ...cors, 'content-type': 'application/json', 'cache-control': 'public, max-age=3600' },
    });
  };
}

const quote = (s: string) => s.replace(/[\\"\r\n]/g, ' ');

/** `WWW-Authenticate` value for a 401; no error attribute when the request carried no credentials (RFC 6750 §3.1). */
export function wwwAuthenticate(mcpUrl: string, err?: AuthError): string {
  const parts = [`resource_metadata="${resourceMetadataUrl(mcpUrl)}"`, `scope="${SCOPES_SUPPORTED.join(' ')}"`];
  if (err && err.code !== 'missing_token' && err.code !== 'unavailable') {
    parts.push(`error="${err.code}"`, `error_description="${quote(err.message)}"`);
  }
  return `Bearer ${parts.join(', ')}`;
}

/** 401 (or 503 when the issuer cannot be reached) with the Bearer challenge and an OAuth-style JSON body. */
export function authErrorResponse(mcpUrl: string, err: AuthError, extraHeaders: Record<string, string> = {}): Response {
  if (err.code === 'unavailable') {
    return Response.json(
      { error: 'temporarily_unavailable', error_description: err.message },
      { status: 503, headers: { 'retry-after': '5', ...extraHeaders } },
    );
  }
  const error = err.code === 'missing_token' ? 'invalid_token' : err.code;
  return Response.json(
    { error, error_description: err.message },
    { status: 401, headers: { 'www-authenticate': wwwAuthenticate(mcpUrl, err), 'cache-control': 'no-store', ...extraHeaders } },
  );
}
