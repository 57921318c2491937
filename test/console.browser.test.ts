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
import { shortText } from '../src/console/app/api.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { startTestWorker } from './_generations.ts';
import { saveWorkflow, startRun } from './_workflows.ts';
import { startReceiver, verify, type Receiver } from './_webhooks.ts';

const CHROMIUM = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.resolve(import.meta.dirname, 'artifacts', 'console');
const AXE = fs.readFileSync(path.resolve(import.meta.dirname, '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
const GEOMETRY = fs.readFileSync(path.resolve(import.meta.dirname, '_console_geometry.js'), 'utf8');
const SECTIONS = ['Overview', 'End users', 'Generations', 'Batches', 'Playground', 'Workflows', 'Webhooks', 'Models'];

let srv: TestServer;
let key: string;
/** A key of the same account bound to its Team workspace (the phone signs in with it). */
let wsKey: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let wsWorkflowId: string;
let receiver: Receiver;
const requests: string[] = [];
const problems: string[] = [];

function watch(p: Page) {
  p.on('request', (r) => requests.push(r.url()));
  p.on('console', (m) => {
    // Every refusal is a problem: the console asks GET /me whether to show Admin, never an admin route.
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
}

async function shot(name: string, p: Page = page, fullPage = true) {
  await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
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

/** The run graph's geometry: edges against node boxes (see _console_geometry.js). */
async function graphGeometry(p: Page): Promise<{ problems: string[]; paths: string[]; direction?: string }> {
  await p.evaluate(GEOMETRY);
  return p.evaluate(() => (window as any).kilnGraphGeometry());
}

const GRAPH_EDGES = ['brief>hero-prompt', 'brief>page-prompt', 'hero-prompt>hero', 'hero>page-prompt', 'page-prompt>landing'];

/**
 * The daily chart's bars as drawn, read from the canvas's pixels: for each model in the legend,
 * the box (CSS px) of the pixels of its colour. Only one day has spend, so that is its segment.
 */
async function chartBars(p: Page) {
  return p.evaluate(() => {
    const canvas = document.querySelector<HTMLCanvasElement>('.chart canvas')!;
    const { width, height } = canvas;
    const px = canvas.getContext('2d')!.getImageData(0, 0, width, height).data;
    const ratio = width / canvas.getBoundingClientRect().width;
    return [...document.querySelectorAll<HTMLElement>('.legend li[data-model]')].map((li) => {
      const [r, g, b] = getComputedStyle(li.querySelector('.swatch')!).backgroundColor.match(/\d+/g)!.map(Number);
      let x0 = Infinity, x1 = -1, y0 = Infinity, y1 = -1;
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) {
          const i = (y * width + x) * 4;
          if (px[i] === r && px[i + 1] === g && px[i + 2] === b && px[i + 3] === 255) {
            x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
          }
        }
      }
      return { model: li.dataset.model!, width: x1 < 0 ? 0 : (x1 - x0 + 1) / ratio, height: y1 < 0 ? 0 : (y1 - y0 + 1) / ratio };
    });
  });
}

/**
 * The Models page's layout: each card's badge beside its name and id (not wrapped under them),
 * and how many lines its price takes against how many prices it has.
 */
async function modelCards(p: Page) {
  return p.evaluate(() => [...document.querySelectorAll<HTMLElement>('.models .model')].map((card) => {
    const head = card.querySelector<HTMLElement>('.model-head .min0')!.getBoundingClientRect();
    const id = card.querySelector<HTMLElement>('.model-head code')!.getBoundingClientRect();
    const badge = card.querySelector<HTMLElement>('.badge')!;
    const b = badge.getBoundingClientRect();
    const price = card.querySelector<HTMLElement>('.price')!;
    const lineHeight = parseFloat(getComputedStyle(price).lineHeight);
    return {
      id: card.querySelector('code')!.textContent!,
      badge: badge.textContent!,
      beside: b.left >= id.right && b.left >= head.right - 0.5 && b.top < id.bottom && b.bottom > head.top,
      priceLines: Math.round(price.getBoundingClientRect().height / lineHeight),
      prices: price.querySelectorAll('.nowrap').length,
    };
  }));
}

/**
 * Whether a select shows its chosen option whole: the label's width in the select's font, with its
 * padding and the arrow (Chromium does not count a select's text in scrollWidth).
 */
async function selectFits(p: Page, selector: string) {
  return p.evaluate((sel) => {
    const s = document.querySelector<HTMLSelectElement>(sel)!;
    const cs = getComputedStyle(s);
    const ctx = document.createElement('canvas').getContext('2d')!;
    ctx.font = cs.font;
    const text = s.options[s.selectedIndex]?.text ?? '';
    const needed = ctx.measureText(text).width + parseFloat(cs.paddingLeft) + parseFloat(cs.paddingRight) + 24;
    return { text, needed: Math.ceil(needed), width: s.clientWidth, fits: needed <= s.clientWidth };
  }, selector);
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
  const graph = {
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
  };
  await saveWorkflow(srv, a.id, graph, 'Autumn campaign');
  // The workspace's own copy: a workspace-bound key sees the workspace's workflows, not the account's.
  wsWorkflowId = await saveWorkflow(srv, a.id, graph, 'Autumn campaign (Studio)', ws.id);
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
  // The first load is the page's scripts and every chunk they import statically; a chunk imported
  // with import() (the graph layout) loads when it is needed.
  let gz = 0;
  const loaded = new Set<string>();
  const lazy = new Set<string>();
  const load = async (url: string) => {
    if (loaded.has(url)) return;
    loaded.add(url);
    assert.ok(url.startsWith('/'), `script ${url} comes from this origin`);
    const res = await fetch(srv.origin + url);
    assert.equal(res.status, 200, url);
    const body = Buffer.from(await res.arrayBuffer());
    gz += gzipSync(body).byteLength;
    const code = body.toString('utf8');
    for (const m of code.matchAll(/import\(\s*["'](\.\/[^"']+)["']\s*\)/g)) lazy.add(new URL(m[1]!, srv.origin + url).pathname);
    for (const m of code.matchAll(/(?:^|[;}\s])(?:import|export)\s*(?:[^"'();]*?\bfrom\s*)?["'](\.\/[^"']+)["']/g)) await load(new URL(m[1]!, srv.origin + url).pathname);
  };
  for (const s of scripts) await load(s);
  process.stdout.write(`# console first-load JavaScript: ${(gz / 1024).toFixed(1)} KB gzipped in ${loaded.size} files\n`);
  assert.ok(gz <= 150 * 1024, `first load ${gz} bytes gzipped`);
  // The graph layout (elkjs) and the workflow editor (React Flow) are loaded on demand, not with the console.
  assert.equal(lazy.size, 2, [...lazy].join(', '));
  const kinds: string[] = [];
  for (const url of lazy) {
    assert.ok(!loaded.has(url));
    const body = Buffer.from(await (await fetch(srv.origin + url)).arrayBuffer());
    const code = body.toString('utf8');
    const kind = /org\.eclipse\.elk/.test(code) ? 'the graph layout (ELK), loaded with the Workflows section'
      : /react-flow__/.test(code) ? 'the workflow editor (React Flow), loaded with the first editor' : `unknown chunk ${url}`;
    kinds.push(kind.split(',')[0]!);
    process.stdout.write(`# ${kind}: ${(gzipSync(body).byteLength / 1024).toFixed(1)} KB gzipped\n`);
  }
  assert.deepEqual(kinds.sort(), ['the graph layout (ELK)', 'the workflow editor (React Flow)']);
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
  assert.ok(options.includes('Local Sketch (development)'), options.join(' | '));
  await model.selectOption('local/sketch');
  // The chosen model's id and billed price are under the field, which names it whole.
  assert.match(await page.locator('#pg-model-hint').innerText(), /local\/sketch · billed \$0\.001 \/ image/);
  for (const type of ['code', 'image']) {
    await page.getByLabel('Type').selectOption(type);
    for (const value of await model.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))) {
      await model.selectOption(value);
      const fit = await selectFits(page, '#pg-model');
      assert.ok(fit.fits, `the model select cuts "${fit.text}" off: it needs ${fit.needed} px of ${fit.width}`);
    }
  }
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

test('gallery: cards are titled by their prompts (shortened; whole in the tooltip and the accessible name), distinct for jobs made within one second, after a reload too', async (t) => {
  const prompts = [
    'A lighthouse on a basalt cliff at dawn, long exposure, mist over the water, muted teal palette',
    'Isometric cutaway of a pottery studio with three wheels and a kiln',
    'Glaze test tiles',
    'Glaze test tiles',
  ];
  const started = Date.now();
  const made = await Promise.all(prompts.map((prompt) => api(srv.base, key, '/generations', { body: { type: 'image', prompt } })));
  const spent = Date.now() - started;
  assert.ok(spent < 1000, `made in ${spent} ms`);
  const ids = made.map((m) => m.body.id as string);
  for (const id of ids) assert.equal((await api(srv.base, key, `/generations/${id}`, { headers: { prefer: 'wait=30' } })).body.status, 'completed');
  // What the cards were titled by before: the UUIDv7's first 8 digits, a time prefix.
  t.diagnostic(`first 8 digits: ${[...new Set(ids.map((id) => id.slice(0, 8)))].join(', ')}`);
  // Made by another client, and read after a reload: the titles come from the API, not from this tab.
  await page.goto(`${srv.origin}/console/#/generations`);
  await page.reload();
  for (const id of ids) await page.locator(`.gallery [data-generation-id="${id}"][data-status="completed"]`).waitFor();
  const cards = await page.evaluate((all) => all.map((id) => {
    const tile = document.querySelector(`.gallery [data-generation-id="${id}"]`)!;
    const title = tile.querySelector<HTMLElement>('.tile-title')!;
    return {
      visible: (title.querySelector('[aria-hidden="true"]') ?? title).textContent!,
      tooltip: title.getAttribute('title'),
      shownId: tile.querySelector('.tile-id')!.textContent!,
      clipped: title.scrollHeight > title.clientHeight + 1,
    };
  }), ids);
  prompts.forEach((prompt, i) => {
    assert.equal(cards[i]!.visible, shortText(prompt, 40), `card ${i}`);
    assert.equal(cards[i]!.tooltip, prompt);
    assert.equal(cards[i]!.clipped, false, `card ${i}'s title is cut off`);
    // The id shown is the random tail, not the time prefix.
    assert.equal(cards[i]!.shownId, ids[i]!.replace(/-/g, '').slice(-8));
  });
  assert.equal(cards[0]!.visible, 'A lighthouse on a basalt cliff at dawn…');
  assert.equal(new Set(cards.slice(0, 3).map((c) => c.visible)).size, 3, 'three prompts, three titles');
  assert.notEqual(cards[2]!.shownId, cards[3]!.shownId, 'the same prompt twice: told apart by their ids');
  // A screen reader hears the whole prompt.
  assert.equal(await page.getByRole('link', { name: prompts[0] }).count(), 1);
  await page.locator(`.gallery [data-generation-id="${ids[0]}"] img`).evaluate((i: HTMLImageElement) => i.decode());
  await shot('05b-gallery-titles');
});

test('overview: the tier, the budget, and the daily spend chart by model (role img, named with "spend")', async () => {
  await open('Overview');
  await page.getByRole('heading', { name: 'Plan' }).waitFor();
  const chart = page.getByRole('img', { name: /spend/i });
  await chart.waitFor();
  const name = (await chart.getAttribute('aria-label')) ?? '';
  assert.match(name, /local\/sketch/, name);
  assert.ok(await page.locator('.chart canvas').count(), 'uPlot drew a canvas');
  // Today's bar, in pixels: wide enough to read, and every model's segment visible.
  const bars = await chartBars(page);
  assert.ok(bars.length >= 2, JSON.stringify(bars));
  for (const b of bars) assert.ok(b.width >= 5.5 && b.height >= 4, `1280 px: ${JSON.stringify(bars)}`);
  const text = await page.locator('.section').innerText();
  assert.match(text, /pro/i);
  assert.match(text, /\$20\.00/);
  await shot('07-overview');
});

test('workflows: a run draws its snapshot graph and its output nodes turn completed live', async () => {
  await open('Workflows');
  await page.getByRole('button', { name: 'Run Autumn campaign' }).click();
  const node = (id: string) => page.locator(`[data-node-id="${id}"]`);
  // In the page at once, shown once laid out (the layout engine is loaded on entering Workflows).
  await node('hero').waitFor({ state: 'attached' });
  for (const id of ['brief', 'hero-prompt', 'hero', 'page-prompt', 'landing']) assert.equal(await node(id).count(), 1, id);
  // The hero takes 1.5 s: it is seen pending or running first, while the landing waits for it.
  const early = await node('hero').getAttribute('data-status');
  assert.ok(early === 'pending' || early === 'running', `hero first seen ${early}`);
  assert.equal(await node('landing').getAttribute('data-status'), 'pending');
  await page.waitForSelector('[data-node-id="hero-prompt"][data-status="running"]');
  // Laid out by ELK, left to right at this width: every edge drawn, none under or along a node.
  await page.waitForSelector('.graph.ready');
  const live = await graphGeometry(page);
  assert.deepEqual(live.paths, GRAPH_EDGES);
  assert.equal(live.direction, 'RIGHT');
  assert.deepEqual(live.problems, []);
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
  const done = await graphGeometry(page);
  assert.deepEqual(done.paths, GRAPH_EDGES);
  assert.deepEqual(done.problems, []);
  await shot('09-run-completed');
  await page.locator('.graph').screenshot({ path: path.join(SHOTS, '09a-run-graph.png') });
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
  const cards = await modelCards(page);
  assert.deepEqual(cards.map((c) => c.badge).sort(), ['Image', 'Image', 'SVG', 'Text', 'Text']);
  for (const c of cards) {
    assert.ok(c.beside, `1280 px: ${c.id}'s badge wrapped under its name and id`);
    // One line at this width, whatever the number of prices.
    assert.equal(c.priceLines, 1, `1280 px: ${c.id}'s price takes ${c.priceLines} lines`);
  }
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
  for (let i = 0; i < 25 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement?.textContent?.trim() === 'Models');
  }
  assert.ok(reached, 'the Models link takes focus by keyboard');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Models' }).waitFor();
  // Focus moves to the section's heading: in an effect, after the new section is painted, so
  // shortly after the heading shows (not in the same frame, under load).
  await page.waitForFunction(() => document.activeElement?.tagName === 'H1', undefined, { timeout: 5000 }).catch(() => {});
  assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H1');
});

test('phone width: 375 px wide with no sideways scroll on any section', async () => {
  // The workspace's spend today: three images at $0.0025 and a code job of a hundredth of that,
  // which at the chart's scale is under two pixels tall unless given a visible minimum.
  const jobs = await Promise.all([
    ...[1, 2, 3].map((i) => ({ type: 'image', model: 'local/slow-sketch', prompt: `Poster for the workspace, take ${i}` })),
    { type: 'code', model: 'local/coder', prompt: 'A tiny badge', targetLanguage: 'css' },
  ].map((body) => api(srv.base, wsKey, '/generations', { body, headers: { prefer: 'wait=30' } })));
  for (const j of jobs) assert.equal(j.body.status, 'completed', JSON.stringify(j.body));
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
    if (s === 'Overview') {
      await p.getByRole('img', { name: /local\/slow-sketch/ }).waitFor();
      // The day's bar is a bar, not a hairline, and the small code job shows on it.
      const bars = await chartBars(p);
      assert.deepEqual(bars.map((b) => b.model), ['local/coder', 'local/slow-sketch']);
      for (const b of bars) assert.ok(b.width >= 5.5 && b.height >= 4, `375 px: ${JSON.stringify(bars)}`);
    }
    if (s === 'Generations') {
      await p.locator('.gallery .tile').first().waitFor();
      const clipped = await p.locator('.gallery .tile-title').evaluateAll((ts) => ts.filter((t) => t.scrollHeight > t.clientHeight + 1).map((t) => t.textContent));
      assert.deepEqual(clipped, [], 'no card title is cut off');
    }
    if (s === 'Playground') {
      const model = p.getByLabel('Model', { exact: true });
      await p.waitForFunction(() => (document.querySelector('#pg-model') as HTMLSelectElement | null)?.options.length);
      for (const type of ['image', 'code']) {
        await p.getByLabel('Type').selectOption(type);
        for (const value of await model.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))) {
          await model.selectOption(value);
          const fit = await selectFits(p, '#pg-model');
          assert.ok(fit.fits, `375 px: the model select cuts "${fit.text}" off: it needs ${fit.needed} px of ${fit.width}`);
        }
      }
      await p.getByLabel('Type').selectOption('image');
    }
    if (s === 'Models') {
      for (const c of await modelCards(p)) {
        assert.ok(c.beside, `375 px: ${c.id}'s badge wrapped under its name and id`);
        // A line per price at most; a price is never broken inside.
        assert.ok(c.priceLines <= c.prices, `375 px: ${c.id}'s ${c.prices} prices take ${c.priceLines} lines`);
      }
    }
    await shot(`13-phone-${s.toLowerCase()}`, p);
    if (s === 'Overview') await p.locator('.chart').screenshot({ path: path.join(SHOTS, '13-phone-chart.png') });
  }
  // The run view too, of a run of the workspace's workflow.
  await startRun(srv, wsKey, wsWorkflowId);
  await p.goto(`${srv.origin}/console/#/workflows/${wsWorkflowId}`);
  await p.locator('table tbody tr a').first().click();
  await p.locator('[data-node-id="landing"][data-status="completed"]').waitFor();
  await p.waitForSelector('.graph.ready');
  const [sw, cw] = await p.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  assert.ok(sw <= cw, `run view: scrollWidth ${sw} > ${cw}`);
  // Too narrow for the layers side by side: top to bottom, the edges still clear of every node.
  const graph = await graphGeometry(p);
  assert.deepEqual(graph.paths, GRAPH_EDGES);
  assert.equal(graph.direction, 'DOWN');
  assert.deepEqual(graph.problems, []);
  const [gw, gcw] = await p.locator('.graph').evaluate((g) => [g.scrollWidth, g.clientWidth]);
  assert.ok(gw <= gcw, `the graph fits the phone: ${gw} > ${gcw}`);
  await shot('13-phone-run', p);
  await p.locator('.graph').screenshot({ path: path.join(SHOTS, '13-phone-run-graph.png') });
  await phone.close();
});

test('/docs renders the OpenAPI document with the locally served Redoc, under a CSP without inline scripts', async () => {
  const res = await fetch(`${srv.origin}/docs`);
  const csp = res.headers.get('content-security-policy') ?? '';
  assert.match(csp, /(^|; )script-src 'self'(;|$)/);
  assert.doesNotMatch(csp.match(/script-src[^;]*/)![0], /unsafe/);
  // Redoc's bundle vendored in vendor/redoc/, with its one CDN URL (the attribution logo) pointed here.
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
  // The first screen only: the whole reference is over 100,000 px tall, and encoding it took seconds.
  await shot('14-docs', p, false);
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
