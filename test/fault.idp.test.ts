// The identity provider down (docs/sso.md, "When the provider is down"): a real OpenID provider
// on loopback (test/_oidc.ts) made to hang, then to drop connections, then back. /auth/login and
// /auth/callback answer a 503 page within 10 s; existing console sessions keep working; the MCP
// endpoint keeps verifying tokens with the signing keys it has; sign-in works again, no restart.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import type { Config } from '../src/config.ts';
import { createTokenVerifier } from '../src/mcp/auth.ts';
import { startTestIssuer } from './_issuer.ts';
import { providerSignIn, startProvider, type TestProvider } from './_oidc.ts';
import { api, onCleanup, startServer, type TestServer } from './_setup.ts';

let provider: TestProvider;
let srv: TestServer;

function settings(p: TestProvider): Config['oidc'] {
  return { issuer: p.issuer, clientId: p.clientId, clientSecret: p.clientSecret, scopes: ['openid', 'email', 'profile'], allowedDomains: ['allowed.test'], adminGroup: undefined };
}

const cookieOf = (res: Response, name: string) => {
  const c = res.headers.getSetCookie().find((x) => x.startsWith(`${name}=`));
  return c ? c.slice(0, c.indexOf(';')) : null;
};

/** /auth/login → the provider's forms; the callback URL on Kiln and the transaction cookie, not yet followed. */
async function startSignIn(login: string) {
  const start = await fetch(`${srv.origin}/auth/login`, { redirect: 'manual' });
  assert.equal(start.status, 302);
  const back = await providerSignIn(start.headers.get('location')!, login);
  return { callback: `${srv.origin}${back.pathname}${back.search}`, tx: cookieOf(start, 'kiln_sso')! };
}

async function timed(url: string, init: RequestInit = {}) {
  const t0 = Date.now();
  const res = await fetch(url, { redirect: 'manual', ...init });
  const text = await res.text();
  return { res, text, ms: Date.now() - t0 };
}

before(async () => {
  provider = await startProvider();
  srv = await startServer({ config: { oidc: settings(provider) } });
  provider.register([`${srv.origin}/auth/callback`]);
  provider.users.set('gale', { email: 'gale@allowed.test', email_verified: true });
});

test('the provider hangs or drops connections: login and callback answer 503 within 10 s, sessions keep working, and sign-in works again once it is back', async () => {
  // A session made while the provider was up, and a sign-in left half-way (code in hand).
  const first = await startSignIn('gale');
  const done = await fetch(first.callback, { redirect: 'manual', headers: { cookie: first.tx } });
  assert.equal(done.status, 302);
  const session = cookieOf(done, 'kiln_session')!;
  assert.ok(session);
  const halfway = await startSignIn('gale');

  for (const mode of ['hang', 'reset'] as const) {
    provider.outage(mode);
    try {
      const login = await timed(`${srv.origin}/auth/login`);
      assert.equal(login.res.status, 503, `${mode}: /auth/login`);
      assert.ok(login.ms < 10_000, `${mode}: /auth/login answered in ${login.ms} ms`);
      assert.match(login.text, /Sign-in unavailable[\s\S]*Try again/);
      assert.equal(login.res.headers.get('location'), null, 'not sent to a provider that is down');

      const cb = await timed(halfway.callback, { headers: { cookie: halfway.tx } });
      assert.equal(cb.res.status, 503, `${mode}: /auth/callback`);
      assert.ok(cb.ms < 10_000, `${mode}: /auth/callback answered in ${cb.ms} ms`);
      assert.match(cb.text, /Sign-in unavailable/);

      // The console's session does not need the provider.
      const usage = await api(srv.base, null, '/usage', { headers: { cookie: session } });
      assert.equal(usage.status, 200, `${mode}: an existing session`);
    } finally {
      provider.outage(null);
    }
  }

  // Back: sign-in works with no restart (a refusal is remembered for 2 s, so a person's next try works).
  for (let i = 0; ; i++) {
    const probe = await fetch(`${srv.origin}/auth/login`, { redirect: 'manual' });
    await probe.body?.cancel();
    if (probe.status === 302) break;
    assert.ok(i < 20, 'sign-in is offered again within 10 s of the provider\'s return');
    await new Promise((r) => setTimeout(r, 500));
  }
  const again = await startSignIn('gale');
  const ok = await fetch(again.callback, { redirect: 'manual', headers: { cookie: again.tx } });
  assert.equal(ok.status, 302);
  assert.ok(cookieOf(ok, 'kiln_session'));
});

test('MCP tokens keep verifying with the cached signing keys while the issuer hangs, past the cache age', async () => {
  const iss = await startTestIssuer('https://kiln.example/mcp');
  onCleanup(() => iss.close());
  const verifier = createTokenVerifier({ issuer: iss.issuer, audience: 'https://kiln.example/mcp', allowInsecureHttp: true, jwksCacheMaxAgeMs: 200, timeoutMs: 1000 });
  assert.equal((await verifier.verify(await iss.sign({ sub: 'agent' }))).identity.sub, 'agent');
  const fetched = iss.hits.jwks;
  iss.outage('hang');
  try {
    await new Promise((r) => setTimeout(r, 300)); // past the cache age: the next verify asks again
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      const { identity } = await verifier.verify(await iss.sign({ sub: `agent-${i}` }));
      assert.equal(identity.sub, `agent-${i}`);
      assert.ok(Date.now() - t0 < 5000);
    }
  } finally {
    iss.outage(null);
  }
  assert.equal((await verifier.verify(await iss.sign({ sub: 'after' }))).identity.sub, 'after');
  assert.ok(iss.hits.jwks >= fetched);
});

test('KILN_OIDC_JWKS_CACHE: one hour unless set', async () => {
  const { loadConfig } = await import('../src/config.ts');
  const { withEnv } = await import('./_setup.ts');
  assert.equal(withEnv({ KILN_OIDC_JWKS_CACHE: undefined }, loadConfig).oidcJwksCacheSeconds, 3600);
  assert.equal(withEnv({ KILN_OIDC_JWKS_CACHE: '6h' }, loadConfig).oidcJwksCacheSeconds, 21_600);
});
