// Development-only OIDC issuer: a persisted signing key under the data dir, a loopback node:http server
// publishing discovery + JWKS, and mintDevToken() for `kiln dev-token`. Refused unless KILN_DEV_ISSUER=1.
import { createServer } from 'node:http';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';

export const DEV_ISSUER_ENV = 'KILN_DEV_ISSUER';
export const DEFAULT_DEV_ISSUER_PORT = 8788;
const ALG = 'ES256';

export class DevIssuerDisabledError extends Error {
  constructor() {
    super(`the development issuer is disabled; set ${DEV_ISSUER_ENV}=1 to use it (never in production)`);
    this.name = 'DevIssuerDisabledError';
  }
}

/** `env`: what the caller decided (config.devIssuer), e.g. mount.ts's DEV_ENV; this module reads no environment. */
export function devIssuerEnabled(env: NodeJS.ProcessEnv): boolean {
  return env[DEV_ISSUER_ENV] === '1';
}

function assertEnabled(env: NodeJS.ProcessEnv) {
  if (!devIssuerEnabled(env)) throw new DevIssuerDisabledError();
}

export function devKeyPath(dataDir: string): string {
  return join(dataDir, 'dev-issuer', 'signing-key.json');
}

interface StoredKey {
  alg: string;
  kid: string;
  privateJwk: JWK;
}

/** Loads the dev signing key, generating and persisting it (mode 0600) on first use. */
async function readKey(file: string): Promise<StoredKey | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const stored = JSON.parse(text) as StoredKey;
  if (stored.alg !== ALG || !stored.kid || !stored.privateJwk?.d) throw new Error(`unrecognised dev issuer key file ${file}`);
  return stored;
}

export async function loadOrCreateDevKey(dataDir: string): Promise<StoredKey> {
  const file = devKeyPath(dataDir);
  const existing = await readKey(file);
  if (existing) return existing;
  const { privateKey } = await generateKeyPair(ALG, { extractable: true });
  const privateJwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(privateJwk);
  const stored: StoredKey = { alg: ALG, kid, privateJwk: { ...privateJwk, kid, alg: ALG } };
  await mkdir(join(dataDir, 'dev-issuer'), { recursive: true, mode: 0o700 });
  // Write aside, then link into place: link never overwrites, so concurrent first uses agree on one key.
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, JSON.stringify(stored, null, 2), { mode: 0o600 });
  try {
    await link(tmp, file);
    return stored;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return (await readKey(file))!;
  } finally {
    await unlink(tmp).catch(() => {});
  }
}

function publicJwk(key: StoredKey): JWK {
  const { d: _d, ...pub } = key.privateJwk;
  return { ...pub, kid: key.kid, alg: key.alg, use: 'sig' };
}

export function devIssuerUrl(port = DEFAULT_DEV_ISSUER_PORT, host = '127.0.0.1'): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export interface DevIssuer {
  issuer: string;
  jwksUrl: string;
  close(): Promise<void>;
}

/** Serves `/.well-known/openid-configuration` and `/jwks.json` on a loopback address. */
export async function startDevIssuer(opts: { dataDir: string; port?: number; host?: string; env: NodeJS.ProcessEnv }): Promise<DevIssuer> {
  assertEnabled(opts.env);
  const host = opts.host ?? '127.0.0.1';
  if (!/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(host)) throw new Error(`the development issuer only binds loopback addresses, not ${host}`);
  const key = await loadOrCreateDevKey(opts.dataDir);
  const jwks = JSON.stringify({ keys: [publicJwk(key)] });
  let discovery = '';

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const body = path === '/.well-known/openid-configuration' ? discovery : path === '/jwks.json' ? jwks : undefined;
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
    if (body === undefined) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300', 'access-control-allow-origin': '*' });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? DEFAULT_DEV_ISSUER_PORT, host, () => resolve());
  });
  const issuer = devIssuerUrl((server.address() as AddressInfo).port, host);
  discovery = JSON.stringify({
    issuer,
    jwks_uri: `${issuer}/jwks.json`,
    // Tokens come from `kiln dev-token`; there is no interactive authorization endpoint.
    response_types_supported: ['token'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [ALG],
    scopes_supported: ['openid', 'email', 'profile'],
    claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'email'],
  });
  return {
    issuer,
    jwksUrl: `${issuer}/jwks.json`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export interface MintDevTokenOptions {
  dataDir: string;
  sub: string;
  email?: string;
  /** The MCP URL. */
  audience: string;
  /** Must equal the running dev issuer's URL (and the server's OIDC_ISSUER). */
  issuer: string;
  /** Lifetime in seconds; default 1 hour. */
  ttl?: number;
  env: NodeJS.ProcessEnv;
}

/** Signs an access token with the persisted dev key (creating the key if needed). */
export async function mintDevToken(opts: MintDevTokenOptions): Promise<string> {
  assertEnabled(opts.env);
  if (!opts.sub) throw new Error('sub is required');
  const ttl = opts.ttl ?? 3600;
  if (!Number.isInteger(ttl) || ttl <= 0 || ttl > 30 * 24 * 3600) throw new Error('ttl must be a positive number of seconds (at most 30 days)');
  const key = await loadOrCreateDevKey(opts.dataDir);
  const signingKey = await importJWK(key.privateJwk, ALG);
  return new SignJWT({ ...(opts.email && { email: opts.email }), scope: 'openid email profile' })
    .setProtectedHeader({ alg: ALG, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(opts.issuer)
    .setSubject(opts.sub)
    .setAudience(opts.audience)
    .setIssuedAt()
    .setExpirationTime(`${ttl}s`)
    .sign(signingKey);
}
