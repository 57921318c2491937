// The console's Keys and Admin sections in a real browser (Debian's Chromium, playwright-core)
// against the real server: an admin signs in with a key, creates a key (its secret shown once,
// copied with the button, working against the API), rotates it (the old secret stops), revokes it;
// then, as an admin, searches an account, changes its tier and budget (audited under the admin's
// key), revokes its keys, disables a model, reads each entry's batch markup, workspaces and health. Keys show their live
// secrets, and a key that may not rotate a stronger one is told the API's reason. A non-admin never
// sees the Admin section, and no page of theirs makes a request that fails (who is an admin comes
// from GET /me). axe finds nothing serious; screenshots go to test/artifacts/console-admin/.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

/**
 * Nothing matches `l`, once the page has re-rendered: what a click or an answer removes goes in a
 * render after the one the awaited element appeared in, so it is waited for (up to 5 s), then checked.
 */
async function none(l: Locator): Promise<void> {
  await l.first().waitFor({ state: 'detached', timeout: 5000 }).catch(() => {});
  assert.equal(await l.count(), 0);
}

const CHROMIUM = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.resolve(import.meta.dirname, 'artifacts', 'console-admin');
const AXE = fs.readFileSync(path.resolve(import.meta.dirname, '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

let srv: TestServer;
let adminKey: { id: string; key: string };
let userKey: string;
let target: { id: string; email: string };
let browser: Browser;
let context: BrowserContext;
let page: Page;
const requests: string[] = [];
const problems: string[] = [];
const tag = `t${Date.now().toString(36)}`;
/** Set while a test makes the API refuse on purpose. */
let expect403 = false;

function watch(p: Page) {
  p.on('request', (r) => requests.push(r.url()));
  p.on('console', (m) => {
    // The one expected refusal: the weaker key's rotate of a stronger one (its own test checks it).
    if (m.type() === 'error' && !(expect403 && /status of 403/.test(m.text()))) problems.push(`console: ${m.text()}`);
  });
  p.on('response', (r) => {
    if (r.status() >= 400 && !(expect403 && r.status() === 403)) problems.push(`response: ${r.status()} ${r.request().method()} ${r.url()}`);
  });
  p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
}

async function shot(name: string, p: Page = page) {
  await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

async function noSeriousViolations(where: string, p: Page = page) {
  await p.evaluate(AXE);
  const bad = await p.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
      .map((v: any) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n: any) => n.target.join(' ')).slice(0, 3) }));
  });
  assert.deepEqual(bad, [], `axe on ${where}`);
}

async function signIn(key: string, p: Page = page) {
  await p.goto(`${srv.origin}/console/`);
  await p.getByRole('textbox', { name: 'API key' }).fill(key);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

/** Polls `check` (which throws until it holds) for up to 5 s. */
async function eventually(check: () => Promise<void>) {
  const until = Date.now() + 5000;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > until) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function open(section: string) {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: section, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: section, exact: true }).waitFor();
}

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}`);
  fs.mkdirSync(SHOTS, { recursive: true });
  srv = await startServer();
  const admin = await createAccount(srv.db.sql, { email: `ops-${tag}@kiln.test`, tier: 'enterprise' });
  await srv.db.sql`select kiln.set_account_admin(${admin.id}, true)`;
  adminKey = await createKey(srv.db.sql, admin.id, { scopes: ['read', 'write', 'keys', 'admin'] });
  const user = await createAccount(srv.db.sql, { email: `someone-${tag}@kiln.test` });
  userKey = (await createKey(srv.db.sql, user.id)).key;
  // The account the admin looks after: some spend this period and two keys.
  target = await createAccount(srv.db.sql, { email: `buyer-${tag}@customer.test`, tier: 'legacy_free' });
  await srv.db.sql`select * from kiln.reserve_budget(${target.id}, null, null, 'local/sketch', 'api', 420000)`;
  await createKey(srv.db.sql, target.id);
  await createKey(srv.db.sql, target.id, { scopes: ['read'] });
  for (let i = 0; i < 4; i++) {
    const a = await createAccount(srv.db.sql, { email: `other${i}-${tag}@customer.test` });
    await srv.db.sql`select * from kiln.reserve_budget(${a.id}, null, null, 'local/sketch', 'api', ${String(1000 * (i + 1))}::bigint)`;
  }
  // Entries with a batch markup (docs/providers.md, "Model catalog"): one priced per image, one per token.
  const upsert = (m: Record<string, unknown>) => srv.db.sql`select kiln.upsert_model(${srv.db.sql.json(m as any)})`;
  await upsert({ id: 'local/batch-sketch', name: 'Batch Sketch (test)', category: 'image', provider: 'local',
    input_modalities: ['text'], output_modalities: ['image'], cost: { micros_per_image: 3000 }, markup: 2, batchMarkup: 1.25 });
  await upsert({ id: 'local/batch-coder', name: 'Batch Coder (test)', category: 'text', provider: 'local', input_modalities: ['text'], output_modalities: ['text'],
    cost: { input_micros_per_token: 0.1, output_micros_per_token: 0.4 }, maxOutputTokens: 1000, markup: 1.5, batchMarkup: 1.2 });
  const [ws] = await srv.db.sql`select * from kiln.create_workspace(${`Studio ${tag}`}, ${target.id})`;
  await srv.db.sql`select kiln.add_workspace_member(${ws!.id}, ${user.id}, 'member')`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-gpu', '--disable-quic', '--disable-sync'],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: 'light' });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: srv.origin });
  page = await context.newPage();
  page.setDefaultTimeout(30_000);
  watch(page);
});

after(async () => {
  await browser?.close();
});

test('an admin signs in: Keys and Admin are in the navigation', async () => {
  await signIn(adminKey.key);
  const nav = page.getByRole('navigation', { name: 'Sections' });
  await nav.getByRole('link', { name: 'Admin', exact: true }).waitFor();
  assert.equal(await nav.getByRole('link', { name: 'Keys', exact: true }).count(), 1);
});

test('keys: create (the secret shown once, copied by the button, working), rotate (the old secret stops), revoke (status changes)', async () => {
  await open('Keys');
  await page.getByRole('textbox', { name: 'Name' }).fill('CI deploy');
  await page.getByRole('checkbox', { name: /^keys/ }).check();
  await page.getByRole('textbox', { name: /Budget per period/ }).fill('5');
  await page.getByRole('combobox', { name: 'Expires' }).selectOption({ label: 'In 30 days' });
  await noSeriousViolations('the Keys section');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secretEl = page.locator('[data-secret]');
  await secretEl.waitFor();
  const secret = (await secretEl.innerText()).trim();
  assert.match(secret, /^kiln_live_[0-9A-Za-z]{40}$/);
  await page.getByRole('button', { name: 'Copy secret' }).click();
  await page.getByRole('button', { name: 'Copied' }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
  const row = page.locator('tr[data-key-id]', { hasText: 'CI deploy' });
  await row.waitFor();
  const text = await row.innerText();
  assert.match(text, /read, write, keys/);
  assert.match(text, /\$0 of \$5\.00/);
  assert.equal(await row.locator('[data-status]').getAttribute('data-status'), 'active');
  assert.ok(!text.includes(secret), 'the table shows the prefix, never the secret');
  assert.equal((await api(srv.base, secret, '/usage')).status, 200);
  await noSeriousViolations('the Keys section with a new secret');
  await shot('01-keys-created');
  // Shown once: gone when dismissed, and not there after a reload.
  await page.getByRole('button', { name: 'I stored it' }).click();
  await none(page.locator('[data-secret]'));
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
  await row.waitFor();
  assert.equal(await page.locator('[data-secret]').count(), 0);

  // Rotate without grace: the new secret works, the old one gets 401.
  await row.getByRole('button', { name: 'Rotate CI deploy' }).click();
  await page.getByRole('combobox', { name: 'Keep the old secret working for' }).selectOption({ label: 'None: the old secret stops now' });
  await shot('02-keys-rotate');
  await page.getByRole('button', { name: 'Rotate key' }).click();
  await page.getByRole('heading', { name: 'New secret for CI deploy' }).waitFor();
  let rotated = (await page.locator('[data-secret]').innerText()).trim();
  assert.match(rotated, /^kiln_live_/);
  assert.notEqual(rotated, secret);
  assert.equal((await api(srv.base, rotated, '/usage')).status, 200);
  assert.equal((await api(srv.base, secret, '/usage')).status, 401);
  await page.getByRole('button', { name: 'I stored it' }).click();
  assert.equal(await row.locator('.key-secrets').innerText(), '1 secret live');

  // Rotate with an hour's grace: the row says both secrets work, and until when the old one does.
  await row.getByRole('button', { name: 'Rotate CI deploy' }).click();
  await page.getByRole('combobox', { name: 'Keep the old secret working for' }).selectOption({ label: '1 hour' });
  const rotatedAt = Date.now();
  await page.getByRole('button', { name: 'Rotate key' }).click();
  await page.getByRole('heading', { name: 'New secret for CI deploy' }).waitFor();
  const graced = rotated;
  rotated = (await page.locator('[data-secret]').innerText()).trim();
  assert.equal((await api(srv.base, graced, '/usage')).status, 200, 'the old secret works in its grace');
  await page.getByRole('button', { name: 'I stored it' }).click();
  const secrets = row.locator('.key-secrets');
  await eventually(async () => assert.match(await secrets.innerText(), /^2 secrets live, the old one until \d{1,2}:\d{2}/));
  // The time shown is an hour on, to the minute, in the browser's zone (the page's own clock).
  const shown = (await secrets.innerText()).match(/until (.*)$/)![1]!;
  const expected = await page.evaluate((at) => [0, 1, 2].map((m) => new Date(at + 3_600_000 + m * 60_000).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })), rotatedAt - 60_000);
  assert.ok(expected.includes(shown), `${shown} in ${expected.join(', ')}`);
  await shot('03a-keys-two-secrets');

  // Revoke, confirmed first: the row says revoked and the secret gets 401.
  await row.getByRole('button', { name: 'Revoke CI deploy' }).click();
  await page.getByRole('group', { name: 'Confirm revoking CI deploy' }).waitFor();
  await shot('03-keys-revoke-confirm');
  await page.getByRole('button', { name: 'Revoke key' }).click();
  await row.locator('[data-status="revoked"]').waitFor();
  assert.equal(await row.getByRole('button', { name: /Rotate|Revoke/ }).count(), 0);
  assert.equal((await api(srv.base, rotated, '/usage')).status, 401);
  assert.equal(await row.locator('.key-secrets').count(), 0, 'a revoked key lists no live secret');
  await noSeriousViolations('the Keys section with a revoked key');
  await shot('04-keys-revoked');
});

test('keys: a key that lacks a scope of another key is refused rotating or revoking it, and told the API\'s reason', async () => {
  // A read,keys key of the admin's account, and a stronger read,write one beside it.
  const weak = await api(srv.base, adminKey.key, '/keys', { body: { name: 'Keeper', scopes: ['read', 'keys'] } });
  const strong = await api(srv.base, adminKey.key, '/keys', { body: { name: 'Deployer', scopes: ['read', 'write'] } });
  assert.equal(weak.status, 201, JSON.stringify(weak.body));
  assert.equal(strong.status, 201, JSON.stringify(strong.body));
  const p = await context.newPage();
  p.setDefaultTimeout(30_000);
  watch(p);
  await signIn(weak.body.key, p);
  await p.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Keys', exact: true }).click();
  const row = p.locator('tr[data-key-id]', { hasText: 'Deployer' });
  await row.waitFor();
  expect403 = true;
  try {
    for (const [act, confirm] of [['Rotate', 'Rotate key'], ['Revoke', 'Revoke key']] as const) {
      await row.getByRole('button', { name: `${act} Deployer` }).click();
      await p.getByRole('button', { name: confirm, exact: true }).click();
      const alert = p.locator('tr.row-panel [role="alert"]');
      await alert.waitFor();
      const text = await alert.innerText();
      assert.match(text, new RegExp(`^Not allowed to ${act.toLowerCase()} Deployer\\. This key has scopes the caller lacks \\(write\\)`), text);
      assert.doesNotMatch(text, /HTTP 403|forbidden\)/, 'the reason, not a status');
      await shot(`04a-keys-${act.toLowerCase()}-refused`, p);
      await p.getByRole('button', { name: 'Cancel' }).click();
    }
  } finally {
    expect403 = false;
  }
  const still = await api(srv.base, strong.body.key, '/usage');
  assert.equal(still.status, 200, 'nothing changed');
  await p.close();
});

test('admin: accounts sorted by spend, search an account, change its tier and budget (audited), revoke its keys', async () => {
  await open('Admin');
  const table = page.locator('table.accounts');
  await table.waitFor();
  const used = await table.locator('tbody tr td:nth-child(4)').allInnerTexts();
  const micros = used.map((t) => Math.round(Number(t.replace(/[$,]/g, '')) * 1e6));
  assert.deepEqual(micros, [...micros].sort((a, b) => b - a), 'sorted by spend');
  await noSeriousViolations('the Admin accounts table');
  await shot('05-admin-accounts');

  await page.getByRole('searchbox', { name: 'Search accounts by email' }).fill(`customer.test`);
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('table', { name: /matching customer\.test/ }).waitFor();
  assert.equal(await page.locator('table.accounts tbody tr').count(), 5);
  await shot('06-admin-search');
  await page.getByRole('link', { name: target.email }).click();
  await page.getByRole('heading', { level: 2, name: target.email }).waitFor();
  assert.match(await page.locator('.facts').first().innerText(), /\$0\.42/);
  await page.getByRole('combobox', { name: 'Tier' }).selectOption('enterprise');
  await page.getByRole('textbox', { name: /Budget per period/ }).fill('12.5');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
  const [acct] = await srv.db.sql`select tier, budget_micros from kiln_private.accounts where id = ${target.id}`;
  assert.equal(acct!.tier, 'enterprise');
  assert.equal(Number(acct!.budget_micros), 12_500_000);
  const audit = await srv.db.sql`select actor_type, actor_id from kiln_private.audit_log where target_id = ${target.id} and action = 'account.updated'`;
  assert.deepEqual(audit.map((r) => [r.actor_type, r.actor_id]), [['key', adminKey.id]]);
  assert.match(await page.locator('.facts').first().innerText(), /enterprise[\s\S]*\$12\.50/);
  await noSeriousViolations('an account page');
  await shot('07-admin-account-saved');

  await page.getByRole('button', { name: 'Revoke all keys' }).click();
  await page.getByRole('button', { name: 'Revoke 2 keys' }).click();
  await page.getByRole('status').filter({ hasText: 'Revoked 2 keys.' }).waitFor();
  const states = await page.locator('.card table [data-status]').evaluateAll((els) => els.map((e) => e.getAttribute('data-status')));
  assert.deepEqual(states, ['revoked', 'revoked']);
  await shot('08-admin-account-keys-revoked');
});

/** A row of the admin catalog as shown: its markup and batch markup cells. */
async function catalogRow(id: string) {
  const row = page.locator(`tr[data-model-id="${id}"]`);
  await row.waitFor();
  const headers = await page.locator('table.admin-table thead th').allInnerTexts();
  const cells = await row.locator('th, td').allInnerTexts();
  const at = (name: string) => cells[headers.findIndex((h) => h.trim().toLowerCase() === name)]!.trim();
  return { markup: at('markup'), batch: at('batch markup') };
}

test('admin: models show each entry\'s batch markup next to its markup, with the batch price', async () => {
  await page.goto(`${srv.origin}/console/#/admin/models`);
  await page.locator('tr[data-model-id="local/batch-sketch"] [data-batch-markup]').waitFor();
  const headers = (await page.locator('table.admin-table thead th').allInnerTexts()).map((h) => h.trim().toLowerCase());
  assert.equal(headers.indexOf('batch markup'), headers.indexOf('markup') + 1, `next to markup: ${headers.join(' | ')}`);
  const sketch = await catalogRow('local/batch-sketch');
  assert.equal(sketch.markup, '×2');
  assert.match(sketch.batch, /^×1\.25\s+billed \$0\.00375 \/ image$/);
  const coder = await catalogRow('local/batch-coder');
  assert.equal(coder.markup, '×1.5');
  assert.match(coder.batch, /^×1\.2\s+billed \$0\.12 \/ 1M input tokens · \$0\.48 \/ 1M output tokens$/);
  // An entry without one bills batch lines at its markup, and says so.
  assert.equal((await catalogRow('local/sketch')).batch, 'as markup');
  await shot('09a-admin-models-batch-markup');
  // Disabled, it leaves GET /models but the admin catalog still shows its batch markup.
  const row = page.locator('tr[data-model-id="local/batch-sketch"]');
  await row.getByRole('button', { name: 'Disable local/batch-sketch' }).click();
  await row.locator('[data-status="disabled"]').waitFor();
  assert.match((await catalogRow('local/batch-sketch')).batch, /^×1\.25\s+billed \$0\.00375 \/ image$/);
  await row.getByRole('button', { name: 'Enable local/batch-sketch' }).click();
  await row.locator('[data-status="enabled"]').waitFor();
  await row.locator('[data-batch-markup="1.25"]').waitFor();
  // The public Models page: the batch price beside the price.
  await page.goto(`${srv.origin}/console/#/models`);
  const card = page.locator('.models .model').filter({ hasText: 'local/batch-sketch' });
  await card.waitFor();
  assert.match(await card.innerText(), /Batch price\s+\$0\.00375 \/ image/);
  assert.equal(await page.locator('.models .model').filter({ hasText: 'local/sketch' }).first().locator('.batch-price').count(), 0);
  await shot('09b-models-batch-price');
});

test('admin: models (disable and enable, cost and price), workspaces and members, health', async () => {
  await page.goto(`${srv.origin}/console/#/admin/models`);
  const row = page.locator('tr[data-model-id="local/vector"]');
  await row.waitFor();
  await row.getByRole('button', { name: 'Disable local/vector' }).click();
  await row.locator('[data-status="disabled"]').waitFor();
  const pub = await api(srv.base, userKey, '/models');
  assert.ok(!pub.body.data.some((m: any) => m.id === 'local/vector'), 'gone from GET /models');
  await noSeriousViolations('the Admin models table');
  await shot('09-admin-models');
  await row.getByRole('button', { name: 'Enable local/vector' }).click();
  await row.locator('[data-status="enabled"]').waitFor();

  await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Workspaces' }).click();
  await page.getByRole('link', { name: `Studio ${tag}` }).click();
  await page.getByRole('table', { name: `Members of Studio ${tag}` }).waitFor();
  assert.equal(await page.locator('table tbody tr').count(), 2);
  await noSeriousViolations('a workspace page');
  await shot('10-admin-workspace');

  await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Health' }).click();
  await page.getByRole('heading', { level: 2, name: 'Job queue' }).waitFor();
  await noSeriousViolations('the Admin health page');
  await shot('11-admin-health');
});

test('dark scheme and phone width: no serious axe violation, no sideways scroll', async () => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto(`${srv.origin}/console/#/admin/accounts`);
  await page.locator('table.accounts').waitFor();
  await noSeriousViolations('Admin (dark)');
  await shot('12-admin-dark');
  await page.goto(`${srv.origin}/console/#/keys`);
  await page.locator('table.keys').waitFor();
  await noSeriousViolations('Keys (dark)');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 375, height: 800 });
  for (const hash of ['#/keys', '#/admin/accounts', `#/admin/accounts/${target.id}`, '#/admin/models', '#/admin/health']) {
    await page.goto(`${srv.origin}/console/${hash}`);
    await page.waitForFunction(() => !document.querySelector('.loading') && document.querySelector('h1'));
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    if (wide > 375) await shot(`13-phone-too-wide-${hash.replace(/[^a-z]+/g, '-')}`);
    const culprits = wide <= 375 ? [] : await page.evaluate(() => [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > 376 && getComputedStyle(e).position !== 'static')
      .slice(0, 5).map((e) => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`));
    assert.ok(wide <= 375, `${hash}: ${wide} px wide: ${culprits.join(', ')}`);
  }
  await shot('13-admin-phone');
  await page.setViewportSize({ width: 1280, height: 860 });
});

test('a non-admin sees no Admin section, even at its URL, and no page of theirs has a failed request or a console error', async () => {
  const p = await context.newPage();
  p.setDefaultTimeout(30_000);
  // This page's own record: every answer of 400 or more, every console error.
  const failed: string[] = [];
  p.on('response', (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.request().method()} ${r.url()}`); });
  p.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') failed.push(`console ${m.type()}: ${m.text()}`); });
  p.on('pageerror', (e) => failed.push(`pageerror: ${e.message}`));
  const asked: string[] = [];
  p.on('request', (r) => asked.push(new URL(r.url()).pathname));
  await signIn(userKey, p);
  // GET /me has answered once the page is idle.
  await p.waitForLoadState('networkidle');
  assert.ok(asked.includes('/api/v1/me'), asked.join(' '));
  const nav = p.getByRole('navigation', { name: 'Sections' });
  assert.equal(await nav.getByRole('link', { name: 'Admin', exact: true }).count(), 0);
  for (const section of ['Generations', 'Playground', 'Workflows', 'Webhooks', 'Models', 'Keys', 'Overview']) {
    await nav.getByRole('link', { name: section, exact: true }).click();
    await p.getByRole('heading', { level: 1, name: section, exact: true }).waitFor();
    await p.waitForFunction(() => !document.querySelector('.loading'));
  }
  // Keys: GET /me said the key lacks the scope, so the section says so without asking GET /keys.
  await nav.getByRole('link', { name: 'Keys', exact: true }).click();
  await p.getByText('This key cannot manage keys').waitFor();
  await p.goto(`${srv.origin}/console/#/admin/accounts`);
  await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  await p.waitForLoadState('networkidle');
  assert.equal(await p.locator('table.accounts').count(), 0);
  await shot('14-non-admin', p);
  assert.ok(!asked.some((u) => u.startsWith('/api/v1/admin/') || u === '/api/v1/keys'), asked.join(' '));
  assert.deepEqual(failed, []);
  await p.close();
});

test('no request left the origin, and the browser logged no unexpected error', async () => {
  const away = requests.filter((u) => !u.startsWith('data:') && !u.startsWith('blob:') && new URL(u).origin !== srv.origin);
  assert.deepEqual(away, []);
  assert.deepEqual(problems, []);
});
