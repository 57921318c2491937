// MCP test fixtures: an OIDC issuer on 127.0.0.1 (discovery + JWKS with hit counters; mints good and broken
// tokens) and an h3 v2 app serving the real MCP route with dummy tools on a random loopback port.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { base64url, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import * as v from 'valibot';
import { toJsonSchema } from '@valibot/to-json-schema';
import { H3 } from 'h3';
import { toNodeHandler } from 'h3/node';
import { createMcpRoute, type McpRouteOptions, type ToolDef } from '../src/mcp/server.ts';
import { createTokenVerifier, metadataPaths, protectedResourceMetadataHandler, type AuthConfig } from '../src/mcp/auth.ts';

export interface SignOptions {
  claims?: JWTPayload;
  sub?: string;
  audience?: string;
  issuer?: string;
  /** Seconds from now; negative for an already-expired token. */
  expiresIn?: number;
  notBefore?: number;
  kid?: string;
  /** 'main' = the published key; 'other' = an unpublished key presented under the published kid. */
  key?: 'main' | 'other';
  omitExp?: boolean;
}

export interface TestIssuer {
  issuer: string;
  jwksUrl: string;
  kid: string;
  hits: { discovery: number; jwks: number };
  audience: string;
  /** 'hang': every request is accepted and never answered (an issuer that is down); null: back. */
  outage(mode: 'hang' | null): void;
  sign(opts?: SignOptions): Promise<string>;
  badSignature(opts?: SignOptions): Promise<string>;
  unknownKid(opts?: SignOptions): Promise<string>;
  algNone(opts?: SignOptions): string;
  hs256(opts?: SignOptions): Promise<string>;
  expired(opts?: SignOptions): Promise<string>;
  otherAudience(opts?: SignOptions): Promise<string>;
  otherIssuer(opts?: SignOptions): Promise<string>;
  /** Publishes an additional key (kid returned); sign with it via `sign({ kid })`. */
  rotate(): Promise<string>;
  close(): Promise<void>;
}

/** `audience` is the default `aud` of minted tokens (settable later via `.audience`). */
export async function startTestIssuer(audience = 'urn:unset', port = 0): Promise<TestIssuer> {
  const main = await generateKeyPair('RS256', { extractable: true });
  const other = await generateKeyPair('RS256', { extractable: true });
  const kid = 'test-key-1';
  const publicJwk = { ...(await exportJWK(main.publicKey)), kid, alg: 'RS256', use: 'sig' };
  const published = [publicJwk];
  const extraKeys = new Map<string, CryptoKey>();
  const hits = { discovery: 0, jwks: 0 };
  let issuer = '';

  // An outage: 'hang' accepts requests and never answers; null: normal.
  let down: 'hang' | null = null;
  const hung = new Set<import('node:http').ServerResponse>();
  const server: Server = createServer((req, res) => {
    if (down === 'hang') { hung.add(res); return; }
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/.well-known/openid-configuration') {
      hits.discovery++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks.json`, id_token_signing_alg_values_supported: ['RS256'] }));
    } else if (path === '/jwks.json') {
      hits.jwks++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: published }));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const payload = (o: SignOptions): JWTPayload => {
    const now = Math.floor(Date.now() / 1000);
    return {
      email: 'alice@example.test',
      ...o.claims,
      iss: o.issuer ?? issuer,
      sub: o.sub ?? 'alice',
      aud: o.audience ?? api.audience,
      iat: now,
      ...(o.notBefore !== undefined && { nbf: now + o.notBefore }),
      ...(!o.omitExp && { exp: now + (o.expiresIn ?? 300) }),
    };
  };
  const sign = async (o: SignOptions = {}, key: CryptoKey = o.key === 'other' ? other.privateKey : (extraKeys.get(o.kid ?? '') ?? main.privateKey)) =>
    new SignJWT(payload(o))
      .setProtectedHeader({ alg: key.algorithm.name === 'ECDSA' ? 'ES256' : 'RS256', kid: o.kid ?? kid, typ: 'JWT' })
      .sign(key);
  const enc = (v: unknown) => base64url.encode(JSON.stringify(v));

  const api: TestIssuer = {
    outage(mode) {
      down = mode;
      if (mode === null) { for (const r of hung) r.destroy(); hung.clear(); }
    },
    issuer,
    jwksUrl: `${issuer}/jwks.json`,
    kid,
    hits,
    audience,
    sign: (o) => sign(o),
    badSignature: (o = {}) => sign({ ...o, key: 'other' }),
    unknownKid: (o = {}) => sign({ ...o, kid: 'not-published' }),
    algNone: (o = {}) => `${enc({ alg: 'none', typ: 'JWT' })}.${enc(payload(o))}.`,
    hs256: async (o = {}) =>
      // Algorithm-confusion attempt: HMAC keyed with the published public key's modulus.
      new SignJWT(payload(o)).setProtectedHeader({ alg: 'HS256', kid }).sign(new TextEncoder().encode(String(publicJwk.n))),
    expired: (o = {}) => sign({ ...o, expiresIn: -3600 }),
    otherAudience: (o = {}) => sign({ ...o, audience: 'https://other.example/mcp' }),
    otherIssuer: (o = {}) => sign({ ...o, issuer: 'https://evil.example' }),
    rotate: async () => {
      const next = await generateKeyPair('ES256', { extractable: true });
      const nextKid = `test-key-${published.length + 1}`;
      extraKeys.set(nextKid, next.privateKey);
      published.push({ ...(await exportJWK(next.publicKey)), kid: nextKid, alg: 'ES256', use: 'sig' } as typeof publicJwk);
      return nextKid;
    },
    close: () => new Promise((resolve) => { down = null; for (const r of hung) r.destroy(); server.closeAllConnections(); server.close(() => resolve()); }),
  };
  return api;
}

// ---- MCP test app: the real route mounted in an h3 v2 app on 127.0.0.1 with dummy tools ----

export const echoTool: ToolDef = {
  name: 'echo',
  title: 'Echo',
  description: 'Echoes its message back with the caller account.',
  inputSchema: { type: 'object', properties: { message: { type: 'string', minLength: 1 } }, required: ['message'], additionalProperties: false },
  outputSchema: { type: 'object', properties: { message: { type: 'string' }, accountId: { type: 'string' } }, required: ['message', 'accountId'] },
  annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false, idempotentHint: true },
  async handler(ctx, args: { message: string }) {
    return { structuredContent: { message: args.message, accountId: ctx.accountId }, text: args.message };
  },
};

export const failingTool: ToolDef = {
  name: 'fail',
  description: 'Always fails with a business error (insufficient budget).',
  inputSchema: { type: 'object', properties: {} },
  outputSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
  annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
  async handler() {
    return { error: { type: 'budget_exhausted', message: 'The generation budget for this period is exhausted.' } };
  },
};

const CountInput = v.object({ n: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10)), 3) });
const CountOutput = v.object({ items: v.array(v.number()) });

/** Schemas from valibot (the project's single source): JSON Schema for clients, valibot parse for defaults. */
export const countTool: ToolDef = {
  name: 'count',
  description: 'Counts from 1 to n (default 3).',
  inputSchema: toJsonSchema(CountInput),
  outputSchema: toJsonSchema(CountOutput),
  annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
  parse: (args) => v.parse(CountInput, args),
  async handler(_ctx, args: v.InferOutput<typeof CountInput>) {
    const items = Array.from({ length: args.n }, (_, i) => i + 1);
    return { structuredContent: { items }, text: items.join(', ') };
  },
};

export const crashingTool: ToolDef = {
  name: 'crash',
  description: 'Throws an unexpected exception.',
  inputSchema: { type: 'object', properties: {} },
  outputSchema: { type: 'object', properties: {} },
  annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
  async handler() {
    throw new Error('database exploded: secret connection string');
  },
};

export interface TestApp {
  url: string;
  mcpUrl: string;
  origin: string;
  errors: unknown[];
  close(): Promise<void>;
}

/** Starts the route on a random loopback port; `issuer` enables real auth, otherwise auth is disabled (test-only). */
export async function startMcpApp(opts: {
  issuer?: Pick<TestIssuer, 'issuer'>;
  tools?: ToolDef[];
  linked?: Record<string, string>;
  route?: Partial<McpRouteOptions>;
  auth?: Partial<AuthConfig>;
}): Promise<TestApp> {
  const app = new H3();
  const errors: unknown[] = [];
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mcpUrl = `${origin}/mcp`;
  const iss = opts.issuer;
  const verifier = iss && createTokenVerifier({ issuer: iss.issuer, audience: mcpUrl, ...opts.auth });
  const route = createMcpRoute({
    tools: opts.tools ?? [echoTool, failingTool, crashingTool, countTool],
    mcpUrl,
    authenticate: verifier ? verifier.authenticate : undefined,
    testOnlyDisableAuth: verifier ? undefined : { iss: 'urn:kiln:test', sub: 'anonymous' },
    resolveAccount: async (id) => opts.linked?.[`${id.iss}|${id.sub}`] ?? (verifier ? null : 'acct-test'),
    onError: (err) => errors.push(err),
    ...opts.route,
  });
  app.all(new URL(mcpUrl).pathname, (event) => route(event.req));
  if (iss) {
    const meta = protectedResourceMetadataHandler(mcpUrl, iss.issuer);
    for (const p of metadataPaths(mcpUrl)) app.all(p, (event) => meta(event.req));
  }
  server.on('request', toNodeHandler(app));
  return {
    url: origin,
    mcpUrl,
    origin,
    errors,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
