// SSO over plain HTTP (no browser): a real OpenID provider on loopback (test/_oidc.ts), whose
// login and consent forms are walked with fetch. Without OIDC settings there is no /auth/login;
// the cookies are HttpOnly, SameSite=Lax and Secure under an https public URL; an idle session
// gets 401; GET /session and PUT /session/workspace answer a session and refuse a key.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { ConfigError, loadConfig, type Config } from '../src/config.ts';
import { api, createAccount, createKey, startServer, withEnv, type TestServer } from './_setup.ts';
import { providerSignIn, startProvider, type TestProvider } from './_oidc.ts';

let provider: TestProvider;
let srv: TestServer;
/** A second server on the same database whose public URL is https (behind a proxy, say). */
let https: TestServer;
let bare: TestServer;
/** A provider that keeps the scopes' claims in UserInfo, and a public client of it (no secret). */
let provider2: TestProvider;
let pub: TestServer;

const HTTPS_URL = 'https://kiln.example';

function oidcSettings(p: TestProvider): Config['oidc'] {
  return {
    issuer: p.issuer, clientId: p.clientId, clientSecret: p.clientSecret,
    scopes: ['openid', 'email', 'profile'], allowedDomains: ['allowed.test'], adminGroup: 'kiln-admins',
  };
}

/** The Set-Cookie headers of a response by cookie name. */
function setCookies(res: Response): Map<string, string> {
  return new Map(res.headers.getSetCookie().map((c) => [c.slice(0, c.indexOf('=')), c]));
}

/** /auth/login → the provider's forms → /auth/callback, over HTTP; the callback's answer. */
async function signIn(s: TestServer, login: string, opts: { tamper?: (u: URL) => void } = {}) {
  const start = await fetch(`${s.origin}/auth/login`, { redirect: 'manual' });
  assert.equal(start.status, 302);
  const tx = setCookies(start).get('kiln_sso')!;
  assert.ok(tx, 'the transaction cookie is set');
  const back = await providerSignIn(start.headers.get('location')!, login);
  opts.tamper?.(back);
  const callback = `${s.origin}${back.pathname}${back.search}`;
  const txCookie = tx.slice(0, tx.indexOf(';'));
  const res = await fetch(callback, { redirect: 'manual', headers: { cookie: txCookie } });
  const session = setCookies(res).get('kiln_session');
  return { res, tx, txCookie, callback, sessionHeader: session, cookie: session ? session.slice(0, session.indexOf(';')) : null };
}

before(async () => {
  provider = await startProvider();
  srv = await startServer({ config: { oidc: oidcSettings(provider) } });
  https = await startServer({ db: srv.db, config: { oidc: oidcSettings(provider), publicUrl: HTTPS_URL } });
  bare = await startServer({ db: srv.db, config: { oidc: undefined } });
  provider.register([`${srv.origin}/auth/callback`, `${HTTPS_URL}/auth/callback`]);
  provider2 = await startProvider({ clientId: 'kiln-public', clientSecret: null, claimsInIdToken: false });
  pub = await startServer({ db: srv.db, config: { oidc: { ...oidcSettings(provider2)!, clientSecret: undefined } } });
  provider2.register([`${pub.origin}/auth/callback`]);
  provider2.users.set('fay', { email: 'fay@allowed.test', email_verified: true, groups: ['kiln-admins'] });
  provider.users.set('dana', { email: 'dana@allowed.test', email_verified: true, groups: ['staff'] });
  provider.users.set('erin', { email: 'erin@allowed.test', email_verified: true, groups: ['kiln-admins'] });
});

test('without KILN_OIDC_ISSUER there is no /auth/login or /auth/callback (404); /auth/logout still clears the cookie', async () => {
  for (const path of ['/auth/login', '/auth/callback?code=x&state=y']) {
    const res = await fetch(`${bare.origin}${path}`, { redirect: 'manual' });
    assert.equal(res.status, 404, path);
    assert.equal((await res.json()).error.type, 'not_found');
  }
  const out = await fetch(`${bare.origin}/auth/logout`, { method: 'POST', headers: { origin: bare.origin } });
  assert.equal(out.status, 204);
  assert.match(setCookies(out).get('kiln_session')!, /Max-Age=0/);
});

test('/auth/login: a redirect to the provider with PKCE (S256), state and nonce, and an HttpOnly, SameSite=Lax transaction cookie', async () => {
  const res = await fetch(`${srv.origin}/auth/login`, { redirect: 'manual' });
  assert.equal(res.status, 302);
  const to = new URL(res.headers.get('location')!);
  assert.equal(to.origin, provider.issuer);
  assert.equal(to.searchParams.get('redirect_uri'), `${srv.origin}/auth/callback`);
  assert.equal(to.searchParams.get('code_challenge_method'), 'S256');
  assert.match(to.searchParams.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/);
  assert.ok(to.searchParams.get('state')!.length >= 32);
  assert.ok(to.searchParams.get('nonce')!.length >= 32);
  assert.equal(to.searchParams.get('scope'), 'openid email profile');
  const tx = setCookies(res).get('kiln_sso')!;
  assert.match(tx, /; Path=\/auth; Max-Age=600; HttpOnly; SameSite=Lax$/);
  // Encrypted: neither the state nor the verifier can be read from it.
  assert.ok(!tx.includes(to.searchParams.get('state')!));
});

test('a verified email of an allowed domain is provisioned; the session cookie works on /api/v1 and GET /session says who it is', async () => {
  const r = await signIn(srv, 'dana');
  assert.equal(r.res.status, 302);
  assert.equal(r.res.headers.get('location'), '/console/');
  assert.match(r.sessionHeader!, /^kiln_session=kiln_sess_[0-9A-Za-z]{40}; Path=\/; Max-Age=604800; HttpOnly; SameSite=Lax$/);
  assert.match(setCookies(r.res).get('kiln_sso')!, /Max-Age=0/, 'the transaction cookie is cleared');
  const usage = await api(srv.base, null, '/usage', { headers: { cookie: r.cookie! } });
  assert.equal(usage.status, 200);
  const me = await api(srv.base, null, '/session', { headers: { cookie: r.cookie! } });
  assert.equal(me.status, 200);
  assert.equal(me.body.user.email, 'dana@allowed.test');
  assert.equal(me.body.user.admin, false);
  assert.equal(me.body.workspaceId, null);
  assert.deepEqual(me.body.workspaces, []);
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.identities where issuer = ${provider.issuer} and subject = 'dana'`;
  assert.equal(n, 1);
  const [created] = await srv.db.sql`select actor_type, actor_id, ip::text as ip from kiln_private.audit_log where action = 'session.created' order by at desc limit 1`;
  assert.equal(created!.actor_type, 'session');
  assert.match(created!.ip, /^127\.0\.0\.1/);
  // The link the provisioning made is audited in the new user's scope, by the identity.
  const linked = await srv.db.sql`select actor_type, actor_id, details from kiln_private.audit_log where action = 'identity.linked' and scope_id = ${me.body.user.id}`;
  assert.deepEqual(linked.map((e) => [e.actor_type, e.details.subject, e.details.issuer]), [['identity', 'dana', provider.issuer]]);
});

test('KILN_OIDC_ADMIN_GROUP: a member of the group is an admin (the session gets the admin scope)', async () => {
  const r = await signIn(srv, 'erin');
  assert.equal(r.res.status, 302);
  const me = await api(srv.base, null, '/session', { headers: { cookie: r.cookie! } });
  assert.equal(me.body.user.admin, true);
  const [a] = await srv.db.sql`select admin_by_group from kiln_private.accounts where lower(email) = 'erin@allowed.test'`;
  assert.equal(a!.admin_by_group, true);
});

test('the callback works once: the same code again is refused (by the provider), a second code for the same transaction too (by Kiln), and a tampered state', async () => {
  const r = await signIn(srv, 'dana');
  assert.equal(r.res.status, 302);
  const again = await fetch(r.callback, { redirect: 'manual', headers: { cookie: r.txCookie } });
  assert.equal(again.status, 400);
  assert.equal(setCookies(again).get('kiln_session'), undefined);
  assert.match(await again.text(), /refused this sign-in&#39;s code \(invalid_grant\)/, 'the provider refuses a code used before');

  // Two codes for one transaction (its authorization URL followed twice): the second is refused
  // by Kiln, as the transaction was completed once.
  const start = await fetch(`${srv.origin}/auth/login`, { redirect: 'manual' });
  const tx = setCookies(start).get('kiln_sso')!;
  const txCookie = tx.slice(0, tx.indexOf(';'));
  const first = await providerSignIn(start.headers.get('location')!, 'dana');
  const second = await providerSignIn(start.headers.get('location')!, 'dana');
  assert.notEqual(first.searchParams.get('code'), second.searchParams.get('code'));
  const one = await fetch(`${srv.origin}/auth/callback${first.search}`, { redirect: 'manual', headers: { cookie: txCookie } });
  assert.equal(one.status, 302);
  const two = await fetch(`${srv.origin}/auth/callback${second.search}`, { redirect: 'manual', headers: { cookie: txCookie } });
  assert.equal(two.status, 400);
  assert.equal(setCookies(two).get('kiln_session'), undefined);
  assert.match(await two.text(), /already used/);

  const tampered = await signIn(srv, 'dana', { tamper: (u) => u.searchParams.set('state', u.searchParams.get('state')!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))) });
  assert.equal(tampered.res.status, 400);
  assert.equal(tampered.cookie, null);
  assert.match(await tampered.res.text(), /state differs/);
});

test('a public client (no secret, PKCE alone) signs in; email and groups come from UserInfo when the ID token lacks them', async () => {
  const r = await signIn(pub, 'fay');
  assert.equal(r.res.status, 302);
  const me = await api(pub.base, null, '/session', { headers: { cookie: r.cookie! } });
  assert.equal(me.body.user.email, 'fay@allowed.test');
  assert.equal(me.body.user.admin, true);
});

test('Secure cookies when the public URL is https', async () => {
  const r = await signIn(https, 'dana');
  assert.match(r.tx, /; Secure$/);
  assert.equal(r.res.status, 302);
  assert.match(r.sessionHeader!, /; HttpOnly; SameSite=Lax; Secure$/);
  // The session's unsafe requests must come from the https origin.
  const put = await api(https.base, null, '/session/workspace', { method: 'PUT', body: { workspaceId: null }, headers: { cookie: r.cookie!, origin: https.origin } });
  assert.equal(put.status, 403);
  const ok = await api(https.base, null, '/session/workspace', { method: 'PUT', body: { workspaceId: null }, headers: { cookie: r.cookie!, origin: HTTPS_URL } });
  assert.equal(ok.status, 200);
});

test('an idle session gets 401 (KILN_SESSION_IDLE after its last use), and GET /session names when it ends', async () => {
  const r = await signIn(srv, 'dana');
  const me = await api(srv.base, null, '/session', { headers: { cookie: r.cookie! } });
  const ends = Date.parse(me.body.expiresAt);
  assert.ok(Math.abs(ends - (Date.now() + 12 * 3600_000)) < 120_000, me.body.expiresAt);
  await srv.db.sql`update kiln_private.api_keys set last_used_at = now() - interval '12 hours 1 minute', created_at = now() - interval '13 hours'
    where kind = 'session' and id = (select id from kiln_private.api_keys where kind = 'session' order by created_at desc limit 1)`;
  const after = await api(srv.base, null, '/usage', { headers: { cookie: r.cookie! } });
  assert.equal(after.status, 401);
  assert.equal((await api(srv.base, null, '/session', { headers: { cookie: r.cookie! } })).status, 401);
});

test('PUT /session/workspace switches between personal and a workspace of the user (404 for another); API keys have no session (404)', async () => {
  const r = await signIn(srv, 'dana');
  const [acct] = await srv.db.sql`select id from kiln_private.accounts where lower(email) = 'dana@allowed.test'`;
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Dana Studio', ${acct!.id})`;
  const other = await createAccount(srv.db.sql);
  const [foreign] = await srv.db.sql`select * from kiln.create_workspace('Not Dana', ${other.id})`;
  const headers = { cookie: r.cookie!, origin: srv.origin };
  const me = await api(srv.base, null, '/session', { headers });
  assert.deepEqual(me.body.workspaces, [{ id: ws!.id, name: 'Dana Studio', role: 'owner' }]);
  const to = await api(srv.base, null, '/session/workspace', { method: 'PUT', body: { workspaceId: ws!.id }, headers });
  assert.equal(to.status, 200);
  assert.equal(to.body.workspaceId, ws!.id);
  const usage = await api(srv.base, null, '/usage', { headers });
  assert.equal(usage.body.scope, 'workspace', 'the next request acts in the workspace');
  assert.equal(usage.body.workspace_id, ws!.id);
  const no = await api(srv.base, null, '/session/workspace', { method: 'PUT', body: { workspaceId: foreign!.id }, headers });
  assert.equal(no.status, 404);
  const bad = await api(srv.base, null, '/session/workspace', { method: 'PUT', body: { workspaceId: 'nope' }, headers });
  assert.equal(bad.status, 400);
  const back = await api(srv.base, null, '/session/workspace', { method: 'PUT', body: { workspaceId: null }, headers });
  assert.equal(back.body.workspaceId, null);
  assert.equal((await api(srv.base, null, '/usage', { headers })).body.scope, 'personal');

  const { key } = await createKey(srv.db.sql, other.id);
  const k = await api(srv.base, key, '/session');
  assert.equal(k.status, 404);
  assert.equal((await api(srv.base, null, '/session')).status, 401);
});

test('the SSO settings: read once, refused when incomplete; an http issuer only outside production', () => {
  const base = { KILN_OIDC_ISSUER: 'https://id.example.com', KILN_OIDC_CLIENT_ID: 'kiln', NODE_ENV: undefined };
  const o = withEnv({ ...base, KILN_OIDC_ALLOWED_DOMAINS: 'Example.com, corp.test', KILN_SESSION_IDLE: '30m' }, () => loadConfig());
  assert.deepEqual(o.oidc, { issuer: 'https://id.example.com', clientId: 'kiln', clientSecret: undefined, scopes: ['openid', 'email', 'profile'],
    allowedDomains: ['example.com', 'corp.test'], adminGroup: undefined });
  assert.equal(o.sessionIdleSeconds, 1800);
  assert.equal(withEnv({ KILN_OIDC_ISSUER: undefined }, () => loadConfig()).oidc, undefined);
  assert.throws(() => withEnv({ ...base, KILN_OIDC_CLIENT_ID: undefined }, () => loadConfig()), ConfigError);
  assert.throws(() => withEnv({ ...base, KILN_OIDC_SCOPES: 'email profile' }, () => loadConfig()), ConfigError);
  assert.throws(() => withEnv({ ...base, KILN_SESSION_IDLE: '12' }, () => loadConfig()), ConfigError);
  const dev = { ...base, KILN_OIDC_ISSUER: 'http://127.0.0.1:9000' };
  assert.equal(withEnv(dev, () => loadConfig()).oidc?.issuer, 'http://127.0.0.1:9000');
  assert.throws(() => withEnv({ ...dev, NODE_ENV: 'production' }, () => loadConfig()), /https under NODE_ENV=production/);
});
