// MCP endpoint authentication: bearer-JWT failures (always 401 + WWW-Authenticate, never 500), RFC 9728
// metadata, JWKS caching/rotation, Origin gate, unlinked identities, and the development issuer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extractWWWAuthenticateParams } from '@modelcontextprotocol/client';
import { startMcpApp, startTestIssuer, type TestApp, type TestIssuer } from './_issuer.ts';
import { createTokenVerifier, AuthError } from '../src/mcp/auth.ts';
import { devKeyPath, loadOrCreateDevKey, mintDevToken, startDevIssuer, DevIssuerDisabledError } from '../src/mcp/dev-issuer.ts';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'auth-test', version: '1' } },
};
const CALL_ECHO = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } };

function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

/** Reads a JSON or single-event SSE body. */
async function rpcBody(res: Response): Promise<any> {
  const text = await res.text();
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return JSON.parse(text);
  const data = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).filter(Boolean);
  return JSON.parse(data.at(-1)!);
}

describe('MCP bearer authentication', () => {
  let iss: TestIssuer;
  let app: TestApp;
  let expectedMeta: string;

  before(async () => {
    iss = await startTestIssuer();
    app = await startMcpApp({ issuer: iss, linked: {} });
    iss.audience = app.mcpUrl;
    expectedMeta = `${app.origin}/.well-known/oauth-protected-resource/mcp`;
  });
  after(async () => {
    await app.close();
    await iss.close();
  });

  const aud = () => ({});

  async function expect401(res: Response, error?: string) {
    assert.equal(res.status, 401, `expected 401, got ${res.status}: ${await res.clone().text()}`);
    const params = extractWWWAuthenticateParams(res);
    assert.equal(params.resourceMetadataUrl?.href, expectedMeta);
    assert.equal(params.error, error);
    assert.match(res.headers.get('www-authenticate')!, /^Bearer /);
    const body = await res.json();
    assert.equal(typeof body.error, 'string');
  }

  test('no token → 401 with resource_metadata and no error attribute', async () => {
    await expect401(await post(app.mcpUrl, INIT));
  });

  test('valid token → initialize succeeds; JWKS and discovery fetched once', async () => {
    const token = await iss.sign(aud());
    for (let i = 0; i < 5; i++) {
      const res = await post(app.mcpUrl, INIT, { authorization: `Bearer ${token}` });
      assert.equal(res.status, 200);
      assert.equal((await rpcBody(res)).result.protocolVersion, '2025-11-25');
    }
    assert.deepEqual(iss.hits, { discovery: 1, jwks: 1 });
  });

  const cases: [string, () => Promise<string> | string, RegExp][] = [
    ['expired', () => iss.expired(aud()), /expired/],
    ['wrong audience', () => iss.otherAudience(), /aud claim/],
    ['wrong issuer', () => iss.otherIssuer(aud()), /iss claim/],
    ['bad signature', () => iss.badSignature(aud()), /signature/],
    ['unknown kid', () => iss.unknownKid(aud()), /no matching/],
    ['alg none', () => iss.algNone(aud()), /algorithm/],
    ['HS256 (algorithm confusion)', () => iss.hs256(aud()), /algorithm/],
    ['missing exp', () => iss.sign({ ...aud(), omitExp: true }), /exp claim invalid \(missing\)/],
    ['not yet valid (nbf)', () => iss.sign({ ...aud(), notBefore: 3600 }), /nbf claim/],
    ['garbage', () => 'not.a.jwt', /malformed/],
  ];
  for (const [name, make, why] of cases) {
    test(`${name} → 401 invalid_token`, async () => {
      const res = await post(app.mcpUrl, INIT, { authorization: `Bearer ${await make()}` });
      assert.match(extractWWWAuthenticateParams(res).errorDescription ?? '', why);
      await expect401(res, 'invalid_token');
    });
  }

  test('unknown kids do not refetch the JWKS inside the cooldown', async () => {
    const before = iss.hits.jwks;
    for (let i = 0; i < 3; i++) await expect401(await post(app.mcpUrl, INIT, { authorization: `Bearer ${await iss.unknownKid(aud())}` }), 'invalid_token');
    assert.equal(iss.hits.jwks, before);
    assert.equal(iss.hits.discovery, 1);
  });

  test('non-Bearer Authorization → 401 invalid_request', async () => {
    await expect401(await post(app.mcpUrl, INIT, { authorization: 'Basic dXNlcjpwYXNz' }), 'invalid_request');
  });

  test('token in the query string is refused even alongside a valid header', async () => {
    const token = await iss.sign(aud());
    await expect401(await post(`${app.mcpUrl}?access_token=${token}`, INIT), 'invalid_request');
    await expect401(await post(`${app.mcpUrl}?access_token=${token}`, INIT, { authorization: `Bearer ${token}` }), 'invalid_request');
  });

  test('protected resource metadata at both well-known URIs', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const res = await fetch(`${app.origin}${path}`);
      assert.equal(res.status, 200, path);
      const doc = await res.json();
      assert.equal(doc.resource, app.mcpUrl);
      assert.deepEqual(doc.authorization_servers, [iss.issuer]);
      assert.deepEqual(doc.scopes_supported, ['openid', 'email', 'profile']);
      assert.deepEqual(doc.bearer_methods_supported, ['header']);
    }
  });

  test('disallowed Origin → 403 before auth; allowed Origin gets CORS headers', async () => {
    const token = await iss.sign(aud());
    const bad = await post(app.mcpUrl, INIT, { origin: 'https://evil.example', authorization: `Bearer ${token}` });
    assert.equal(bad.status, 403);
    assert.equal((await post(app.mcpUrl, INIT, { origin: 'null' })).status, 403);
    const ok = await post(app.mcpUrl, INIT, { origin: app.origin, authorization: `Bearer ${token}` });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('access-control-allow-origin'), app.origin);
    const unauth = await post(app.mcpUrl, INIT, { origin: app.origin });
    assert.equal(unauth.status, 401);
    assert.match(unauth.headers.get('access-control-expose-headers')!, /www-authenticate/);
    const preflight = await fetch(app.mcpUrl, { method: 'OPTIONS', headers: { origin: app.origin, 'access-control-request-method': 'POST' } });
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers.get('access-control-allow-headers')!, /authorization/);
  });

  test('unlinked identity → tool error telling the user how to link; linked identity works', async () => {
    const token = await iss.sign({ ...aud(), sub: 'bob' });
    const res = await post(app.mcpUrl, CALL_ECHO, { authorization: `Bearer ${token}`, 'mcp-protocol-version': '2025-11-25' });
    assert.equal(res.status, 200);
    const { result } = await rpcBody(res);
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent.error.type, 'unauthorized');
    assert.match(result.content[0].text, new RegExp(`kiln identity link --user <USER_ID> --issuer ${iss.issuer} --subject bob`));

    const linked = await startMcpApp({ issuer: iss, linked: { [`${iss.issuer}|bob`]: 'acct-bob' } });
    try {
      const ok = await post(linked.mcpUrl, CALL_ECHO, { authorization: `Bearer ${await iss.sign({ audience: linked.mcpUrl, sub: 'bob' })}`, 'mcp-protocol-version': '2025-11-25' });
      const body = await rpcBody(ok);
      assert.deepEqual(body.result.structuredContent, { message: 'hi', accountId: 'acct-bob' });
    } finally {
      await linked.close();
    }
  });
});

describe('JWKS rotation and outages', () => {
  test('a new kid triggers one JWKS refresh (cooldown elapsed)', async () => {
    const iss = await startTestIssuer();
    const app = await startMcpApp({ issuer: iss, auth: { jwksCooldownMs: 0 }, linked: {} });
    try {
      const ok1 = await post(app.mcpUrl, INIT, { authorization: `Bearer ${await iss.sign({ audience: app.mcpUrl })}` });
      assert.equal(ok1.status, 200);
      assert.equal(iss.hits.jwks, 1);
      const kid = await iss.rotate();
      const ok2 = await post(app.mcpUrl, INIT, { authorization: `Bearer ${await iss.sign({ audience: app.mcpUrl, kid })}` });
      assert.equal(ok2.status, 200);
      assert.equal(iss.hits.jwks, 2);
    } finally {
      await app.close();
      await iss.close();
    }
  });

  test('issuer unreachable → 503 with Retry-After (never 500); discovery is retried once it is back', async () => {
    const first = await startTestIssuer();
    const port = Number(new URL(first.issuer).port);
    await first.close();
    const audience = 'http://127.0.0.1:1/mcp';
    const verifier = createTokenVerifier({ issuer: first.issuer, audience, timeoutMs: 1000 });
    await assert.rejects(verifier.verify(await first.sign({ audience })), (e: unknown) => e instanceof AuthError && e.code === 'unavailable');

    const app = await startMcpApp({ issuer: first, auth: { timeoutMs: 1000 } });
    try {
      const res = await post(app.mcpUrl, INIT, { authorization: `Bearer ${await first.sign({ audience: app.mcpUrl })}` });
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '5');
    } finally {
      await app.close();
    }

    const back = await startTestIssuer(audience, port);
    try {
      assert.equal((await verifier.verify(await back.sign())).identity.sub, 'alice');
    } finally {
      await back.close();
    }
  });

  test('an expired JWKS cache falls back to the last good keys while the JWKS is down', async () => {
    const iss = await startTestIssuer('http://127.0.0.1:1/mcp');
    const verifier = createTokenVerifier({ issuer: iss.issuer, audience: iss.audience, jwksCacheMaxAgeMs: 1, timeoutMs: 1000 });
    await verifier.verify(await iss.sign());
    await iss.close();
    await new Promise((r) => setTimeout(r, 5));
    assert.equal((await verifier.verify(await iss.sign())).identity.sub, 'alice');
  });

  test('configuration refuses none/HS* algorithms and plain-http issuers off loopback', () => {
    assert.throws(() => createTokenVerifier({ issuer: 'https://idp.example', audience: 'https://k.example/mcp', algorithms: ['HS256'] }));
    assert.throws(() => createTokenVerifier({ issuer: 'https://idp.example', audience: 'https://k.example/mcp', algorithms: ['none'] }));
    assert.throws(() => createTokenVerifier({ issuer: 'http://idp.example', audience: 'https://k.example/mcp' }));
  });
});

describe('development issuer', () => {
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'kiln-dev-issuer-'));
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  test('refused unless KILN_DEV_ISSUER=1', async () => {
    await assert.rejects(startDevIssuer({ dataDir, port: 0, env: {} }), DevIssuerDisabledError);
    await assert.rejects(mintDevToken({ dataDir, sub: 'u', audience: 'http://127.0.0.1/mcp', issuer: 'http://127.0.0.1:1', env: {} }), DevIssuerDisabledError);
    await assert.rejects(startDevIssuer({ dataDir, port: 0, host: '0.0.0.0', env: { KILN_DEV_ISSUER: '1' } }), /loopback/);
  });

  test('persists one key, serves discovery + JWKS, and its tokens verify', async () => {
    const env = { KILN_DEV_ISSUER: '1' };
    const dev = await startDevIssuer({ dataDir, port: 0, env });
    try {
      const mode = (await stat(devKeyPath(dataDir))).mode & 0o777;
      assert.equal(mode, 0o600);
      assert.equal((await loadOrCreateDevKey(dataDir)).kid, (await loadOrCreateDevKey(dataDir)).kid);
      const audience = 'http://127.0.0.1:3000/mcp';
      const token = await mintDevToken({ dataDir, sub: 'user-1', email: 'u1@example.test', audience, issuer: dev.issuer, ttl: 60, env });
      const verifier = createTokenVerifier({ issuer: dev.issuer, audience });
      const { identity } = await verifier.verify(token);
      assert.deepEqual(identity, { iss: dev.issuer, sub: 'user-1', email: 'u1@example.test' });
      await assert.rejects(createTokenVerifier({ issuer: dev.issuer, audience: 'http://127.0.0.1:3000/other' }).verify(token), AuthError);
    } finally {
      await dev.close();
    }
  });
});
