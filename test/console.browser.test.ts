// The console in a real browser: Debian's Chromium driven by playwright-core against the real
// server (real Postgres, a real worker, the local provider), one browser for the whole file. Every
// request the page makes is recorded (none may leave Kiln's origin), every console message and
// page error too (none may be an error), and each step saves a screenshot under test/artifacts/.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { startTestWorker } from './_generations.ts';
import { saveWorkflow } from './_workflows.ts';
import { startReceiver, verify, type Receiver } from './_webhooks.ts';

const CHROMIUM = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.resolve(import.meta.dirname, 'artifacts', 'console');
const AXE = fs.readFileSync(path.resolve(import.meta.dirname, '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
const SECTIONS = ['Overview', 'Generations', 'Playground', 'Workflows', 'Webhooks', 'Models'];

let srv: TestServer;
let key: string;
/** A key of the same account bound to its Team workspace (the phone signs in with it). */
let wsKey: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let workflowId: string;
let receiver: Receiver;
const requests: string[] = [];
const problems: string[] = [];

function watch(p: Page) {
  p.on('request', (r) => requests.push(r.url()));
  p.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
}

async function shot(name: string, p: Page = page) {
  await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

async function open(section: string) {
  await page.getByRole('navigation').getByRole('link', { name: section, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: section, exact: true }).waitFor();
}

/** axe-core in the page (evaluated over the DevTools protocol: the page's CSP forbids inline scripts, rightly). */
async function axe(p: Page = page): Promise<Array<{ id: string; impact: string; nodes: number; help: string }>> {
  await p.evaluate(AXE);
  return p.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help, targets: v.nodes.map((n: any) => n.target.join(' ')).slice(0, 3) }));
  });
}

async function noSeriousViolations(where: string, p: Page = page) {
  const bad = (await axe(p)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad, [], `axe on ${where}`);
}

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: install it (apt-get install -y chromium) or set KILN_CHROMIUM`);
  fs.mkdirSync(SHOTS, { recursive: true });
  // Webhooks go to a receiver on loopback (allowed for tests only), never off the machine.
  receiver = await startReceiver('/kiln-hooks');
  srv = await startServer({ config: { webhookAllowPrivate: true } });
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  key = (await createKey(srv.db.sql, a.id)).key;
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Studio', ${a.id})`;
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', 5000000, true)`;
  wsKey = (await createKey(srv.db.sql, a.id, { workspaceId: ws.id })).key;
  // An image model slow enough that a run's nodes are seen running before they complete.
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/slow-sketch', name: 'Slow Sketch (test)', category: 'image', provider: 'local', upstream: { delayMs: 1500 },
    supports_image_input: true, input_modalities: ['text', 'image'], output_modalities: ['image'], cost: { micros_per_image: 2500 }, markup: 1,
  } as any)})`;
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/slow-coder', name: 'Slow Coder (test)', category: 'text', provider: 'local', upstream: { delayMs: 1500 },
    supports_image_input: true, input_modalities: ['text', 'image'], output_modalities: ['text'],
    cost: { input_micros_per_token: 0.1, output_micros_per_token: 0.5 }, maxOutputTokens: 1000, markup: 1,
  } as any)})`;
  workflowId = await saveWorkflow(srv, a.id, {
    nodes: [
      { id: 'brief', kind: 'text', text: 'Autumn sale, 30% off' },
      { id: 'hero-prompt', kind: 'prompt', output: 'image', prompt: 'Hero image for the brief', model: 'local/slow-sketch', aspectRatio: '16:9' },
      { id: 'hero', kind: 'output', label: 'Hero' },
      { id: 'page-prompt', kind: 'prompt', output: 'code', targetLanguage: 'tsx', prompt: 'Landing section using the hero image', model: 'local/slow-coder' },
      { id: 'landing', kind: 'output', label: 'Landing section' },
    ],
    edges: [
      { from: 'brief', to: 'hero-prompt' }, { from: 'hero-prompt', to: 'hero' },
      { from: 'hero', to: 'page-prompt' }, { from: 'brief', to: 'page-prompt' }, { from: 'page-prompt', to: 'landing' },
    ],
  }, 'Autumn campaign');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-gpu', '--disable-quic', '--disable-sync'],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: 'light' });
  page = await context.newPage();
  page.setDefaultTimeout(30_000);
  watch(page);
});

after(async () => {
  await browser?.close();
});

test('/ redirects to /console/, which is served with a strict CSP and at most 150 KB of gzipped JavaScript', async () => {
  const root = await fetch(`${srv.origin}/`, { redirect: 'manual' });
  assert.equal(root.status, 302);
  assert.equal(root.headers.get('location'), '/console/');
  const res = await fetch(`${srv.origin}/console/`);
  assert.equal(res.status, 200);
  const csp = res.headers.get('content-security-policy') ?? '';
  assert.match(csp, /(^|; )script-src 'self'(;|$)/);
  assert.match(csp, /(^|; )connect-src 'self'(;|$)/);
  assert.match(csp, /(^|; )default-src 'none'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  const html = await res.text();
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  const scripts = [...html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(scripts.length >= 1);
  let gz = 0;
  for (const s of scripts) {
    assert.ok(s.startsWith('/'), `script ${s} comes from this origin`);
    const body = Buffer.from(await (await fetch(srv.origin + s)).arrayBuffer());
    gz += gzipSync(body).byteLength;
  }
  process.stdout.write(`# console first-load JavaScript: ${(gz / 1024).toFixed(1)} KB gzipped\n`);
  assert.ok(gz <= 150 * 1024, `first load ${gz} bytes gzipped`);
  const missing = await fetch(`${srv.origin}/console/assets/nope.js`);
  assert.equal(missing.status, 404);
});

test('sign in: a bad key shows the error in an alert, a good one opens the console with every section in the navigation', async () => {
  await page.goto(`${srv.origin}/`);
  await page.getByRole('textbox', { name: 'API key' }).waitFor();
  await noSeriousViolations('the sign-in page');
  await shot('01-sign-in');
  await page.getByRole('textbox', { name: 'API key' }).fill('kiln_live_not_a_real_key');
  await page.getByRole('button', { name: 'Sign in' }).click();
  const alert = page.getByRole('alert');
  await alert.waitFor();
  assert.match(await alert.innerText(), /unauthorized|invalid|not/i);
  await shot('02-sign-in-bad-key');
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  // A 401 is an expected answer, but Chromium reports every failed fetch as a console error.
  for (let i = problems.length - 1; i >= 0; i--) if (/status of 401/.test(problems[i]!)) problems.splice(i, 1);

  await page.getByRole('textbox', { name: 'API key' }).fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  const nav = page.getByRole('navigation');
  for (const s of SECTIONS) assert.equal(await nav.getByRole('link', { name: s, exact: true }).count(), 1, s);
  // Kept in sessionStorage only: never in the URL, never in localStorage or a cookie.
  const stored = await page.evaluate(() => ({ session: JSON.stringify({ ...sessionStorage }), local: localStorage.length, cookie: document.cookie, url: location.href }));
  assert.ok(stored.session.includes(key));
  assert.equal(stored.local, 0);
  assert.equal(stored.cookie, '');
  assert.ok(!stored.url.includes(key));
  // A reload keeps the session.
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});

test('playground: an image generation ends with a loaded image, which then appears in the gallery', async () => {
  await open('Playground');
  await page.getByLabel('Type').selectOption('image');
  const model = page.getByLabel('Model', { exact: true });
  await page.waitForFunction(() => (document.querySelector('#pg-model') as HTMLSelectElement | null)?.options.length);
  const options = await model.locator('option').allInnerTexts();
  assert.ok(options.some((o) => /local\/sketch/.test(o) && /\$0\.001 \/ image/.test(o)), options.join(' | '));
  await model.selectOption('local/sketch');
  await page.getByLabel('Aspect ratio').selectOption('16:9');
  await page.getByLabel('Prompt').fill('A kiln at dusk, warm light');
  await page.getByRole('button', { name: 'Generate' }).click();
  const img = page.locator('.output img[alt="A kiln at dusk, warm light"]');
  await img.waitFor();
  await page.waitForFunction(() => {
    const i = document.querySelector('.output img') as HTMLImageElement | null;
    return !!i && i.complete && i.naturalWidth > 0;
  });
  const size = await img.evaluate((i: HTMLImageElement) => [i.naturalWidth, i.naturalHeight]);
  assert.ok(size[0]! > size[1]!, `16:9 image is wider than tall: ${size}`);
  assert.equal(await page.locator('.output [data-status]').first().getAttribute('data-status'), 'completed');
  await shot('03-playground-image');

  // A code generation, highlighted.
  await page.getByLabel('Type').selectOption('code');
  await page.getByLabel('Language').selectOption('tsx');
  await page.getByLabel('Prompt').fill('A pricing card with three tiers');
  await page.getByRole('button', { name: 'Generate' }).click();
  await page.locator('.output pre.code .tok-k').first().waitFor();
  await shot('04-playground-code');

  await open('Generations');
  const tiles = page.locator('.gallery .tile');
  await tiles.first().waitFor();
  assert.equal(await tiles.count(), 2);
  // Newest first: the code result, then the image.
  assert.equal(await tiles.nth(0).getAttribute('data-status'), 'completed');
  await page.waitForFunction(() => {
    const i = document.querySelector('.gallery img') as HTMLImageElement | null;
    return !!i && i.complete && i.naturalWidth > 0;
  });
  await shot('05-gallery');
  // Live: with the account's event stream (GET /events), a generation made elsewhere (the CLI, an
  // app) appears in the open gallery as it settles, without a reload.
  {
    const made = await api(srv.base, key, '/generations', { body: { type: 'code', prompt: 'made by another client', targetLanguage: 'css' } });
    assert.equal(made.status, 202);
    await page.locator(`.gallery [data-generation-id="${made.body.id}"][data-status="completed"]`).waitFor();
    await page.getByLabel('Kind').selectOption('code');
    await page.waitForFunction(() => document.querySelectorAll('.gallery .tile').length === 2);
    await page.getByLabel('Kind').selectOption('');
    await page.waitForFunction(() => document.querySelectorAll('.gallery .tile').length === 3);
    await page.getByLabel('Kind').selectOption('image');
    await page.waitForFunction(() => document.querySelectorAll('.gallery .tile').length === 1);
    await page.getByLabel('Kind').selectOption('');
    await page.waitForFunction(() => document.querySelectorAll('.gallery .tile').length === 3);
  }
  // The detail view of the image.
  await page.locator('.gallery .tile:has(img) a').first().click();
  await page.locator('.detail img.result-image').waitFor();
  const details = await page.locator('.detail').innerText();
  assert.match(details, /local\/sketch/);
  assert.match(details, /\$0\.001/);
  assert.match(details, /A kiln at dusk/);
  assert.ok(await page.getByRole('link', { name: 'Download image' }).count());
  await shot('06-generation-detail');
});

test('overview: the tier, the budget, and the daily spend chart by model (role img, named with "spend")', async () => {
  await open('Overview');
  await page.getByRole('heading', { name: 'Plan' }).waitFor();
  const chart = page.getByRole('img', { name: /spend/i });
  await chart.waitFor();
  const name = (await chart.getAttribute('aria-label')) ?? '';
  assert.match(name, /local\/sketch/, name);
  assert.ok(await page.locator('.chart canvas').count(), 'uPlot drew a canvas');
  const text = await page.locator('.section').innerText();
  assert.match(text, /pro/i);
  assert.match(text, /\$20\.00/);
  await shot('07-overview');
});

test('workflows: a run draws its snapshot graph and its output nodes turn completed live', async () => {
  await open('Workflows');
  await page.getByRole('button', { name: 'Run Autumn campaign' }).click();
  const node = (id: string) => page.locator(`[data-node-id="${id}"]`);
  await node('hero').waitFor();
  for (const id of ['brief', 'hero-prompt', 'hero', 'page-prompt', 'landing']) assert.equal(await node(id).count(), 1, id);
  // The hero takes 1.5 s: it is seen pending or running first, while the landing waits for it.
  const early = await node('hero').getAttribute('data-status');
  assert.ok(early === 'pending' || early === 'running', `hero first seen ${early}`);
  assert.equal(await node('landing').getAttribute('data-status'), 'pending');
  await page.waitForSelector('[data-node-id="hero-prompt"][data-status="running"]');
  await shot('08-run-live');
  // The page does not poll: only the run's event stream can turn them completed.
  await page.waitForSelector('[data-node-id="hero"][data-status="completed"]');
  await page.waitForSelector('[data-node-id="page-prompt"][data-status="running"]');
  await page.waitForFunction(() => {
    const i = document.querySelector('.result img') as HTMLImageElement | null;
    return !!i && i.complete && i.naturalWidth > 0;
  });
  // The README's picture (docs/console.png is a copy of it, chosen by a person).
  await page.screenshot({ path: path.join(SHOTS, 'readme-run-live.png'), fullPage: true, clip: { x: 0, y: 0, width: 1280, height: 1000 } });
  await page.waitForSelector('[data-node-id="landing"][data-status="completed"]');
  await page.waitForSelector('[data-run-status="completed"]');
  assert.equal(await node('brief').getAttribute('data-status'), 'completed');
  await page.locator('.result img.result-image').waitFor();
  await noSeriousViolations('a run view');
  await shot('09-run-completed');
  // Its history.
  await page.getByRole('link', { name: /Runs of this workflow/ }).click();
  await page.locator('table tbody tr').first().waitFor();
  assert.equal(await page.locator('table tbody tr').count(), 1);

  // Cancel a run in flight, then retry it: the retry is a new run that completes.
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await page.waitForSelector('[data-node-id="hero-prompt"][data-status="running"]');
  const canceledUrl = page.url();
  await page.getByRole('button', { name: 'Cancel run' }).click();
  await page.waitForSelector('[data-run-status="failed"]');
  assert.match(await page.locator('.run-head').innerText(), /canceled/i);
  assert.equal(await node('landing').getAttribute('data-status'), 'skipped');
  await shot('09b-run-canceled');
  await page.getByRole('button', { name: 'Retry run' }).click();
  await page.waitForFunction((before) => location.href !== before, canceledUrl);
  await page.waitForSelector('[data-run-status="completed"]');
  await page.waitForSelector('[data-node-id="landing"][data-status="completed"]');
  assert.match(await page.locator('.run-head').innerText(), /retry of/);
});

test('webhooks: add an endpoint (the secret is shown once), send a test event, find it in the delivery log and redeliver it', async () => {
  await open('Webhooks');
  await page.getByLabel('Endpoint URL').fill(receiver.url);
  await page.getByRole('button', { name: 'Add endpoint' }).click();
  const secretEl = page.locator('[data-secret]');
  await secretEl.waitFor();
  const secret = await secretEl.innerText();
  assert.match(secret, /^whsec_/);
  await page.locator('[data-endpoint-id]').first().waitFor();
  assert.ok((await page.locator('[data-endpoint-id]').first().innerText()).includes(receiver.url));
  await page.getByRole('button', { name: 'Send test event' }).click();
  await page.getByRole('status').filter({ hasText: 'Test event queued' }).waitFor();
  // The receiver gets it, signed with the secret the page showed; the log shows it delivered.
  const [first] = await receiver.wait(1, (d) => d.json?.type === 'webhook.test');
  assert.equal(verify(secret, first!).type, 'webhook.test');
  const row = page.locator('.deliveries tbody tr', { hasText: 'webhook.test' });
  await row.locator('[data-status="delivered"]').waitFor();
  // Redeliver: the same message (same webhook-id) arrives again.
  await row.getByRole('button', { name: /Redeliver/ }).click();
  await page.getByRole('status').filter({ hasText: 'Redelivery queued' }).waitFor();
  const [, again] = await receiver.wait(2, (d) => d.json?.type === 'webhook.test');
  assert.equal(again!.headers['webhook-id'], first!.headers['webhook-id']);
  await noSeriousViolations('the webhooks section with an endpoint');
  await shot('10-webhooks');
});

test('models: the catalog with billed prices and modalities', async () => {
  await open('Models');
  const text = await page.locator('.models').innerText();
  assert.match(text, /local\/sketch/);
  assert.match(text, /\$0\.001 \/ image/);
  assert.match(text, /local\/coder/);
  await shot('11-models');
});

test('axe finds no serious or critical violation on any section, in light and dark', async () => {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const s of SECTIONS) {
      await open(s);
      await page.waitForLoadState('networkidle').catch(() => {});
      await page.waitForFunction(() => !document.querySelector('.loading'));
      await noSeriousViolations(`${s} (${scheme})`);
      if (scheme === 'dark' && (s === 'Overview' || s === 'Generations')) await shot(`12-dark-${s.toLowerCase()}`);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
});

test('keyboard: the sections are reached and opened with Tab and Enter', async () => {
  await page.goto(`${srv.origin}/console/#/overview`);
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  let reached = false;
  for (let i = 0; i < 15 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement?.textContent?.trim() === 'Models');
  }
  assert.ok(reached, 'the Models link takes focus by keyboard');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Models' }).waitFor();
  // Focus moved to the section's heading.
  assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H1');
});

test('phone width: 375 px wide with no sideways scroll on any section', async () => {
  const phone = await browser.newContext({ viewport: { width: 375, height: 812 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const p = await phone.newPage();
  watch(p);
  await p.goto(`${srv.origin}/console/`);
  await p.getByRole('textbox', { name: 'API key' }).fill(wsKey);
  await p.getByRole('button', { name: 'Sign in' }).click();
  // A workspace-bound key: the overview shows the Team pool beside the personal budget.
  await p.getByRole('heading', { name: 'Workspace pool' }).waitFor();
  const overview = await p.locator('.section').innerText();
  assert.match(overview, /Workspace pool[\s\S]*\$5\.00/i);
  assert.match(overview, /Personal budget[\s\S]*\$20\.00/i);
  for (const s of SECTIONS) {
    await p.getByRole('navigation').getByRole('link', { name: s, exact: true }).click();
    await p.getByRole('heading', { level: 1, name: s, exact: true }).waitFor();
    await p.waitForFunction(() => !document.querySelector('.loading'));
    const [sw, cw] = await p.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(sw <= cw, `${s}: scrollWidth ${sw} > ${cw}`);
    await shot(`13-phone-${s.toLowerCase()}`, p);
  }
  // The run view too.
  await p.goto(`${srv.origin}/console/#/workflows/${workflowId}`);
  await p.locator('table tbody tr a').first().click();
  await p.locator('[data-node-id="landing"][data-status="completed"]').waitFor();
  const [sw, cw] = await p.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  assert.ok(sw <= cw, `run view: scrollWidth ${sw} > ${cw}`);
  await shot('13-phone-run', p);
  await phone.close();
});

test('/docs renders the OpenAPI document with the locally served Redoc, under a CSP without inline scripts', async () => {
  const res = await fetch(`${srv.origin}/docs`);
  const csp = res.headers.get('content-security-policy') ?? '';
  assert.match(csp, /(^|; )script-src 'self'(;|$)/);
  assert.doesNotMatch(csp.match(/script-src[^;]*/)![0], /unsafe/);
  // The `redoc` package's bundle, with its one CDN URL (the attribution logo) pointed here.
  const bundle = await (await fetch(`${srv.origin}/docs/redoc.standalone.js`)).text();
  assert.ok(bundle.length > 500_000, `bundle of ${bundle.length} bytes`);
  assert.ok(!bundle.includes('cdn.redoc.ly'), 'the bundle still names Redocly\'s CDN');
  assert.ok(!/sourceMappingURL=\S+\s*$/.test(bundle), 'the bundle names a source map Kiln does not serve');
  const p = await context.newPage();
  watch(p);
  await p.goto(`${srv.origin}/docs`);
  await p.getByRole('heading', { name: /Kiln API/ }).first().waitFor({ timeout: 60_000 });
  await p.getByText('/models', { exact: true }).first().waitFor();
  await p.getByRole('link', { name: 'Generations' }).first().waitFor();
  await p.getByRole('heading', { name: 'Run a saved workflow server-side' }).waitFor();
  await shot('14-docs', p);
  await p.close();
});

test('sign out forgets the key', async () => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('textbox', { name: 'API key' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  await page.reload();
  await page.getByRole('textbox', { name: 'API key' }).waitFor();
  assert.equal(await page.getByRole('navigation').count(), 0);
});

test('no request left the origin, and the browser logged no error', async () => {
  assert.ok(requests.length > 20, `recorded ${requests.length} requests`);
  const away = requests.filter((u) => !u.startsWith('data:') && !u.startsWith('blob:') && new URL(u).origin !== srv.origin);
  assert.deepEqual(away, []);
  assert.deepEqual(problems, []);
});
