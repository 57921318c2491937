// The console's header in Chromium (playwright-core), as a person sees it: at 1280 px it is one
// line with everything an admin signed in by SSO has in it (ten sections, the workspace
// switcher, API docs, Sign out), as tall as a key's header without the switcher; narrower, it
// drops the icons, then puts the sections on a row of their own, never scrolling sideways.
// Signed in through a real OpenID provider on loopback (test/_oidc.ts). Screenshots go to
// test/artifacts/console-header/.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { startProvider, type TestProvider } from './_oidc.ts';

const CHROMIUM = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.resolve(import.meta.dirname, 'artifacts', 'console-header');

let provider: TestProvider;
let srv: TestServer;
let browser: Browser;
let key: string;
let ssoContext: BrowserContext;
let sso: Page;
const problems: string[] = [];

interface Box { x: number; y: number; width: number; height: number }

async function newPage(width: number): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height: 800 }, colorScheme: 'light' });
  // The provider's development pages import a web font: nothing leaves the machine.
  await context.route((url) => url.hostname !== '127.0.0.1', (r) => r.abort());
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  page.on('console', (m) => {
    // The start-up check without a session (401) and the aborted font are expected.
    if (m.type() === 'error' && !/status of 401|ERR_FAILED/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  return { context, page };
}

/** The header's parts as boxes: the header, the brand, each section link, and each control at its end. */
async function headerBoxes(page: Page) {
  const box = async (sel: string) => (await page.locator(sel).boundingBox()) as Box;
  const links = await Promise.all((await page.locator('.topbar .nav a').all()).map(async (l) => ({ name: (await l.innerText()).trim(), ...((await l.boundingBox()) as Box) })));
  const ends = await Promise.all((await page.locator('.topbar-end a, .topbar-end select, .topbar-end button').all()).map(async (l) => (await l.boundingBox()) as Box));
  return { header: await box('.topbar'), brand: await box('.topbar .brand'), links, ends };
}

/** One line: every part's vertical middle within 2 px of the header's, nothing past its right edge, no two parts overlapping. */
function assertOneLine(b: Awaited<ReturnType<typeof headerBoxes>>, where: string) {
  const mid = b.header.y + b.header.height / 2;
  const parts = [b.brand, ...b.links, ...b.ends];
  for (const p of parts) {
    assert.ok(Math.abs(p.y + p.height / 2 - mid) <= 2, `${where}: a part at y ${p.y}–${p.y + p.height} is off the header's line (middle ${mid})`);
    assert.ok(p.x + p.width <= b.header.x + b.header.width + 0.5, `${where}: a part ends at ${p.x + p.width}, past the header (${b.header.width})`);
  }
  const sorted = [...parts].sort((p, q) => p.x - q.x);
  for (let i = 1; i < sorted.length; i++) assert.ok(sorted[i]!.x >= sorted[i - 1]!.x + sorted[i - 1]!.width - 0.5, `${where}: parts overlap at x ${sorted[i]!.x}`);
}

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: install it (apt-get install -y chromium) or set KILN_CHROMIUM`);
  fs.mkdirSync(SHOTS, { recursive: true });
  provider = await startProvider();
  srv = await startServer({
    config: {
      oidc: {
        issuer: provider.issuer, clientId: provider.clientId, clientSecret: provider.clientSecret,
        scopes: ['openid', 'email', 'profile'], allowedDomains: [], adminGroup: undefined,
      },
    },
  });
  provider.register([`${srv.origin}/auth/callback`]);
  // An admin with a workspace of a long name: the widest header there is.
  const admin = await createAccount(srv.db.sql, { email: 'ops@corp.test' });
  await srv.db.sql`select kiln.set_account_admin(${admin.id}, true)`;
  await srv.db.sql`select * from kiln.link_identity(${provider.issuer}, 'ops', ${admin.id}::uuid, null, 'ops@corp.test')`;
  await srv.db.sql`select * from kiln.create_workspace('Studio North, print and outdoor', ${admin.id})`;
  provider.users.set('ops', { email: 'ops@corp.test', email_verified: true });
  // A key of a plain user: no Admin section, no switcher.
  key = (await createKey(srv.db.sql, (await createAccount(srv.db.sql)).id)).key;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-gpu'],
  });
  ({ context: ssoContext, page: sso } = await newPage(1280));
  await sso.goto(`${srv.origin}/console/`);
  await sso.getByRole('link', { name: 'Sign in with SSO' }).click();
  await sso.locator('input[name="login"]').fill('ops');
  await sso.locator('input[name="password"]').fill('anything');
  await sso.getByRole('button', { name: 'Sign-in' }).click();
  await sso.getByRole('button', { name: 'Continue' }).click();
  await sso.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});

after(async () => {
  await browser?.close();
});

test('at 1280 px an admin\'s SSO header (10 sections, the workspace switcher, API docs, Sign out) is one line, as tall as a key\'s header without them', async () => {
  const nav = sso.getByRole('navigation', { name: 'Sections' });
  await nav.getByRole('link', { name: 'Admin', exact: true }).waitFor();
  const switcher = sso.getByRole('combobox', { name: 'Workspace' });
  await switcher.waitFor();
  // Into the workspace: its long name in the switcher.
  await switcher.selectOption({ label: 'Studio North, print and outdoor' });
  await sso.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  await sso.waitForLoadState('networkidle');
  const wide = await headerBoxes(sso);
  assert.equal(wide.links.length, 10, wide.links.map((l) => l.name).join(', '));
  assert.equal(wide.ends.length, 3, 'API docs, the switcher and Sign out');
  assertOneLine(wide, '1280 px, SSO');
  await sso.locator('.topbar').screenshot({ path: path.join(SHOTS, '01-sso-1280-header.png') });
  await sso.screenshot({ path: path.join(SHOTS, '01-sso-1280.png') });

  // A key's header (no Admin, no switcher) at the same width: the height of one line.
  const { context, page } = await newPage(1280);
  await page.goto(`${srv.origin}/console/`);
  await page.getByRole('textbox', { name: 'API key' }).fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  await page.waitForLoadState('networkidle');
  const plain = await headerBoxes(page);
  assertOneLine(plain, '1280 px, key');
  assert.ok(Math.abs(wide.header.height - plain.header.height) <= 1, `SSO header ${wide.header.height} px tall, a key's ${plain.header.height} px`);
  await page.locator('.topbar').screenshot({ path: path.join(SHOTS, '02-key-1280-header.png') });
  // Wider, the key's header (nine sections) has room for its icons.
  await page.setViewportSize({ width: 1600, height: 800 });
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  assertOneLine(await headerBoxes(page), '1600 px, key');
  assert.equal(await page.locator('.topbar .nav a svg').first().isVisible(), true, '1600 px: a key\'s header keeps its icons');
  await page.locator('.topbar').screenshot({ path: path.join(SHOTS, '02-key-1600-header.png') });
  await context.close();
});

test('wider, it keeps the icons; narrower, it gives them up, then puts the sections on a row of their own; nothing scrolls sideways or is cut off', async () => {
  const heights: number[] = [];
  for (const width of [1920, 1280, 1100, 1000, 820]) {
    await sso.setViewportSize({ width, height: 800 });
    // The fit runs in the frame after the resize.
    await sso.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
    const b = await headerBoxes(sso);
    heights.push(b.header.height);
    const [sw, cw] = await sso.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(sw <= cw, `${width} px: the page scrolls sideways (${sw} > ${cw})`);
    for (const l of b.links) assert.ok(l.x >= 0 && l.x + l.width <= cw, `${width} px: ${l.name} is cut off (${l.x}–${l.x + l.width})`);
    const icons = await sso.locator('.topbar .nav a svg').first().isVisible();
    await sso.locator('.topbar').screenshot({ path: path.join(SHOTS, `03-sso-${width}-header.png`) });
    const top = Math.max(b.brand.y + b.brand.height, ...b.ends.map((e) => e.y + e.height));
    const stacked = b.links.every((l) => l.y >= top);
    if (width === 1920) assert.equal(icons, true, '1920 px: room for the icons');
    if (width >= 1280) assertOneLine(b, `${width} px`);
    else if (!stacked) assertOneLine(b, `${width} px, not stacked`);
    else assert.equal(icons, false, `${width} px: stacked only once the icons are gone`);
    if (width === 820) assert.ok(stacked, '820 px: the sections on a row of their own, under the brand and the controls');
  }
  for (let i = 1; i < heights.length; i++) assert.ok(heights[i]! >= heights[i - 1]! - 1, `taller as it narrows: ${heights.join(', ')}`);
  assert.ok(heights[heights.length - 1]! > heights[0]!, heights.join(', '));
  await sso.setViewportSize({ width: 1280, height: 800 });
  await ssoContext.close();
});

test('the browser logged no error', () => {
  assert.deepEqual(problems, []);
});
