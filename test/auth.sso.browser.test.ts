// SSO in a real browser: Debian's Chromium (playwright-core) signs in to the console through a real
// OpenID provider on loopback (oidc-provider's development login and consent forms, test/_oidc.ts).
// A linked identity signs in as its user; an allowed domain is provisioned; anyone else gets the
// 403 page and nothing is created; a tampered state and a replayed code are refused; Sign out ends
// the session; a page of another origin cannot use the cookie. Screenshots go to test/artifacts/sso/.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { api, createAccount, onCleanup, startServer, type TestServer } from './_setup.ts';
import { startProvider, type TestProvider } from './_oidc.ts';

const CHROMIUM = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.resolve(import.meta.dirname, 'artifacts', 'sso');
const AXE = fs.readFileSync(path.resolve(import.meta.dirname, '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

let provider: TestProvider;
let srv: TestServer;
let browser: Browser;
let alice: { id: string };
/** Alice's browser, signed in by the second test; the replay and sign-out tests use it. */
let aliceContext: BrowserContext;
let alicePage: Page;
/** What Alice's browser sent to /auth/callback: the URL (code, state) and its Cookie header. */
let aliceCallback: { url: string; cookie: string } | null = null;
let bobContext: BrowserContext;
let bobPage: Page;
const problems: string[] = [];

async function newBrowser(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 760 }, colorScheme: 'light' });
  // The provider's development pages import a web font: nothing leaves the machine.
  await context.route((url) => url.hostname !== '127.0.0.1', (r) => r.abort());
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  page.on('console', (m) => {
    // Expected answers that Chromium reports as errors: the start-up check without a session
    // (401), the refusal pages (400, 403), the aborted font.
    if (m.type() === 'error' && !/status of (401|400|403)|ERR_FAILED/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  return { context, page };
}

/** axe-core's serious and critical findings on the page (evaluated over the DevTools protocol: the CSP forbids inline scripts). */
async function noSeriousViolations(page: Page, where: string) {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n: any) => n.target.join(' ')).slice(0, 3) }));
  });
  assert.deepEqual(found.filter((v: { impact: string }) => v.impact === 'serious' || v.impact === 'critical'), [], `axe on ${where}`);
}

async function shot(page: Page, name: string) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

/** From the console's sign-in page through the provider's login and consent forms. */
async function ssoSignIn(page: Page, login: string) {
  await page.goto(`${srv.origin}/console/`);
  await page.getByRole('link', { name: 'Sign in with SSO' }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('anything');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

/**
 * Calls `fn` with the URL the provider is about to send this browser back to (Kiln's callback),
 * which may return another URL to send it to instead. Playwright does not route a request reached
 * by a redirect, and the provider redirects twice after the consent form (to its resume endpoint,
 * then to the callback): the form's POST is routed, and both hops are made with the context's
 * cookies until the callback URL is known; the browser is then redirected there.
 */
async function onCallbackRedirect(context: BrowserContext, fn: (callback: URL) => Promise<URL | void> | URL | void) {
  await context.route(`${provider.issuer}/interaction/**`, async (route) => {
    if (route.request().method() !== 'POST' || !/prompt=consent/.test(route.request().postData() ?? '')) return route.continue();
    let res = await route.fetch({ maxRedirects: 0 });
    let location = res.headers()['location'];
    for (let i = 0; location && !location.startsWith(`${srv.origin}/auth/callback`) && i < 5; i++) {
      res = await context.request.get(new URL(location, provider.issuer).href, { maxRedirects: 0 });
      location = res.headers()['location'];
    }
    assert.ok(location?.startsWith(`${srv.origin}/auth/callback`), `the provider sends the browser back to Kiln, not ${location}`);
    const to = (await fn(new URL(location))) ?? new URL(location);
    return route.fulfill({ status: 303, headers: { location: to.href, 'cache-control': 'no-store' } });
  });
}

async function counts() {
  const [c] = await srv.db.sql`select (select count(*)::int from kiln_private.accounts) as accounts,
    (select count(*)::int from kiln_private.identities) as identities,
    (select count(*)::int from kiln_private.api_keys where kind = 'session') as sessions`;
  return c;
}

async function sessionCookie(context: BrowserContext): Promise<string | null> {
  const c = (await context.cookies(srv.origin)).find((x) => x.name === 'kiln_session');
  return c ? `kiln_session=${c.value}` : null;
}

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: install it (apt-get install -y chromium) or set KILN_CHROMIUM`);
  fs.mkdirSync(SHOTS, { recursive: true });
  provider = await startProvider();
  srv = await startServer({
    config: {
      oidc: {
        issuer: provider.issuer, clientId: provider.clientId, clientSecret: provider.clientSecret,
        scopes: ['openid', 'email', 'profile'], allowedDomains: ['allowed.test'], adminGroup: undefined,
      },
    },
  });
  provider.register([`${srv.origin}/auth/callback`]);
  // Alice has an account an operator linked to her identity (kiln identity link), and a workspace.
  alice = await createAccount(srv.db.sql, { email: 'alice@corp.test' });
  await srv.db.sql`select * from kiln.link_identity(${provider.issuer}, 'alice', ${alice.id}::uuid, null, 'alice@corp.test')`;
  await srv.db.sql`select * from kiln.create_workspace('Studio', ${alice.id})`;
  provider.users.set('alice', { email: 'alice@corp.test', email_verified: true });
  provider.users.set('bob', { email: 'bob@allowed.test', email_verified: true });
  provider.users.set('carol', { email: 'carol@elsewhere.test', email_verified: true });
  provider.users.set('dave', { email: 'dave@allowed.test', email_verified: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-gpu'],
  });
});

after(async () => {
  await browser?.close();
});

test('the sign-in page offers Sign in with SSO beside the API key form', async () => {
  const { context, page } = await newBrowser();
  await page.goto(`${srv.origin}/console/`);
  const sso = page.getByRole('link', { name: 'Sign in with SSO' });
  await sso.waitFor();
  assert.equal(await sso.getAttribute('href'), '/auth/login');
  await page.getByRole('textbox', { name: 'API key' }).waitFor();
  await noSeriousViolations(page, 'the sign-in page with SSO');
  await shot(page, '01-sign-in-with-sso');
  await context.close();
});

test('a linked identity signs in as its user: the console opens with the workspace switcher, and switching changes the scope', async () => {
  const before = await counts();
  ({ context: aliceContext, page: alicePage } = await newBrowser());
  await onCallbackRedirect(aliceContext, async (url) => {
    const tx = (await aliceContext.cookies(`${srv.origin}/auth/callback`)).find((c) => c.name === 'kiln_sso')!;
    aliceCallback = { url: url.href, cookie: `kiln_sso=${tx.value}` };
  });
  await ssoSignIn(alicePage, 'alice');
  await alicePage.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  assert.equal(new URL(alicePage.url()).pathname, '/console/');
  const switcher = alicePage.getByRole('combobox', { name: 'Workspace' });
  await switcher.waitFor();
  const options = await switcher.locator('option').allTextContents();
  assert.deepEqual(options, ['Personal', 'Studio']);
  assert.equal(await switcher.getAttribute('title'), 'alice@corp.test');
  await alicePage.getByRole('button', { name: 'Sign out' }).waitFor();
  const cookie = (await aliceContext.cookies(srv.origin)).find((c) => c.name === 'kiln_session')!;
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Lax');
  assert.equal(cookie.path, '/');
  assert.equal((await aliceContext.cookies(`${srv.origin}/auth/callback`)).find((c) => c.name === 'kiln_sso'), undefined, 'the transaction cookie is gone');
  await noSeriousViolations(alicePage, 'the console signed in by SSO');
  await shot(alicePage, '02-signed-in-personal');

  // No Authorization header: the page's requests carry the cookie alone.
  const auth = await alicePage.evaluate(async () => {
    const r = await fetch('/api/v1/usage');
    return { status: r.status, body: await r.json() };
  });
  assert.equal(auth.status, 200);
  assert.equal(auth.body.scope, 'personal');

  const switched = alicePage.waitForResponse((r) => r.url().endsWith('/api/v1/session/workspace') && r.request().method() === 'PUT');
  await switcher.selectOption({ label: 'Studio' });
  assert.equal((await switched).status(), 200);
  await alicePage.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  const usage = await alicePage.evaluate(async () => (await fetch('/api/v1/usage')).json());
  assert.equal(usage.scope, 'workspace');
  await alicePage.getByRole('combobox', { name: 'Workspace' }).focus();
  await shot(alicePage, '03-signed-in-workspace');

  const now = await counts();
  assert.equal(now.accounts, before.accounts, 'a linked identity creates no account');
  assert.equal(now.identities, before.identities);
  assert.equal(now.sessions, before.sessions + 1);
  const [s] = await srv.db.sql`select account_id from kiln_private.api_keys where kind = 'session' order by created_at desc limit 1`;
  assert.equal(s!.account_id, alice.id);
});

test('a verified email of an allowed domain is provisioned on the default tier and linked', async () => {
  ({ context: bobContext, page: bobPage } = await newBrowser());
  await ssoSignIn(bobPage, 'bob');
  await bobPage.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  const options = await bobPage.getByRole('combobox', { name: 'Workspace' }).locator('option').allTextContents();
  assert.deepEqual(options, ['Personal']);
  const [a] = await srv.db.sql`select a.tier, i.subject from kiln_private.accounts a join kiln_private.identities i on i.account_id = a.id
    where lower(a.email) = 'bob@allowed.test' and i.issuer = ${provider.issuer}`;
  assert.equal(a!.subject, 'bob');
  assert.equal(a!.tier, 'legacy_free');
});

test('anyone else gets the 403 page, and nothing is created: no account, no identity, no session', async () => {
  const before = await counts();
  const { context, page } = await newBrowser();
  const answer = page.waitForResponse((r) => r.url().startsWith(`${srv.origin}/auth/callback`));
  await ssoSignIn(page, 'carol');
  assert.equal((await answer).status(), 403);
  await page.getByRole('heading', { name: 'You may not sign in here' }).waitFor();
  assert.match(await page.locator('main').innerText(), /carol@elsewhere\.test/);
  await shot(page, '04-refused');
  assert.deepEqual(await counts(), before);
  assert.equal(await sessionCookie(context), null);
  const [r] = await srv.db.sql`select actor_type, details from kiln_private.audit_log where action = 'session.refused' order by at desc limit 1`;
  assert.equal(r!.actor_type, 'identity');
  assert.equal(r!.details.reason, 'domain_not_allowed');
  await context.close();
});

test('a tampered state is refused', async () => {
  const before = await counts();
  const { context, page } = await newBrowser();
  await onCallbackRedirect(context, (url) => {
    url.searchParams.set('state', `${url.searchParams.get('state')}x`);
    return url;
  });
  const answer = page.waitForResponse((r) => r.url().startsWith(`${srv.origin}/auth/callback`));
  await ssoSignIn(page, 'dave');
  assert.equal((await answer).status(), 400);
  await page.getByRole('heading', { name: 'Sign-in failed' }).waitFor();
  assert.match(await page.locator('main').innerText(), /state differs/);
  await shot(page, '05-tampered-state');
  assert.equal(await sessionCookie(context), null);
  assert.deepEqual(await counts(), before, 'no account for dave, though his domain is allowed');
  await context.close();
});

test('a replayed code is refused: again in the same browser, and with the transaction cookie it came with', async () => {
  assert.ok(aliceCallback, 'the sign-in test recorded its callback');
  const before = await counts();
  // The browser: its transaction cookie went with the first use.
  const again = alicePage.waitForResponse((r) => r.url().startsWith(`${srv.origin}/auth/callback`));
  await alicePage.goto(aliceCallback.url);
  assert.equal((await again).status(), 400);
  assert.match(await alicePage.locator('main').innerText(), /already finished/);
  // The same request as the browser's first, cookie included: the provider refuses the used code.
  const res = await fetch(aliceCallback.url, { redirect: 'manual', headers: { cookie: aliceCallback.cookie } });
  assert.equal(res.status, 400);
  assert.match(await res.text(), /code works once/);
  assert.ok(!res.headers.getSetCookie().some((c) => c.startsWith('kiln_session=kiln_sess_')));
  assert.deepEqual(await counts(), before);
  await alicePage.goto(`${srv.origin}/console/`);
  await alicePage.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});

test('a page of another origin cannot use the session cookie: its POST gets 403 forbidden', async () => {
  // Another port of the same host is the same site: SameSite=Lax sends the cookie, the Origin check refuses.
  const evil = http.createServer((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(`<!doctype html><form method="post" action="${srv.origin}/api/v1/workflows" enctype="text/plain">
      <input name="{&quot;name&quot;:&quot;x&quot;,&quot;graph&quot;:{&quot;nodes&quot;:[],&quot;edges&quot;:[]}, &quot;y&quot;" value="&quot;}">
      <button>Go</button></form>`);
  });
  await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', () => resolve()));
  onCleanup(() => new Promise((resolve) => evil.close(resolve)));
  const evilOrigin = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
  await bobPage.goto(evilOrigin);
  const answer = bobPage.waitForResponse((r) => r.url() === `${srv.origin}/api/v1/workflows`);
  await bobPage.getByRole('button', { name: 'Go' }).click();
  const res = await answer;
  assert.equal(res.status(), 403);
  assert.equal((await res.request().allHeaders()).cookie?.includes('kiln_session='), true, 'the browser did send the cookie');
  assert.equal((await res.json()).error.type, 'forbidden');
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.workflows`;
  assert.equal(n, 0);

  // The same with fetch and a foreign Origin header, and a foreign sign-out: refused, the session lives on.
  const cookie = (await sessionCookie(bobContext))!;
  const post = await api(srv.base, null, '/workflows', { body: { name: 'x', graph: { nodes: [], edges: [] } }, headers: { cookie, origin: evilOrigin } });
  assert.equal(post.status, 403);
  assert.equal(post.body.error.type, 'forbidden');
  const out = await fetch(`${srv.origin}/auth/logout`, { method: 'POST', headers: { cookie, origin: evilOrigin } });
  assert.equal(out.status, 403);
  assert.equal((await api(srv.base, null, '/usage', { headers: { cookie } })).status, 200);
});

test('a session that ends while the console is open (revoked here) sends it back to the sign-in page', async () => {
  await bobPage.goto(`${srv.origin}/console/#/overview`);
  await bobPage.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  const [acct] = await srv.db.sql`select id from kiln_private.accounts where lower(email) = 'bob@allowed.test'`;
  await srv.db.sql`update kiln_private.api_keys set revoked_at = now() where kind = 'session' and account_id = ${acct!.id} and revoked_at is null`;
  // The next request the console makes gets 401: opening a section makes one (the Overview's own
  // refresh may come first, so the navigation is done by the hash, not a click on a link that may be gone).
  await bobPage.evaluate(() => { location.hash = '#/generations'; });
  await bobPage.getByRole('link', { name: 'Sign in with SSO' }).waitFor();
  await bobContext.close();
});

test('Sign out ends the session: the cookie no longer works (401 on /api/v1/usage)', async () => {
  const cookie = (await sessionCookie(aliceContext))!;
  assert.ok(cookie);
  assert.equal((await api(srv.base, null, '/usage', { headers: { cookie } })).status, 200);
  const out = alicePage.waitForResponse((r) => r.url() === `${srv.origin}/auth/logout`);
  await alicePage.getByRole('button', { name: 'Sign out' }).click();
  assert.equal((await out).status(), 204);
  await alicePage.getByRole('link', { name: 'Sign in with SSO' }).waitFor();
  assert.equal(await sessionCookie(aliceContext), null, 'the cookie is cleared');
  assert.equal((await api(srv.base, null, '/usage', { headers: { cookie } })).status, 401);
  const [d] = await srv.db.sql`select actor_type, actor_id, target_id from kiln_private.audit_log where action = 'session.deleted' order by at desc limit 1`;
  assert.equal(d!.actor_type, 'session');
  assert.equal(d!.actor_id, d!.target_id, 'the session signs itself out');
  await shot(alicePage, '06-signed-out');
  await aliceContext.close();
  assert.deepEqual(problems, []);
});
