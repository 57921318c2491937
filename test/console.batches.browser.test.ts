// The console's Batches section (docs/console.md, "Batches") in Chromium (playwright-core) against
// the real server and worker, with a local model that takes 300 ms a line and an account of two
// parallel slots, so that a 20-line batch runs for a few seconds: the empty state; an upload
// refused with every pointer listed; the list with a batch's progress bar; the batch page's bar
// growing from its event stream (the page does not poll) to completed, its lines linking to their
// generations, and Download results saved as batch-<id>.jsonl naming every custom_id once;
// Cancel (after a confirm) ending another running batch canceled; an upload that starts a batch;
// Load more; axe in light and dark. Screenshots go to test/artifacts/console-batches/.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { money } from '../src/console/app/api.ts';
import { until } from './_generations.ts';
import { startTestWorker } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

const CHROMIUM = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.resolve(import.meta.dirname, 'artifacts', 'console-batches');
const AXE = fs.readFileSync(path.resolve(import.meta.dirname, '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

let srv: TestServer;
let key: string;
let browser: Browser;
let page: Page;
const problems: string[] = [];
const requests: string[] = [];

async function shot(name: string) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

async function noSeriousViolations(where: string) {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n: any) => n.target.join(' ')).slice(0, 3) }));
  });
  assert.deepEqual(found.filter((v: { impact: string }) => v.impact === 'serious' || v.impact === 'critical'), [], `axe on ${where}`);
}

const line = (custom_id: string, body: Record<string, unknown>) => JSON.stringify({ custom_id, method: 'POST', url: '/api/v1/generations', body });

async function createBatch(lines: string[]): Promise<any> {
  const res = await fetch(`${srv.base}/batches`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/jsonl' }, body: lines.join('\n') + '\n',
  });
  const body = await res.json();
  assert.equal(res.status, 202, JSON.stringify(body));
  return body;
}

const getBatch = async (id: string) => (await api(srv.base, key, `/batches/${id}`)).body;

/** The batch page's bar as the page shows it. */
const bar = () => page.evaluate(() => {
  const b = document.querySelector<HTMLElement>('.batch-detail .batch-bar')!;
  const seg = b.querySelector<HTMLElement>('.seg-completed');
  return {
    now: Number(b.getAttribute('aria-valuenow')),
    max: Number(b.getAttribute('aria-valuemax')),
    completed: Number(b.dataset.completed),
    width: b.clientWidth,
    completedWidth: seg ? seg.getBoundingClientRect().width : 0,
  };
});

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: install it (apt-get install -y chromium) or set KILN_CHROMIUM`);
  fs.mkdirSync(SHOTS, { recursive: true });
  srv = await startServer();
  const text = { category: 'text', provider: 'local', cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1 };
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({ id: 'local/batch-300', name: 'Batch 300 ms (test)', upstream: { delayMs: 300, stream: false }, ...text })})`;
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({ id: 'local/batch-slow', name: 'Batch slow (test)', upstream: { delayMs: 4000, stream: false }, ...text })})`;
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  // Two lines at a time: 20 lines of 300 ms take about three seconds.
  await srv.db.sql`update kiln_private.accounts set parallel_slots = 2 where id = ${a.id}`;
  key = (await createKey(srv.db.sql, a.id)).key;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-gpu', '--disable-quic', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: 'light', acceptDownloads: true });
  page = await context.newPage();
  page.setDefaultTimeout(30_000);
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.goto(`${srv.origin}/console/`);
  await page.getByRole('textbox', { name: 'API key' }).fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});

after(async () => {
  await browser?.close();
});

test('no batches yet: the empty state says how to make one (a JSONL line and the curl command)', async () => {
  await page.getByRole('navigation').getByRole('link', { name: 'Batches', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Batches' }).waitFor();
  const empty = page.locator('.batches-empty');
  await empty.waitFor();
  const text = await empty.innerText();
  assert.match(text, /No batches yet/);
  assert.ok(text.includes(`curl -X POST ${srv.origin}/api/v1/batches`), text);
  assert.match(text, /Content-Type: application\/jsonl/);
  assert.match(text, /"custom_id": "hero-1"/);
  await noSeriousViolations('the empty Batches page');
  await shot('01-empty');
});

test('upload: a refused file lists every problem by its pointer, and starts nothing', async () => {
  const bad = [line('ok', { type: 'code', prompt: 'fine' }), '{not json', line('ok', { type: 'code', prompt: 'again' }), line('m', { type: 'code', prompt: 'x', model: 'no/such-model' })].join('\n');
  await page.getByLabel('Batch file (.jsonl)').setInputFiles({ name: 'bad.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(bad) });
  await page.getByRole('button', { name: 'Start batch' }).click();
  const alert = page.locator('.upload [role="alert"]');
  await alert.waitFor();
  const items = await alert.locator('li').allInnerTexts();
  assert.deepEqual(items.map((t) => t.split(' ')[0]), ['/lines/2', '/lines/3/custom_id', '/lines/4/body/model'], items.join('\n'));
  assert.match(await alert.innerText(), /3 problems\. Nothing was started/);
  // A 400 is an expected answer, but Chromium reports every failed fetch as a console error.
  for (let i = problems.length - 1; i >= 0; i--) if (/status of 400/.test(problems[i]!)) problems.splice(i, 1);
  assert.equal((await api(srv.base, key, '/batches')).body.data.length, 0);
  await shot('02-upload-refused');
});

let doneId: string;

test('a running batch: the list shows its bar; its page\'s bar grows live to completed; its lines link to their generations; Download results names every custom_id once', async () => {
  const ids = Array.from({ length: 20 }, (_, i) => `product-${String(i + 1).padStart(2, '0')}`);
  const b = await createBatch(ids.map((id) => line(id, { type: 'code', prompt: `Copy for ${id}`, model: 'local/batch-300' })));
  doneId = b.id;
  await page.getByRole('button', { name: 'Refresh' }).click();
  const row = page.locator(`tr[data-batch-id="${b.id}"]`);
  await row.waitFor();
  assert.equal(await row.getByRole('progressbar').getAttribute('aria-valuemax'), '20');
  assert.match(await row.innerText(), /in progress/i);
  await shot('03-list-running');

  await row.getByRole('link').click();
  await page.waitForSelector(`.batch-detail[data-batch-id="${b.id}"]`);
  // The bar as the stream moves it: every distinct value seen, each read while the batch runs.
  const seen = new Set<number>();
  let mid = false;
  for (let i = 0; i < 600; i++) {
    const now = (await bar()).now;
    seen.add(now);
    if (!mid && now >= 4 && now <= 14) {
      await shot('04-batch-mid-run');
      mid = true;
    }
    if (now === 20) break;
    await page.waitForTimeout(25);
  }
  const running = [...seen].filter((n) => n > 0 && n < 20);
  assert.ok(running.length >= 3, `the bar grew in steps while the batch ran: ${[...seen].sort((x, y) => x - y).join(', ')}`);
  assert.ok(mid, 'a screenshot mid-run');
  await page.waitForSelector('.batch-detail[data-status="completed"]');
  const done = await getBatch(b.id);
  assert.equal(done.status, 'completed');
  assert.equal((await bar()).completed, 20);
  // Once its width's transition has run, the completed segment fills the bar.
  await page.waitForFunction(() => {
    const b = document.querySelector<HTMLElement>('.batch-detail .batch-bar')!;
    return Math.abs(b.querySelector('.seg-completed')!.getBoundingClientRect().width - b.clientWidth) <= 1;
  }, undefined, { timeout: 5000 }).catch(async () => assert.fail(`the completed segment does not fill the bar: ${JSON.stringify(await bar())}`));
  assert.equal(await page.locator('[data-spend]').innerText(), money(done.spentMicros));
  assert.ok(done.spentMicros > 0);
  assert.equal(await page.getByRole('button', { name: 'Cancel batch' }).isDisabled(), true, 'nothing to cancel once it ended');
  // Every line in the table, completed (refreshed as lines end), each linking to its generation.
  await page.waitForFunction(() => document.querySelectorAll('table.lines tbody tr [data-status="completed"]').length === 20);
  const customIds = await page.locator('table.lines tbody tr').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.customId));
  assert.deepEqual([...customIds].sort(), ids);
  await shot('05-batch-done');

  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Download results' }).click();
  const file = await download;
  assert.equal(file.suggestedFilename(), `batch-${b.id}.jsonl`);
  const lines = fs.readFileSync((await file.path())!, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.custom_id).sort(), ids, 'every custom_id once');
  assert.ok(lines.every((l) => l.response?.status_code === 200 && l.response.body.batchId === b.id));
  await page.getByText(`Saved batch-${b.id}.jsonl`).waitFor();

  // A line's link opens its generation.
  const first = page.locator('table.lines tbody tr').first();
  const generationId = await first.getAttribute('data-generation-id');
  await first.getByRole('link').click();
  await page.getByRole('heading', { level: 1, name: 'Generations' }).waitFor();
  assert.equal(new URL(page.url()).hash, `#/generations/${generationId}`);
  await page.locator('.detail [data-status="completed"]').first().waitFor();
  await page.goBack();
  await page.waitForSelector(`.batch-detail[data-batch-id="${b.id}"]`);
});

test('Cancel on a running batch asks first ("Keep running" changes nothing), then ends it canceled, its waiting lines uncharged', async () => {
  const b = await createBatch(Array.from({ length: 20 }, (_, i) => line(`slow-${i + 1}`, { type: 'code', prompt: `Slow ${i + 1}`, model: 'local/batch-slow' })));
  await page.goto(`${srv.origin}/console/#/batches/${b.id}`);
  await page.waitForSelector(`.batch-detail[data-batch-id="${b.id}"][data-status="in_progress"]`);
  const cancel = page.getByRole('button', { name: 'Cancel batch' });
  await cancel.click();
  const dialog = page.getByRole('alertdialog', { name: 'Cancel this batch?' });
  await dialog.waitFor();
  assert.match(await dialog.innerText(), /20 lines not yet ended/);
  await noSeriousViolations('the cancel dialog');
  await dialog.getByRole('button', { name: 'Keep running' }).click();
  await dialog.waitFor({ state: 'hidden' });
  assert.equal((await getBatch(b.id)).status, 'in_progress', 'Keep running leaves it running');

  await cancel.click();
  await dialog.getByRole('button', { name: 'Cancel batch' }).click();
  await dialog.waitFor({ state: 'hidden' });
  await page.waitForSelector(`.batch-detail[data-status="canceled"]`);
  const ended = await getBatch(b.id);
  assert.equal(ended.status, 'canceled');
  assert.equal(ended.requestCounts.completed, 0);
  assert.equal(ended.requestCounts.canceled + ended.requestCounts.failed, 20);
  assert.ok(ended.requestCounts.canceled >= 18, JSON.stringify(ended.requestCounts));
  assert.equal(ended.spentMicros, 0);
  assert.equal(await cancel.isDisabled(), true);
  const shown = await page.evaluate(() => document.querySelector<HTMLElement>('.batch-detail .batch-bar')!.dataset);
  assert.equal(Number(shown.canceled), ended.requestCounts.canceled);
  assert.match(await page.locator('.live-note').innerText(), /Canceled/);
  // The lines table follows: every line failed, with the reason, and nothing charged.
  await page.waitForFunction(() => document.querySelectorAll('table.lines tbody tr [data-status="failed"]').length === 20);
  const costs = await page.locator('table.lines tbody tr td.num').allInnerTexts();
  assert.deepEqual(new Set(costs), new Set(['$0']));
  await shot('06-batch-canceled');

  // The list: both, newest first, with their statuses.
  await page.goto(`${srv.origin}/console/#/batches`);
  await page.waitForSelector('table.batches');
  const rows = await page.locator('table.batches tbody tr').evaluateAll((rs) => rs.map((r) => [(r as HTMLElement).dataset.batchId, (r as HTMLElement).dataset.status]));
  assert.deepEqual(rows, [[b.id, 'canceled'], [doneId, 'completed']]);
  await shot('07-list-ended');
});

test('upload: a good file starts a batch and opens its page', async () => {
  const good = [line('up-1', { type: 'code', prompt: 'One', model: 'local/batch-300' }), line('up-2', { type: 'code', prompt: 'Two', model: 'local/batch-300' })].join('\n');
  await page.getByLabel('Batch file (.jsonl)').setInputFiles({ name: 'good.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(good) });
  await page.getByRole('button', { name: 'Start batch' }).click();
  await page.waitForURL(/#\/batches\/[0-9a-f-]{36}$/);
  const id = new URL(page.url()).hash.split('/')[2]!;
  await page.waitForSelector(`.batch-detail[data-batch-id="${id}"][data-status="completed"]`);
  const b = await getBatch(id);
  assert.deepEqual(b.requestCounts, { total: 2, completed: 2, failed: 0, canceled: 0 });
});

test('Load more reads the next page of batches; axe finds nothing serious on the list and a batch, light and dark', async () => {
  // 18 more one-line batches: 21 in all, one more than a page.
  for (let i = 0; i < 18; i++) await createBatch([line(`one-${i}`, { type: 'code', prompt: `One ${i}` })]);
  await until('every batch ended', async () => {
    const all = (await api(srv.base, key, '/batches?limit=100')).body.data;
    return all.length === 21 && all.every((b: { status: string }) => b.status !== 'in_progress');
  }, 60_000, 200);
  await page.goto(`${srv.origin}/console/#/batches`);
  await page.waitForSelector('table.batches');
  assert.equal(await page.locator('table.batches tbody tr').count(), 20);
  await page.getByRole('button', { name: 'Load more' }).click();
  await page.waitForFunction(() => document.querySelectorAll('table.batches tbody tr').length === 21);
  assert.equal(await page.locator(`table.batches tbody tr[data-batch-id="${doneId}"]`).count(), 1, 'the oldest batch on the second page');
  assert.equal(await page.getByRole('button', { name: 'Load more' }).count(), 0, 'no third page');
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`${srv.origin}/console/#/batches`);
    await page.waitForSelector('table.batches');
    await noSeriousViolations(`the Batches list (${scheme})`);
    await page.goto(`${srv.origin}/console/#/batches/${doneId}`);
    await page.waitForFunction(() => document.querySelectorAll('table.lines tbody tr').length > 0);
    await noSeriousViolations(`a batch (${scheme})`);
    if (scheme === 'dark') await shot('08-batch-dark');
  }
  await page.emulateMedia({ colorScheme: 'light' });
});

test('no request left the origin, and the browser logged no error', () => {
  const origin = new URL(srv.origin).origin;
  assert.deepEqual(requests.filter((u) => !u.startsWith(origin) && !u.startsWith('blob:') && !u.startsWith('data:')), []);
  assert.deepEqual(problems, []);
});
