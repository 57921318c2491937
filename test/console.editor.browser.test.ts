// The console's workflow editor in Chromium (playwright-core), against the real server and worker:
// a workflow built with the accessible form (the contract, by accessible name), saved and
// run to a completed output; the mouse dragging a node and drawing an edge; undo and redo; a
// server validation error shown on its node; a 412 answered with Reload or Overwrite; leaving with
// unsaved changes asks first; Delete workflow; a hand-drawn edge routed around the nodes; axe in
// light and dark; 1280 and 375 px. Screenshots go to test/artifacts/console-editor/.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { startTestWorker } from './_generations.ts';

/**
 * Nothing matches `l`, once the page has re-rendered: what a click or an answer removes goes in a
 * render after the one the awaited element appeared in, so it is waited for (up to 5 s), then checked.
 */
async function none(l: Locator): Promise<void> {
  await l.first().waitFor({ state: 'detached', timeout: 5000 }).catch(() => {});
  assert.equal(await l.count(), 0);
}

const CHROMIUM = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.resolve(import.meta.dirname, 'artifacts', 'console-editor');
const GEOMETRY = fs.readFileSync(path.resolve(import.meta.dirname, '_console_geometry.js'), 'utf8');
const AXE = fs.readFileSync(path.resolve(import.meta.dirname, '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

let srv: TestServer;
let key: string;
let browser: Browser;
let page: Page;
let workflowId: string;
const requests: string[] = [];
const problems: string[] = [];

function watch(p: Page) {
  p.on('request', (r) => requests.push(r.url()));
  p.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
}

async function shot(name: string, p: Page = page) {
  await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

async function noSeriousViolations(where: string, p: Page = page) {
  await p.evaluate(AXE);
  const found = await p.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n: any) => n.target.join(' ')).slice(0, 3) }));
  });
  assert.deepEqual(found.filter((v: any) => v.impact === 'serious' || v.impact === 'critical'), [], `axe on ${where}`);
}

/** Signs in on a fresh page of a new context. */
async function signIn(width: number, height: number, scheme: 'light' | 'dark' = 'light'): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme: scheme, ...(width < 500 ? { deviceScaleFactor: 2, isMobile: true, hasTouch: true } : {}) });
  const p = await context.newPage();
  p.setDefaultTimeout(30_000);
  watch(p);
  // The editor's CSS and scripts must work under the console's CSP: any refusal is a problem.
  await p.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
  });
  await p.goto(`${srv.origin}/console/`);
  await p.getByRole('textbox', { name: 'API key' }).fill(key);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  return p;
}

const panel = (p: Page = page) => p.getByRole('region', { name: 'Node' });
const canvasNode = (id: string, p: Page = page) => p.locator(`.react-flow__node[data-node-id="${id}"]`);

async function addNode(kind: 'Text' | 'Image' | 'Prompt' | 'Output', p: Page = page) {
  await p.getByRole('button', { name: 'Add node' }).click();
  await p.getByRole('menu', { name: 'Add node' }).getByRole('menuitem', { name: kind, exact: true }).click();
}

async function addEdge(from: string, to: string, p: Page = page) {
  const form = p.getByRole('form', { name: 'Add edge' });
  if (!(await form.isVisible())) await p.getByRole('button', { name: 'Add edge' }).click();
  await form.getByLabel('From').selectOption(from);
  await form.getByLabel('To').selectOption(to);
  await form.getByRole('button', { name: 'Connect' }).click();
}

/**
 * Waits for an edge drawn on the canvas: its path, from one node's handle to the other's. (Not
 * "visible" to Playwright: a straight level edge has a box 0 px tall.)
 */
async function drawn(key: string, p: Page = page) {
  await p.waitForFunction((k) => /^M[\d.-]/.test([...document.querySelectorAll('.react-flow__edge')].find((e) => e.getAttribute('data-edge') === k)?.querySelector('.react-flow__edge-path')?.getAttribute('d') ?? ''), key);
}

/** Polls `check` (which throws until it holds) for up to 5 s: what the page shows after a key press comes a frame or two later. */
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

async function center(l: Locator) {
  const b = (await l.boundingBox())!;
  return { x: b.x + b.width / 2, y: b.y + b.height / 2 };
}

/** A few frames, for the view to settle (a fit after adding a node outside it). */
async function settled(p: Page = page) {
  await p.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(done)))));
}

async function storedWorkflow(id: string) {
  const res = await api(srv.base, key, `/workflows/${id}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: install it (apt-get install -y chromium) or set KILN_CHROMIUM`);
  fs.mkdirSync(SHOTS, { recursive: true });
  srv = await startServer();
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  key = (await createKey(srv.db.sql, a.id)).key;
  // One image of the account's own, for the image picker.
  const g = await api(srv.base, key, '/generations', { body: { type: 'image', model: 'local/sketch', prompt: 'A kiln at dusk' }, headers: { prefer: 'wait=30' } });
  assert.equal(g.body.status, 'completed', JSON.stringify(g.body));
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-gpu', '--disable-quic', '--disable-sync'],
  });
  page = await signIn(1280, 900);
});

after(async () => {
  await browser?.close();
});

// The page as the last test left it, to look at when one fails.
afterEach(async () => {
  await page?.screenshot({ path: path.join(SHOTS, 'last.png'), fullPage: true }).catch(() => {});
});

test('the form builds text → prompt(image) → output; Save creates it, Run saves and opens the run, whose output completes', async () => {
  await page.getByRole('navigation').getByRole('link', { name: 'Workflows', exact: true }).click();
  await page.getByRole('button', { name: 'New workflow' }).click();
  await page.getByRole('textbox', { name: 'Workflow name' }).waitFor();
  await page.getByRole('textbox', { name: 'Workflow name' }).fill('Poster from a brief');

  await addNode('Text');
  await panel().getByLabel('Text', { exact: true }).fill('Autumn sale, 30% off');
  await panel().getByLabel('Label').fill('Brief');

  await addNode('Prompt');
  await panel().getByLabel('Output type').selectOption('image');
  await panel().getByLabel('Prompt', { exact: true }).fill('A poster for the brief');
  // Only models that can make images, each with its billed price.
  const model = panel().getByLabel('Model');
  const options = await model.locator('option').allInnerTexts();
  assert.ok(options.length >= 1, options.join(' | '));
  for (const o of options) assert.match(o, /\/ image/, `an image model with its price: ${o}`);
  assert.ok(options.some((o) => /Local Sketch.*\$0\.001 \/ image/.test(o)), options.join(' | '));
  await model.selectOption('local/sketch');
  // Code output lists the text models instead.
  await panel().getByLabel('Output type').selectOption('code');
  const codeOptions = await model.locator('option').allInnerTexts();
  assert.ok(codeOptions.some((o) => /Local Coder/.test(o)) && !codeOptions.some((o) => /Sketch/.test(o)), codeOptions.join(' | '));
  await panel().getByLabel('Output type').selectOption('image');
  await model.selectOption('local/sketch');
  await panel().getByLabel('Label').fill('Poster prompt');

  await addNode('Output');
  await panel().getByLabel('Label').fill('Poster');

  await addEdge('text-1', 'prompt-1');
  await addEdge('prompt-1', 'output-1');
  // A connection the server would refuse is refused here, saying why.
  await addEdge('output-1', 'text-1');
  assert.match(await page.getByRole('form', { name: 'Add edge' }).getByRole('alert').innerText(), /fed by a prompt only|take no inputs/);

  // On the canvas: each node by its label, with data-node-id; both edges drawn.
  for (const [id, name] of [['text-1', 'Brief'], ['prompt-1', 'Poster prompt'], ['output-1', 'Poster']]) {
    const n = page.getByRole('group', { name, exact: true });
    assert.equal(await n.getAttribute('data-node-id'), id);
  }
  for (const e of ['text-1->prompt-1', 'prompt-1->output-1']) await drawn(e);
  await page.getByRole('button', { name: 'Auto-layout' }).click();
  await page.waitForTimeout(200);
  await shot('01-built-with-the-form');

  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved: version 1' }).waitFor();
  workflowId = page.url().match(/#\/workflows\/([0-9a-f-]{36})\/edit$/)![1]!;
  assert.equal(await page.getByRole('link', { name: 'Runs', exact: true }).getAttribute('href'), `#/workflows/${workflowId}`);
  const saved = await storedWorkflow(workflowId);
  assert.equal(saved.name, 'Poster from a brief');
  assert.deepEqual(saved.graph.edges, [{ from: 'text-1', to: 'prompt-1' }, { from: 'prompt-1', to: 'output-1' }]);
  const byId = Object.fromEntries(saved.graph.nodes.map((n: any) => [n.id, n]));
  assert.deepEqual({ ...byId['prompt-1'], position: undefined }, { id: 'prompt-1', kind: 'prompt', output: 'image', prompt: 'A poster for the brief', model: 'local/sketch', aspectRatio: '1:1', label: 'Poster prompt', position: undefined });
  assert.equal(byId['text-1'].text, 'Autumn sale, 30% off');
  assert.equal(byId['output-1'].label, 'Poster');
  for (const n of saved.graph.nodes) assert.ok(Number.isInteger(n.position.x) && Number.isInteger(n.position.y), JSON.stringify(n));

  // An edit, then Run: it saves first (version 2), then opens the run view.
  await page.getByRole('group', { name: 'Brief', exact: true }).click();
  await panel().getByLabel('Text', { exact: true }).fill('Winter sale, 40% off');
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await page.waitForURL(/#\/workflows\/[0-9a-f-]+\/runs\/[0-9a-f-]+$/);
  await page.locator('.graph [data-node-id="output-1"][data-status="completed"]').waitFor();
  await page.waitForSelector('[data-run-status="completed"]');
  assert.equal((await storedWorkflow(workflowId)).version, 2);
  assert.equal((await storedWorkflow(workflowId)).graph.nodes.find((n: any) => n.id === 'text-1').text, 'Winter sale, 40% off');
  await page.locator('.result img.result-image').waitFor();
  await shot('02-run-completed');
});

test('the mouse drags a node and draws an edge from an output handle to an input handle; Ctrl+Z and Shift+Ctrl+Z undo and redo', async (t) => {
  if (!workflowId) return void t.skip('needs the workflow of the first test');
  await page.getByRole('navigation').getByRole('link', { name: 'Workflows', exact: true }).click();
  await page.getByRole('link', { name: 'Edit Poster from a brief' }).click();
  await canvasNode('output-1').waitFor();
  await addNode('Output');
  await panel().getByLabel('Label').fill('Poster, square');
  const out2 = canvasNode('output-2');
  await settled();
  const before = await center(out2);

  // Drag it 120 px down with the mouse (up when it is low in the canvas).
  const canvas = (await page.locator('.editor-canvas').boundingBox())!;
  const dy = before.y + 200 < canvas.y + canvas.height ? 120 : -120;
  // React Flow starts a drag on the first move past its 1 px threshold, and moves the node by
  // the pointer's travel from there: a 4 px nudge first starts it, the rest is the drag.
  await page.mouse.move(before.x, before.y);
  await page.mouse.down();
  await page.mouse.move(before.x, before.y + 4 * Math.sign(dy));
  await page.mouse.move(before.x + 10, before.y + dy / 2, { steps: 5 });
  await page.mouse.move(before.x, before.y + dy, { steps: 5 });
  await page.mouse.up();
  let dragged = before;
  await eventually(async () => {
    dragged = await center(out2);
    assert.ok(Math.abs(dragged.y - before.y - (dy - 4 * Math.sign(dy))) < 2 && Math.abs(dragged.x - before.x) < 2, `dragged from ${JSON.stringify(before)} to ${JSON.stringify(dragged)}`);
  });

  // Undo puts it back; redo moves it again.
  await page.keyboard.press('Control+z');
  await eventually(async () => {
    const undone = await center(out2);
    assert.ok(Math.abs(undone.y - before.y) < 2 && Math.abs(undone.x - before.x) < 2, `undo: ${JSON.stringify(undone)} vs ${JSON.stringify(before)}`);
  });
  await page.keyboard.press('Shift+Control+z');
  await eventually(async () => assert.ok(Math.abs((await center(out2)).y - dragged.y) < 2, 'redo'));

  // Draw prompt-1 → output-2 from prompt-1's output handle to output-2's input handle.
  const from = await center(canvasNode('prompt-1').locator('.react-flow__handle.source'));
  const to = await center(out2.locator('.react-flow__handle.target'));
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move((from.x + to.x) / 2, (from.y + to.y) / 2, { steps: 8 });
  await page.mouse.move(to.x, to.y, { steps: 8 });
  await page.mouse.up();
  const edge = page.locator('.react-flow__edge[data-edge="prompt-1->output-2"]');
  await drawn('prompt-1->output-2');
  assert.equal(await edge.getAttribute('aria-label'), 'Edge from Poster prompt to Poster, square');
  await shot('03-dragged-and-connected');

  // Undo takes the edge away, redo brings it back; the Undo button does the same as the keys.
  await page.keyboard.press('Control+z');
  await edge.waitFor({ state: 'detached' });
  await page.keyboard.press('Shift+Control+z');
  await drawn('prompt-1->output-2');
  await page.getByRole('button', { name: 'Undo' }).click();
  await edge.waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Redo' }).click();
  await drawn('prompt-1->output-2');

  const v = (await storedWorkflow(workflowId)).version;
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: `Saved: version ${v + 1}` }).waitFor();
  const saved = await storedWorkflow(workflowId);
  assert.deepEqual(saved.graph.edges.map((e: any) => `${e.from}->${e.to}`), ['text-1->prompt-1', 'prompt-1->output-1', 'prompt-1->output-2']);
});

test('the keyboard selects, moves and deletes nodes and edges; the canvas pans with arrow keys', async (t) => {
  if (!workflowId) return void t.skip('needs the workflow of the first test');
  // Tab into the canvas, to a node; Enter selects it and the panel edits it.
  await page.locator('.editor-canvas').focus();
  const vp0 = await page.locator('.react-flow__viewport').getAttribute('style');
  await page.keyboard.press('ArrowLeft');
  await eventually(async () => assert.notEqual(await page.locator('.react-flow__viewport').getAttribute('style'), vp0, 'arrow keys pan the canvas'));
  await canvasNode('output-2').focus();
  await page.keyboard.press('Enter');
  await panel().getByLabel('Label').waitFor();
  assert.equal(await panel().getByLabel('Label').inputValue(), 'Poster, square');
  const at = await center(canvasNode('output-2'));
  // The keys go to the selected node: focus it again (the panel that opened may hold the focus).
  await canvasNode('output-2').focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await eventually(async () => assert.ok((await center(canvasNode('output-2'))).x > at.x + 5, 'arrow keys move the selected node'));
  await page.keyboard.press('Control+z');
  await eventually(async () => assert.ok(Math.abs((await center(canvasNode('output-2'))).x - at.x) < 2, 'one undo takes back the run of key moves'));
  // Its edge, from the panel; Delete removes it; undo brings it back.
  await panel().getByRole('button', { name: 'from Poster prompt' }).click();
  await page.getByRole('region', { name: 'Edge' }).waitFor();
  const del = page.getByRole('button', { name: 'Delete', exact: true });
  assert.equal(await del.getAttribute('aria-describedby').then((id) => page.locator(`#${id}`).innerText()), 'Deletes the edge from Poster prompt to Poster, square');
  await del.click();
  await page.locator('.react-flow__edge[data-edge="prompt-1->output-2"]').waitFor({ state: 'detached' });
  await page.keyboard.press('Control+z');
  await drawn('prompt-1->output-2');
});

test('a server validation error shows on the node it names, announced in an alert', async (t) => {
  if (!workflowId) return void t.skip('needs the workflow of the first test');
  const v = (await storedWorkflow(workflowId)).version;
  await addNode('Prompt');
  // Left empty: the server refuses an empty prompt (/graph/nodes/4/prompt).
  await page.getByRole('button', { name: 'Save' }).click();
  const alert = page.locator('.problems[role="alert"]');
  await alert.waitFor();
  assert.match(await alert.innerText(), /Not saved: one problem[\s\S]*prompt-2: .*prompt/i);
  const bad = canvasNode('prompt-2');
  await page.locator('.react-flow__node[data-node-id="prompt-2"][data-invalid="true"]').waitFor();
  assert.match(await bad.innerText(), /prompt must be/i);
  // The panel marks the field.
  await alert.getByRole('button', { name: 'prompt-2' }).click();
  const field = panel().getByLabel('Prompt', { exact: true });
  assert.equal(await field.getAttribute('aria-invalid'), 'true');
  assert.match(await panel().innerText(), /prompt must be/i);
  await shot('04-validation-error');
  assert.equal((await storedWorkflow(workflowId)).version, v, 'nothing was saved');
  // Fixed: the problem goes with the edit, and the save goes through.
  await field.fill('A square variant');
  await page.locator('.react-flow__node[data-node-id="prompt-2"]:not([data-invalid])').waitFor();
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: `Saved: version ${v + 1}` }).waitFor();
  await none(alert);

  // A problem the server names by an edge's pointer lands on that edge. (The form draws only edges
  // the server accepts, so this answer is the server's shape played back for one request.)
  await page.route('**/api/v1/workflows/*', async (route) => {
    if (route.request().method() !== 'PUT') return route.fallback();
    await route.fulfill({
      status: 400, contentType: 'application/json',
      body: JSON.stringify({ error: { type: 'invalid_request', message: 'edge 0 (text-1 → prompt-1): a test problem', details: [{ path: '/graph/edges/0', message: 'edge 0 (text-1 → prompt-1): a test problem' }] } }),
    });
  }, { times: 1 });
  await page.getByRole('textbox', { name: 'Workflow name' }).fill('Poster from a brief, again');
  await page.getByRole('button', { name: 'Save' }).click();
  await alert.waitFor();
  assert.match(await alert.innerText(), /Edge Brief → Poster prompt: a test problem/);
  const badEdge = page.locator('.react-flow__edge[data-edge="text-1->prompt-1"]');
  await page.locator('.react-flow__edge[data-edge="text-1->prompt-1"][data-invalid="true"]').waitFor({ state: 'attached' });
  assert.match((await badEdge.getAttribute('aria-label'))!, /a test problem/);
  assert.match(await badEdge.locator('.react-flow__edge-text').textContent() ?? '', /a test problem/);
  await shot('04b-edge-problem');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: `Saved: version ${v + 2}` }).waitFor();
  await none(page.locator('.react-flow__edge[data-invalid]'));
});

test('a 412 on save says the workflow changed elsewhere and offers Reload or Overwrite', async (t) => {
  if (!workflowId) return void t.skip('needs the workflow of the first test');
  const elsewhere = async (name: string) => {
    const w = await storedWorkflow(workflowId);
    const r = await api(srv.base, key, `/workflows/${workflowId}`, { method: 'PUT', body: { name, graph: w.graph } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  };
  await elsewhere('Renamed elsewhere');
  const v = (await storedWorkflow(workflowId)).version;
  await page.getByRole('textbox', { name: 'Workflow name' }).fill('Poster from a brief, edited here');
  await page.getByRole('button', { name: 'Save' }).click();
  const conflict = page.getByRole('alert').filter({ hasText: 'changed elsewhere' });
  await conflict.waitFor();
  await shot('05-conflict');
  await conflict.getByRole('button', { name: 'Overwrite' }).click();
  await page.getByRole('status').filter({ hasText: `Saved: version ${v + 1}` }).waitFor();
  assert.equal((await storedWorkflow(workflowId)).name, 'Poster from a brief, edited here');

  await elsewhere('Renamed elsewhere again');
  await page.getByRole('textbox', { name: 'Workflow name' }).fill('Lost edit');
  await page.getByRole('button', { name: 'Save' }).click();
  await conflict.waitFor();
  await conflict.getByRole('button', { name: 'Reload' }).click();
  await page.getByRole('status').filter({ hasText: `Reloaded version ${v + 2}` }).waitFor();
  assert.equal(await page.getByRole('textbox', { name: 'Workflow name' }).inputValue(), 'Renamed elsewhere again');
});

test('an image node takes one of the account\'s generated images from the picker', async (t) => {
  if (!workflowId) return void t.skip('needs the workflow of the first test');
  await addNode('Image');
  await panel().getByRole('button', { name: 'Choose from your images' }).click();
  const pick = panel().getByRole('button', { name: /^Use image: A kiln at dusk/ });
  await pick.click();
  assert.equal(await pick.getAttribute('aria-pressed'), 'true');
  const url = await panel().getByLabel('Image URL').inputValue();
  assert.ok(url.startsWith(`${srv.origin}/files/`) && !url.includes('?'), url);
  await page.waitForFunction(() => {
    const i = document.querySelector('.react-flow__node[data-node-id="image-1"] img') as HTMLImageElement | null;
    return !!i && i.complete && i.naturalWidth > 0;
  });
  await addEdge('image-1', 'prompt-1');
  const v = (await storedWorkflow(workflowId)).version;
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: `Saved: version ${v + 1}` }).waitFor();
  assert.equal((await storedWorkflow(workflowId)).graph.nodes.find((n: any) => n.id === 'image-1').url, url);
});

test('leaving with unsaved changes asks first: a console link and Back in the console\'s dialog, a reload in the browser\'s; Cancel stays, Leave goes; without changes it leaves at once', async (t) => {
  if (!workflowId) return void t.skip('needs the workflow of the first test');
  const editUrl = `${srv.origin}/console/#/workflows/${workflowId}/edit`;
  const stored = (await storedWorkflow(workflowId)).name;
  // From the list, so that Back has an entry of the console's to go to.
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Workflows', exact: true }).click();
  await page.getByRole('link', { name: `Edit ${stored}` }).click();
  await canvasNode('output-1').waitFor();
  assert.equal(page.url(), editUrl);
  const name = page.getByRole('textbox', { name: 'Workflow name' });
  await name.fill('Renamed, not saved');
  await page.getByRole('status').filter({ hasText: 'Unsaved changes' }).waitFor();
  const ask = page.getByRole('alertdialog', { name: 'Leave without saving?' });
  const stays = async () => {
    await none(ask);
    assert.equal(page.url(), editUrl);
    assert.equal(await name.inputValue(), 'Renamed, not saved');
  };

  // A section link: asked in the console's dialog, Cancel stays (and adds no history entry).
  const depth = await page.evaluate(() => history.length);
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Workflows', exact: true }).click();
  await ask.waitFor();
  assert.match(await ask.innerText(), /Renamed, not saved.*not saved/s);
  // Cancel has the focus: Enter would change nothing.
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Cancel');
  await noSeriousViolations('the leave dialog');
  await shot('08-leave-asks');
  await ask.getByRole('button', { name: 'Cancel' }).click();
  await stays();
  assert.equal(await page.evaluate(() => history.length), depth);
  // The link in the section's intro, answered with Escape.
  await page.getByRole('link', { name: '← All workflows' }).click();
  await ask.waitFor();
  await page.keyboard.press('Escape');
  await stays();
  // Back: the address is put back while it asks.
  await page.evaluate(() => history.back());
  await ask.waitFor();
  assert.equal(page.url(), editUrl);
  await ask.getByRole('button', { name: 'Cancel' }).click();
  await stays();

  // A real navigation (here, to the API docs) gets the browser's own question; dismissed, the page stays.
  const dialog = page.waitForEvent('dialog');
  await page.evaluate(() => { setTimeout(() => { location.href = '/docs'; }, 0); });
  const d = await dialog;
  assert.equal(d.type(), 'beforeunload');
  await d.dismiss();
  await stays();

  // Leave: the list, and the name there is still the stored one.
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Workflows', exact: true }).click();
  await ask.getByRole('button', { name: 'Leave' }).click();
  await page.getByRole('button', { name: 'New workflow' }).waitFor();
  assert.match(page.url(), /#\/workflows$/);
  await page.getByRole('link', { name: stored, exact: true }).waitFor();
  assert.equal((await storedWorkflow(workflowId)).name, stored);

  // Without changes: the link leaves at once, and a reload asks nothing.
  const dialogs: string[] = [];
  const onDialog = (x: { type(): string; dismiss(): Promise<void> }) => { dialogs.push(x.type()); void x.dismiss(); };
  page.on('dialog', onDialog);
  try {
    await page.getByRole('link', { name: `Edit ${stored}` }).click();
    await canvasNode('output-1').waitFor();
    await page.reload();
    await canvasNode('output-1').waitFor();
    await page.getByRole('link', { name: '← All workflows' }).click();
    await page.getByRole('button', { name: 'New workflow' }).waitFor();
    assert.equal(await ask.count(), 0);
    assert.deepEqual(dialogs, []);
    // A new workflow left as it opened has nothing to lose either.
    await page.getByRole('button', { name: 'New workflow' }).click();
    await page.getByRole('textbox', { name: 'Workflow name' }).waitFor();
    await page.getByRole('link', { name: '← All workflows' }).click();
    await page.getByRole('button', { name: 'New workflow' }).waitFor();
    assert.equal(await ask.count(), 0);
  } finally {
    page.off('dialog', onDialog);
  }
});

test('Delete workflow asks first; deleted, it is gone from the list and from the API, and leaving asks nothing more', async () => {
  const made = await api(srv.base, key, '/workflows', {
    body: { name: 'Throwaway draft', graph: { nodes: [{ id: 'text-1', kind: 'text', text: 'x' }, { id: 'prompt-1', kind: 'prompt', output: 'image', prompt: 'y', model: 'local/sketch' }], edges: [{ from: 'text-1', to: 'prompt-1' }] } },
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  await page.goto(`${srv.origin}/console/#/workflows`);
  // The list as it is now (the page may have shown it before the workflow was made).
  await page.reload();
  await page.getByRole('link', { name: 'Edit Throwaway draft' }).click();
  await canvasNode('prompt-1').waitFor();
  // An edit not saved: deleting is not leaving it, so no second question.
  await page.getByRole('textbox', { name: 'Workflow name' }).fill('Throwaway draft, edited');
  const head = page.locator('.editor-head').getByRole('button', { name: 'Delete workflow' });
  const ask = page.getByRole('alertdialog', { name: 'Delete this workflow?' });
  await head.click();
  await ask.waitFor();
  assert.match(await ask.innerText(), /Throwaway draft, edited/);
  await shot('09-delete-asks');
  await ask.getByRole('button', { name: 'Cancel' }).click();
  await none(ask);
  assert.equal((await api(srv.base, key, `/workflows/${made.body.id}`)).status, 200, 'Cancel deletes nothing');
  await head.click();
  await ask.getByRole('button', { name: 'Delete workflow' }).click();
  await page.getByRole('button', { name: 'New workflow' }).waitFor();
  assert.match(page.url(), /#\/workflows$/);
  await page.waitForFunction(() => !document.querySelector('.loading'));
  await none(page.getByRole('link', { name: /Throwaway draft/ }));
  assert.equal(await page.getByRole('alertdialog').count(), 0);
  assert.equal((await api(srv.base, key, `/workflows/${made.body.id}`)).status, 404);
  await shot('10-deleted');
});

test('an edge drawn by hand goes around the node between its ends, never under it', async () => {
  // Three in a row: an edge from the first to the third would run straight under the middle one.
  const at = (x: number) => ({ x, y: 0 });
  const made = await api(srv.base, key, '/workflows', {
    body: {
      name: 'Routing', graph: {
        nodes: [
          { id: 'text-1', kind: 'text', text: 'A brief', label: 'Brief', position: at(0) },
          { id: 'prompt-1', kind: 'prompt', output: 'image', prompt: 'In the way', model: 'local/sketch', label: 'In the way', position: at(300) },
          { id: 'prompt-2', kind: 'prompt', output: 'image', prompt: 'Far', model: 'local/sketch', label: 'Far', position: at(600) },
          { id: 'output-1', kind: 'output', label: 'Out', position: at(900) },
        ],
        edges: [{ from: 'prompt-2', to: 'output-1' }],
      },
    },
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  await page.goto(`${srv.origin}/console/#/workflows/${made.body.id}/edit`);
  await drawn('prompt-2->output-1');
  await settled();
  const from = await center(canvasNode('text-1').locator('.react-flow__handle.source'));
  const to = await center(canvasNode('prompt-2').locator('.react-flow__handle.target'));
  const between = (await canvasNode('prompt-1').boundingBox())!;
  // The test means something: the straight way is under "In the way".
  const mx = between.x + between.width / 2;
  const my = from.y + ((to.y - from.y) * (mx - from.x)) / (to.x - from.x);
  assert.ok(between.x > from.x && between.x + between.width < to.x && between.y < my && my < between.y + between.height,
    `the middle node ${JSON.stringify(between)} is on the line from ${JSON.stringify(from)} to ${JSON.stringify(to)}`);
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move((from.x + to.x) / 2, from.y + 30, { steps: 8 });
  await page.mouse.move(to.x, to.y, { steps: 8 });
  await page.mouse.up();
  await drawn('text-1->prompt-2');
  await settled();
  await page.evaluate(GEOMETRY);
  const geometry = await page.evaluate(() => (window as any).kilnGraphGeometry({
    nodes: '.react-flow__node[data-node-id]', edges: '.react-flow__edge[data-from] path.react-flow__edge-path', reach: 10,
  }));
  assert.deepEqual(geometry.paths, ['prompt-2>output-1', 'text-1>prompt-2']);
  assert.deepEqual(geometry.problems, []);
  await page.locator('.editor-canvas').screenshot({ path: path.join(SHOTS, '11-edge-routed.png') });
  // Saved, it is the edge any client would send.
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved: version 2' }).waitFor();
  assert.deepEqual((await storedWorkflow(made.body.id)).graph.edges, [{ from: 'prompt-2', to: 'output-1' }, { from: 'text-1', to: 'prompt-2' }]);
  // Back to the first test's workflow, for the tests after this one.
  if (workflowId) {
    await page.goto(`${srv.origin}/console/#/workflows/${workflowId}/edit`);
    await canvasNode('output-1').waitFor();
  }
});

test('axe finds nothing serious or critical in the editor, in light and dark, at 1280 and 375 px; at 375 px the panel is under the canvas', async (t) => {
  if (!workflowId) return void t.skip('needs the workflow of the first test');
  // From the first test's workflow, opened afresh (not whatever the test before left on screen).
  await page.goto(`${srv.origin}/console/#/workflows/${workflowId}/edit`);
  await page.getByRole('group', { name: 'Poster prompt', exact: true }).waitFor();
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    // The scheme changes on a live page: buttons fade their background to the new one (0.15 s)
    // while their text colour switches at once. axe must read the settled colours.
    await page.waitForFunction(() => document.getAnimations().every((a) => !(a instanceof CSSTransition) || a.playState !== 'running'));
    await page.getByRole('group', { name: 'Poster prompt', exact: true }).click();
    await panel().getByLabel('Model').waitFor();
    await noSeriousViolations(`the editor with a prompt selected (${scheme})`);
    await page.getByRole('button', { name: 'Add node' }).click();
    await noSeriousViolations(`the Add node menu (${scheme})`);
    await page.keyboard.press('Escape');
    await shot(`06-editor-${scheme}`);
  }
  await page.emulateMedia({ colorScheme: 'light' });

  for (const scheme of ['light', 'dark'] as const) {
    const phone = await signIn(375, 812, scheme);
    // The phone's page in front: React Flow shows a node once a ResizeObserver measured it, which a
    // page behind another may not get to do.
    await phone.bringToFront();
    await phone.goto(`${srv.origin}/console/#/workflows/${workflowId}/edit`);
    await canvasNode('output-1', phone).waitFor().catch(async (e) => {
      // For whoever reads the failure: what the phone showed.
      await phone.screenshot({ path: path.join(SHOTS, `07-phone-${scheme}-no-node.png`), fullPage: true }).catch(() => {});
      throw e;
    });
    await phone.getByRole('group', { name: 'Poster prompt', exact: true }).click();
    await panel(phone).getByLabel('Model').waitFor();
    const [sw, cw] = await phone.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(sw <= cw, `375 px: scrollWidth ${sw} > ${cw}`);
    const canvas = (await phone.locator('.editor-canvas').boundingBox())!;
    const side = (await panel(phone).boundingBox())!;
    assert.ok(side.y >= canvas.y + canvas.height, `the panel (${side.y}) is under the canvas (${canvas.y + canvas.height})`);
    assert.ok(canvas.width >= 330 && side.width >= 330, `both take the width: ${canvas.width}, ${side.width}`);
    await noSeriousViolations(`the editor at 375 px (${scheme})`, phone);
    await shot(`07-phone-${scheme}`, phone);
    if (scheme === 'light') {
      // Too narrow for the layers side by side: Auto-layout stacks them top to bottom.
      await phone.getByRole('button', { name: 'Auto-layout' }).click();
      await eventually(async () => {
        const [t, pr, o] = await Promise.all(['text-1', 'prompt-1', 'output-1'].map((id) => center(canvasNode(id, phone))));
        assert.ok(t!.y < pr!.y && pr!.y < o!.y, `top to bottom: ${JSON.stringify([t, pr, o])}`);
      });
      await settled(phone);
      await phone.locator('.editor-canvas').screenshot({ path: path.join(SHOTS, '07-phone-canvas.png') });
    }
    await phone.context().close();
  }
});

test('no request left the origin, no CSP violation, and the browser logged no error', async () => {
  assert.ok(requests.length > 10);
  const away = requests.filter((u) => !u.startsWith('data:') && !u.startsWith('blob:') && new URL(u).origin !== srv.origin);
  assert.deepEqual(away, []);
  assert.deepEqual(problems.filter((p) => !/status of 4(00|12)/.test(p)), []);
});
