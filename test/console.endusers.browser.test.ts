// The Overview chart split by end user and by a metadata key, and the End users page
// (docs/console.md, "Splitting the chart" and "End users"), in Chromium (playwright-core) against the
// real server and worker. Spend is made through POST /generations with the local models (images of
// local/sketch, code of local/coder), each naming an end user and metadata or not; a few charges are
// then moved back one or two days with an UPDATE of kiln_private.charges (the roll-up triggers follow
// it), on an account whose period started three days ago, so the chart has several days. Checked: the
// split's stacks of every day add up exactly to the unsplit bar (read from the charts' tables' data
// attributes), its legend (the 8 largest, others, the null group) and its links to the gallery; the
// split kept in the URL; a bad key told and not sent; the End users page by spend with Load more, a
// cap set, shown and removed, the API's validation errors on their fields, another month, a key
// without the `keys` scope; axe, and 375 px. Screenshots: test/artifacts/console-endusers/.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startTestWorker, waitFor } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

const CHROMIUM = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.resolve(import.meta.dirname, 'artifacts', 'console-endusers');
const AXE = fs.readFileSync(path.resolve(import.meta.dirname, '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

let srv: TestServer;
let key: string;
let readKey: string;
let browser: Browser;
let page: Page;
const problems: string[] = [];
/** Set while a test sends a body the API refuses on purpose. */
let expect400 = false;

/** End users with images (local/sketch): how many each. */
const IMAGES: Record<string, number> = { cust_a: 4, cust_b: 3, cust_c: 2, cust_d: 1, cust_e: 1, cust_f: 1, cust_g: 1, cust_h: 1, cust_i: 1, cust_j: 1 };
/** End users with one code generation each: cheap, so past the top 8 and the first page of End users. */
const BULK = Array.from({ length: 20 }, (_, i) => `bulk_${String(i + 1).padStart(2, '0')}`);
const ids: Record<string, string[]> = {};

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

async function make(body: Record<string, unknown>, name: string): Promise<string> {
  const r = await api(srv.base, key, '/generations', { body: { type: 'image', prompt: `Seed ${name}`, ...body } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  (ids[name] ??= []).push(r.body.id);
  return r.body.id as string;
}

async function backdate(id: string, days: number) {
  await srv.db.sql`update kiln_private.charges set created_at = created_at - make_interval(days => ${days}) where generation_id = ${id}`;
}

async function signIn(p: Page, k: string) {
  await p.goto(`${srv.origin}/console/`);
  await p.getByRole('textbox', { name: 'API key' }).fill(k);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

/** Per day, what a chart's table (the one shown) lists: the sum of its rows' microdollars. */
async function tableByDay(p: Page, selector: string): Promise<Record<string, number>> {
  return p.locator(`${selector} .chart-table tr[data-day]`).evaluateAll((rows) => {
    const out: Record<string, number> = {};
    for (const r of rows as HTMLElement[]) out[r.dataset.day!] = (out[r.dataset.day!] ?? 0) + Number(r.dataset.micros);
    return out;
  });
}

/** The split legend: each entry's series key, its kind, its words and its total. */
async function legend(p: Page = page) {
  return p.locator('.split-legend li').evaluateAll((lis) => (lis as HTMLElement[]).map((li) => ({
    key: li.dataset.series!, kind: li.dataset.kind!, text: li.textContent!.replace(/\s+/g, ' ').trim(), total: Number(li.dataset.totalMicros),
  })));
}

/** Waits for the split chart of `groupBy` (its answer arrived) and returns it. */
async function splitChart(groupBy: string, p: Page = page) {
  const chart = p.locator(`.split-chart[data-group-by="${groupBy}"]`);
  await chart.waitFor();
  return chart;
}

const hash = (p: Page = page) => p.evaluate(() => decodeURIComponent(location.hash));

let unsplit: Record<string, number>;
let image = 0;

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: install it (apt-get install -y chromium) or set KILN_CHROMIUM`);
  fs.mkdirSync(SHOTS, { recursive: true });
  srv = await startServer();
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  // The period started three days ago (before any charge), so charges moved back a day or two are in it.
  await srv.db.sql`update kiln_private.accounts set period_anchor = period_anchor - interval '3 days' where id = ${a.id}`;
  key = (await createKey(srv.db.sql, a.id, { rpm: 6000, scopes: ['read', 'write', 'keys'] })).key;
  readKey = (await createKey(srv.db.sql, a.id, { rpm: 6000, scopes: ['read', 'write'] })).key;
  const jobs: Array<Promise<string>> = [];
  for (const [user, n] of Object.entries(IMAGES)) {
    for (let i = 0; i < n; i++) jobs.push(make({ endUser: user, metadata: { project: user <= 'cust_b' ? 'alpha' : 'beta' } }, user));
  }
  jobs.push(make({}, 'none'), make({ metadata: { project: 'alpha' } }, 'none'));
  for (const user of BULK) jobs.push(make({ type: 'code', targetLanguage: 'css', endUser: user }, user));
  const all = await Promise.all(jobs);
  for (const id of all) await waitFor(srv, key, id);
  // Three days of spend: one of cust_a's two days back, one of cust_b's and one without an end user a day back.
  await backdate(ids.cust_a![0]!, 2);
  await backdate(ids.cust_b![0]!, 1);
  await backdate(ids.none![0]!, 1);
  const g = await api(srv.base, key, `/generations/${ids.cust_d![0]}`);
  image = g.body.result.costMicros;
  assert.ok(image > 0, JSON.stringify(g.body));

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-gpu', '--disable-quic', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
  page = await context.newPage();
  page.setDefaultTimeout(30_000);
  page.on('console', (m) => {
    if (m.type() === 'error' && !(expect400 && /status of 400/.test(m.text()))) problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('request', (r) => { if (!r.url().startsWith(srv.origin) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) problems.push(`off-origin: ${r.url()}`); });
  await signIn(page, key);
});

after(async () => {
  await browser?.close();
});

test('split by end user: the 8 largest, others and "no end user"; every day\'s stacks add up to its bar unsplit', async () => {
  await page.locator('.chart:not(.split-chart) .chart-table').waitFor();
  unsplit = await tableByDay(page, '.chart:not(.split-chart)');
  assert.equal(Object.keys(unsplit).length, 3, `three days of spend: ${JSON.stringify(unsplit)}`);
  const daily = await api(srv.base, key, '/usage/daily');
  const apiByDay: Record<string, number> = {};
  for (const d of daily.body.days) apiByDay[d.day] = (apiByDay[d.day] ?? 0) + d.spend_micros;
  assert.deepEqual(unsplit, apiByDay, 'the unsplit table is GET /usage/daily');
  await shot('01-unsplit');

  await page.getByLabel('Split by').selectOption('endUser');
  const chart = await splitChart('endUser');
  assert.equal(await hash(), '#/overview?groupBy=endUser');
  await page.getByRole('heading', { name: 'Daily spend by end user' }).waitFor();
  const entries = await legend();
  assert.deepEqual(entries.map((e) => e.key), [
    'group:cust_a', 'group:cust_b', 'group:cust_c', 'group:cust_d', 'group:cust_e', 'group:cust_f', 'group:cust_g', 'group:cust_h', 'others', 'none',
  ]);
  assert.equal(entries[0]!.total, 4 * image);
  assert.equal(entries[3]!.total, image);
  // cust_i, cust_j and the 20 bulk_ end users.
  assert.match(entries.find((e) => e.kind === 'others')!.text, /^others \(22 more groups\)/);
  assert.match(entries.find((e) => e.kind === 'none')!.text, /^no end user \$/);
  assert.equal(entries.find((e) => e.kind === 'none')!.total, 2 * image);
  // The stacks of each day, from the split chart's table, against the unsplit bars.
  const split = await tableByDay(page, '.split-chart');
  assert.deepEqual(split, unsplit, 'each day\'s stacks add up exactly to its unsplit bar');
  assert.equal(Number(await chart.getAttribute('data-total-micros')), Object.values(unsplit).reduce((a, b) => a + b, 0));
  // Each group is one series across days: cust_a on two days, in one legend entry.
  const aDays = await page.locator('.split-chart .chart-table tr[data-series="group:cust_a"]').count();
  assert.equal(aDays, 2, 'cust_a spent on two days');
  const name = await page.getByRole('img', { name: /Daily spend by end user/ }).getAttribute('aria-label');
  assert.match(name!, /cust_a \$.*others \$.*no end user \$/, name!);
  await noSeriousViolations('the chart split by end user');
  await shot('02-split-end-user');

  // A group of the legend opens the gallery filtered by it.
  await page.locator('.split-legend').getByRole('link', { name: 'cust_a', exact: true }).click();
  await page.waitForFunction(() => location.hash === '#/generations?endUser=cust_a');
  await page.waitForFunction(() => document.querySelector<HTMLElement>('.gallery-results')?.dataset.filters === location.hash && document.querySelectorAll('.gallery .tile').length === 4);
  const tiles = await page.locator('.gallery .tile').evaluateAll((ts) => ts.map((t) => t.getAttribute('data-generation-id')).sort());
  assert.deepEqual(tiles, [...ids.cust_a!].sort());
  // Back: the split chart as it was (the URL kept it).
  await page.goBack();
  await splitChart('endUser');
  assert.equal(await page.getByLabel('Split by').inputValue(), 'endUser');
});

test('split by a metadata key; a bad key is told and not sent; a reload keeps the split', async () => {
  await page.getByLabel('Split by').selectOption('metadata');
  const field = page.getByLabel('Metadata key', { exact: true });
  await field.fill('bad key');
  await field.press('Enter');
  assert.match(await page.locator('.split-bar [role="alert"]').innerText(), /"bad key" is not a key/);
  assert.equal(await hash(), '#/overview?groupBy=endUser', 'nothing applied');
  await shot('03-bad-key');
  await field.fill('project');
  await field.press('Enter');
  await splitChart('metadata.project');
  assert.equal(await hash(), '#/overview?groupBy=metadata.project');
  assert.equal(await page.locator('.split-bar [role="alert"]').count(), 0);
  const entries = await legend();
  assert.deepEqual(entries.map((e) => [e.key, e.total]), [
    // beta: cust_c ×2 and cust_d…cust_j; alpha: cust_a ×4, cust_b ×3 and one without an end user.
    ['group:beta', 9 * image], ['group:alpha', 8 * image], ['none', Object.values(unsplit).reduce((a, b) => a + b, 0) - 17 * image],
  ]);
  assert.match(entries[2]!.text, /^no project \$/);
  assert.deepEqual(await tableByDay(page, '.split-chart'), unsplit);
  await page.getByRole('heading', { name: 'Daily spend by project' }).waitFor();
  await shot('04-split-project');

  await page.reload();
  await splitChart('metadata.project');
  assert.equal(await page.getByLabel('Split by').inputValue(), 'metadata');
  assert.equal(await page.getByLabel('Metadata key', { exact: true }).inputValue(), 'project');
  await page.locator('.split-legend').getByRole('link', { name: 'alpha', exact: true }).click();
  await page.waitForFunction(() => location.hash === '#/generations?metadata[project]=alpha');
  await page.waitForFunction(() => document.querySelector<HTMLElement>('.gallery-results')?.dataset.filters === location.hash && document.querySelectorAll('.gallery .tile').length === 8);

  // A link with a key the API would refuse says so, and draws the chart unsplit.
  await page.goto(`${srv.origin}/console/#/overview?groupBy=metadata.bad%20key`);
  await page.locator('.card [role="alert"]').filter({ hasText: '"bad key" is not a key' }).waitFor();
  await page.locator('.chart:not(.split-chart)').waitFor();
  // Unsplit again.
  await page.goto(`${srv.origin}/console/#/overview?groupBy=endUser`);
  await splitChart('endUser');
  await page.getByLabel('Split by').selectOption('none');
  await page.locator('.chart:not(.split-chart) .chart-table').waitFor();
  assert.equal(await hash(), '#/overview');
});

/** The End users table: end user, the used figure and the generations, in order. */
async function endUserRows(p: Page = page) {
  return p.locator('table.end-users tbody tr[data-end-user]').evaluateAll((rs) => (rs as HTMLElement[]).map((r) => ({
    endUser: r.dataset.endUser!, used: Number(r.dataset.usedMicros), generations: Number(r.children[2]!.textContent!.replace(/,/g, '')),
  })));
}

test('End users: by spend as GET /end-users says, Load more, each a link to its generations', async () => {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'End users', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'End users' }).waitFor();
  await page.waitForFunction(() => document.querySelectorAll('table.end-users tbody tr[data-end-user]').length === 25);
  const all: Array<{ endUser: string; usedMicros: number; generations: number }> = [];
  let cursor: string | null = null;
  do {
    const r = await api(srv.base, key, `/end-users?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    all.push(...r.body.data);
    cursor = r.body.nextCursor;
  } while (cursor);
  assert.equal(all.length, 30);
  const expected = all.map((u) => ({ endUser: u.endUser, used: u.usedMicros, generations: u.generations }));
  assert.deepEqual(await endUserRows(), expected.slice(0, 25));
  assert.deepEqual(expected.slice(0, 3).map((u) => [u.endUser, u.used, u.generations]), [['cust_a', 4 * image, 4], ['cust_b', 3 * image, 3], ['cust_c', 2 * image, 2]]);
  // Every row's cap is read: none has one yet.
  await page.waitForFunction(() => [...document.querySelectorAll('table.end-users td.cap')].every((c) => c.textContent === 'No cap'));
  await page.getByRole('button', { name: 'Load more' }).click();
  await page.waitForFunction(() => document.querySelectorAll('table.end-users tbody tr[data-end-user]').length === 30);
  assert.deepEqual(await endUserRows(), expected);
  assert.equal(await page.getByRole('button', { name: 'Load more' }).count(), 0, 'the last page');
  await noSeriousViolations('End users');
  await shot('05-end-users');

  await page.locator('table.end-users').getByRole('link', { name: 'cust_b', exact: true }).click();
  await page.waitForFunction(() => location.hash === '#/generations?endUser=cust_b');
  await page.waitForFunction(() => document.querySelector<HTMLElement>('.gallery-results')?.dataset.filters === location.hash && document.querySelectorAll('.gallery .tile').length === 3);
  await page.goBack();
  await page.getByRole('heading', { level: 1, name: 'End users' }).waitFor();
});

test('a cap set, shown and removed; the API\'s validation errors next to their fields', async () => {
  const row = page.locator('table.end-users tr[data-end-user="cust_a"]');
  await row.getByRole('button', { name: 'Set cap of cust_a' }).click();
  const form = page.getByRole('form', { name: 'Cap of cust_a' });
  await form.getByLabel('Budget, $').fill('-1');
  await form.getByLabel('Requests per minute').fill('0');
  expect400 = true;
  try {
    const refused = page.waitForResponse((r) => r.request().method() === 'PUT' && r.status() === 400);
    await form.getByRole('button', { name: 'Save cap' }).click();
    const body = await (await refused).json();
    const byPath = Object.fromEntries(body.error.details.map((d: any) => [d.path, d.message]));
    assert.ok(byPath['/budgetMicros'] && byPath['/rpm'], JSON.stringify(body));
    // Each of the API's messages under its own field, which is marked invalid and described by it.
    const budget = form.getByLabel('Budget, $');
    await page.waitForFunction(() => document.querySelectorAll('.cap-form .field-problem').length === 2);
    const budgetProblem = await budget.getAttribute('aria-describedby');
    assert.equal(await page.locator(`#${budgetProblem}`).innerText(), byPath['/budgetMicros']);
    assert.equal(await budget.getAttribute('aria-invalid'), 'true');
    const rpm = form.getByLabel('Requests per minute');
    assert.equal(await page.locator(`#${await rpm.getAttribute('aria-describedby')}`).innerText(), byPath['/rpm']);
    assert.equal(await form.getByLabel('Per', { exact: true }).getAttribute('aria-invalid'), null, 'the period was fine');
    await shot('06-cap-refused');
  } finally {
    expect400 = false;
  }
  // Not a number: told here, nothing sent.
  await form.getByLabel('Budget, $').fill('two dollars');
  let sent = 0;
  const count = (r: { method(): string }) => { if (r.method() === 'PUT') sent++; };
  page.on('request', count);
  await form.getByRole('button', { name: 'Save cap' }).click();
  await form.getByText('Enter an amount in dollars').waitFor();
  page.off('request', count);
  assert.equal(sent, 0);

  await form.getByLabel('Budget, $').fill('2.5');
  await form.getByLabel('Per', { exact: true }).selectOption('day');
  await form.getByLabel('Requests per minute').fill('30');
  await form.getByRole('button', { name: 'Save cap' }).click();
  await row.locator('td.cap').getByText('$2.50 a day, 30 requests a minute').waitFor();
  assert.equal(await form.count(), 0, 'the form closes');
  const capped = await api(srv.base, key, '/end-users/cust_a');
  assert.deepEqual([capped.body.budgetMicros, capped.body.period, capped.body.rpm], [2_500_000, 'day', 30]);
  // Today's use of the cap (cust_a's charges today: one was moved back two days).
  assert.match(await row.locator('td.cap').innerText(), new RegExp(`\\${fmt(capped.body.usedMicros)} used this day, \\${fmt(capped.body.remainingMicros)} left`));
  assert.equal(await row.getAttribute('data-cap-micros'), '2500000');
  await shot('07-cap-set');

  // Changing it: the form opens with the cap.
  await row.getByRole('button', { name: 'Change cap of cust_a' }).click();
  assert.equal(await form.getByLabel('Budget, $').inputValue(), '2.5');
  assert.equal(await form.getByLabel('Per', { exact: true }).inputValue(), 'day');
  assert.equal(await form.getByLabel('Requests per minute').inputValue(), '30');
  await form.getByRole('button', { name: 'Cancel' }).click();

  await row.getByRole('button', { name: 'Remove cap of cust_a' }).click();
  const dialog = page.getByRole('alertdialog', { name: 'Remove the cap of cust_a?' });
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  assert.equal((await api(srv.base, key, '/end-users/cust_a')).body.budgetMicros, 2_500_000, 'Cancel removes nothing');
  await row.getByRole('button', { name: 'Remove cap of cust_a' }).click();
  await dialog.getByRole('button', { name: 'Remove cap' }).click();
  await row.locator('td.cap').getByText('No cap', { exact: true }).waitFor();
  assert.equal((await api(srv.base, key, '/end-users/cust_a')).body.budgetMicros, null);
  await row.getByRole('button', { name: 'Set cap of cust_a' }).waitFor();
});

/** Microdollars as the console writes them (api.ts money), for a pattern. */
function fmt(micros: number): string {
  const d = micros / 1e6;
  return d >= 1 ? `$${d.toFixed(2)}` : `$${d.toFixed(6).replace(/0+$/, '').replace(/\.$/, '')}`;
}

test('another month (none spent then); a key without the keys scope reads caps but sets none', async () => {
  const last = new Date();
  last.setUTCDate(1);
  last.setUTCMonth(last.getUTCMonth() - 1);
  const month = last.toISOString().slice(0, 7);
  await page.getByLabel('Month', { exact: true }).fill(month);
  await page.waitForFunction((m) => location.hash === `#/end-users?month=${m}`, month);
  await page.getByText(/^No end user spent in /).waitFor();
  await page.getByRole('link', { name: 'This month' }).click();
  await page.waitForFunction(() => document.querySelectorAll('table.end-users tbody tr[data-end-user]').length === 25);

  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const p = await ctx.newPage();
  p.setDefaultTimeout(30_000);
  p.on('pageerror', (e) => problems.push(`read-only pageerror: ${e.message}`));
  await signIn(p, readKey);
  await p.goto(`${srv.origin}/console/#/end-users`);
  await p.getByText('This key can read caps but not set them').waitFor();
  await p.waitForFunction(() => document.querySelectorAll('table.end-users tbody tr[data-end-user]').length === 25);
  assert.equal(await p.getByRole('button', { name: /cap of/ }).count(), 0);
  await ctx.close();
});

test('phone width: the split chart and End users fit 375 px with no sideways scroll', async () => {
  let phone: BrowserContext | undefined;
  try {
    phone = await browser.newContext({ viewport: { width: 375, height: 812 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    const p = await phone.newPage();
    p.setDefaultTimeout(30_000);
    p.on('pageerror', (e) => problems.push(`phone pageerror: ${e.message}`));
    await signIn(p, key);
    await p.goto(`${srv.origin}/console/#/overview?groupBy=endUser`);
    await splitChart('endUser', p);
    assert.deepEqual(await tableByDay(p, '.split-chart'), unsplit);
    assert.ok(await p.evaluate(() => document.documentElement.scrollWidth) <= 375, 'the overview scrolls sideways');
    await shot('08-phone-split', p);
    await p.locator('.split-chart').screenshot({ path: path.join(SHOTS, '08-phone-split-chart.png') });
    await p.goto(`${srv.origin}/console/#/end-users`);
    await p.waitForFunction(() => document.querySelectorAll('table.end-users tbody tr[data-end-user]').length === 25);
    await p.locator('table.end-users tr[data-end-user="cust_c"]').getByRole('button', { name: 'Set cap of cust_c' }).click();
    await p.getByRole('form', { name: 'Cap of cust_c' }).waitFor();
    assert.ok(await p.evaluate(() => document.documentElement.scrollWidth) <= 375, 'End users scrolls sideways');
    // Nor does the table inside its card: each row is laid out to the width, the cap form too.
    const [inner, box] = await p.locator('.end-users-results .table-card').evaluate((c) => [c.scrollWidth, c.clientWidth]);
    assert.ok(inner <= box, `the table is ${inner} px wide in a card of ${box}`);
    await shot('09-phone-end-users', p);
  } finally {
    await phone?.close();
  }
});

test('the browser logged no unexpected error and asked nothing off the origin', () => {
  assert.deepEqual(problems, []);
});
