// The gallery filtered by attribution (docs/api.md, "Attribution"; docs/console.md, "Generations") in
// Chromium (playwright-core) against the real server and worker: generations made through
// POST /generations with an end user and metadata (the local models), filtered by an end user, by a
// pair, by both and with the other filters; the filters kept in the URL (a reload, Back, a shared
// link); the next page of a filtered gallery carrying the same filters; the detail view showing
// both, each a link that filters the gallery; a bad filter told before it is sent; the filter bar
// at phone width. Screenshots go to test/artifacts/console-attribution/.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestWorker, waitFor } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

const CHROMIUM = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.resolve(import.meta.dirname, 'artifacts', 'console-attribution');
const AXE = fs.readFileSync(path.resolve(import.meta.dirname, '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

let srv: TestServer;
let key: string;
let browser: Browser;
let page: Page;
const problems: string[] = [];
/** Set while a test sends a filter the API refuses on purpose. */
let expect400 = false;

/** Ids of the seeded generations, by name. */
const ids: Record<string, string> = {};
/** The 26 generations of `cust_many` (oldest first), made between others. */
const many: string[] = [];

async function shot(name: string, p: Page = page) {
  await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

async function noSeriousViolations(where: string) {
  await page.evaluate(AXE);
  const bad = await page.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
      .map((v: any) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n: any) => n.target.join(' ')).slice(0, 3) }));
  });
  assert.deepEqual(bad, [], `axe on ${where}`);
}

async function make(name: string, body: Record<string, unknown>): Promise<string> {
  const r = await api(srv.base, key, '/generations', { body: { type: 'image', prompt: `Seed ${name}`, ...body } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id as string;
}

/**
 * The gallery's cards (ids, in order) once it shows the filters of the URL (the answer for them has
 * arrived: the cards before stay until then) with `expected` cards.
 */
async function tiles(expected: number): Promise<string[]> {
  await page.waitForFunction((n) => document.querySelector<HTMLElement>('.gallery-results')?.dataset.filters === location.hash
    && !document.querySelector('.loading') && document.querySelectorAll('.gallery .tile').length === n, expected)
    .catch(async (e) => {
      await shot(`tiles-not-${expected}`);
      throw new Error(`${await page.locator('.gallery .tile').count()} cards, not ${expected}: ${e}`);
    });
  return page.locator('.gallery .tile').evaluateAll((ts) => ts.map((t) => t.getAttribute('data-generation-id')!));
}

/** The filters the URL's hash names, decoded. */
const hashFilters = () => page.evaluate(() => {
  const h = location.hash;
  const q = h.indexOf('?');
  return [...new URLSearchParams(q < 0 ? '' : h.slice(q + 1))];
});

const endUserField = () => page.getByLabel('End user', { exact: true });
const pairField = () => page.getByLabel('Metadata', { exact: true });
const chips = () => page.locator('.filter-bar .chip').evaluateAll((cs) => cs.map((c) => c.querySelector('.chip-text')!.textContent));

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: install it (apt-get install -y chromium) or set KILN_CHROMIUM`);
  fs.mkdirSync(SHOTS, { recursive: true });
  srv = await startServer();
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  key = (await createKey(srv.db.sql, a.id, { rpm: 6000 })).key;
  // 26 of one end user with 12 others between them: a second page that forgot the filter would show those.
  for (let i = 0; i < 26; i++) {
    many.push(await make(`many ${i}`, { endUser: 'cust_many', metadata: { project: 'gamma' } }));
    if (i % 2 === 0) await make(`other ${i}`, { endUser: 'cust_other', metadata: { project: 'gamma' } });
  }
  ids.plain = await make('plain', {});
  ids.bob = await make('bob', { endUser: 'cust_bob', metadata: { project: 'alpha' } });
  ids.adaCode = await make('ada code', { type: 'code', targetLanguage: 'css', endUser: 'cust_ada', metadata: { project: 'beta' } });
  ids.ada = await make('ada', { endUser: 'cust_ada', metadata: { project: 'alpha', plan: 'pro', 'team.name': 'Ops & Sales / EU' } });
  for (const id of [...many, ...Object.values(ids)]) await waitFor(srv, key, id);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-gpu', '--disable-quic', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: 'light' });
  page = await context.newPage();
  page.setDefaultTimeout(30_000);
  page.on('console', (m) => {
    if (m.type() === 'error' && !(expect400 && /status of 400/.test(m.text()))) problems.push(`console: ${m.text()}`);
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

test('by end user, then a pair too (a chip), then the pair alone: the cards and the URL follow', async () => {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Generations', exact: true }).click();
  await tiles(24);
  await endUserField().fill('cust_ada');
  await endUserField().press('Enter');
  assert.deepEqual(await tiles(2), [ids.ada, ids.adaCode], 'newest first');
  assert.deepEqual(await hashFilters(), [['endUser', 'cust_ada']]);
  assert.deepEqual(await chips(), [], 'an end user is the field, not a chip');

  await pairField().fill('project=alpha');
  await pairField().press('Enter');
  assert.deepEqual(await tiles(1), [ids.ada]);
  assert.deepEqual(await chips(), ['project=alpha']);
  assert.equal(await pairField().inputValue(), '', 'the field is emptied once its pair is a chip');
  assert.deepEqual(await hashFilters(), [['endUser', 'cust_ada'], ['metadata[project]', 'alpha']]);
  await shot('01-end-user-and-pair');

  await endUserField().fill('');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  assert.deepEqual(await tiles(2), [ids.ada, ids.bob], 'project=alpha, whoever the end user');
  assert.deepEqual(await hashFilters(), [['metadata[project]', 'alpha']]);
});

test('two pairs must both match; a pair of the same key replaces it; a chip is removed by its button', async () => {
  await pairField().fill('plan=pro');
  await pairField().press('Enter');
  assert.deepEqual(await tiles(1), [ids.ada]);
  assert.deepEqual(await chips(), ['project=alpha', 'plan=pro']);
  await pairField().fill('project=beta');
  await pairField().press('Enter');
  await page.waitForFunction(() => document.querySelectorAll('.filter-bar .chip').length === 2 && !document.querySelector('.loading'));
  assert.deepEqual(await chips(), ['project=beta', 'plan=pro']);
  assert.equal(await page.locator('.gallery .tile').count(), 0);
  await page.getByText('No generations match these filters').waitFor();
  await shot('02-no-match');
  await page.getByRole('button', { name: 'Remove the filter plan=pro' }).click();
  assert.deepEqual(await tiles(1), [ids.adaCode]);
  assert.deepEqual(await hashFilters(), [['metadata[project]', 'beta']]);
});

test('combined with kind and status; a reload and Back keep the filters', async () => {
  await page.goto(`${srv.origin}/console/#/generations?endUser=cust_ada`);
  assert.deepEqual(await tiles(2), [ids.ada, ids.adaCode]);
  await page.getByLabel('Kind').selectOption('code');
  assert.deepEqual(await tiles(1), [ids.adaCode]);
  await page.getByLabel('Status').selectOption('completed');
  assert.deepEqual(await tiles(1), [ids.adaCode]);
  await page.getByLabel('Status').selectOption('failed');
  await page.getByText('No generations match these filters').waitFor();
  await page.getByLabel('Status').selectOption('');
  await page.getByLabel('Kind').selectOption('image');
  await pairField().fill('team.name=Ops & Sales / EU');
  await pairField().press('Enter');
  assert.deepEqual(await tiles(1), [ids.ada], 'a value with &, / and spaces survives the URL');
  const before = await hashFilters();
  assert.deepEqual(before, [['type', 'image'], ['endUser', 'cust_ada'], ['metadata[team.name]', 'Ops & Sales / EU']]);

  await page.reload();
  assert.deepEqual(await tiles(1), [ids.ada]);
  assert.equal(await endUserField().inputValue(), 'cust_ada');
  assert.equal(await page.getByLabel('Kind').inputValue(), 'image');
  assert.deepEqual(await chips(), ['team.name=Ops & Sales / EU']);
  assert.deepEqual(await hashFilters(), before);
  await shot('03-after-reload');

  // Each change was a step in the history: Back takes the pair off again.
  await page.goBack();
  assert.deepEqual(await tiles(1), [ids.ada]);
  assert.deepEqual(await hashFilters(), [['type', 'image'], ['endUser', 'cust_ada']]);
  assert.deepEqual(await chips(), []);
  await page.getByRole('link', { name: 'Clear filters' }).first().click();
  await tiles(24);
  assert.equal(await endUserField().inputValue(), '');
  assert.equal(await page.getByLabel('Kind').inputValue(), '');
});

test('the next page of a filtered gallery carries the same filters', async () => {
  await endUserField().fill('cust_many');
  await endUserField().press('Enter');
  const first = await tiles(24);
  assert.deepEqual(first, [...many].reverse().slice(0, 24));
  const asked: string[] = [];
  const onRequest = (r: { url(): string }) => { if (new URL(r.url()).pathname === '/api/v1/generations') asked.push(r.url()); };
  page.on('request', onRequest);
  await page.getByRole('button', { name: 'Load more' }).click();
  const all = await tiles(26);
  page.off('request', onRequest);
  assert.deepEqual(all, [...many].reverse(), 'every one of cust_many, none of the others, no repeat');
  assert.equal(asked.length, 1, asked.join(' '));
  const next = new URL(asked[0]!).searchParams;
  assert.equal(next.get('endUser'), 'cust_many');
  assert.ok(next.get('cursor'), 'with the cursor of the first page');
  assert.equal(await page.getByRole('button', { name: 'Load more' }).count(), 0, 'the last page');
});

test('a new generation that matches appears in the filtered gallery as it settles; one that does not stays out', async () => {
  await page.goto(`${srv.origin}/console/#/generations?endUser=cust_ada&metadata[project]=alpha`);
  assert.deepEqual(await tiles(1), [ids.ada]);
  const other = await make('live other', { endUser: 'cust_ada', metadata: { project: 'beta' } });
  await waitFor(srv, key, other);
  ids.liveOther = other;
  const match = await make('live match', { endUser: 'cust_ada', metadata: { project: 'alpha' } });
  await page.locator(`.gallery [data-generation-id="${match}"][data-status="completed"]`).waitFor();
  assert.deepEqual(await tiles(2), [match, ids.ada]);
  ids.live = match;
});

test('the detail view shows the end user and metadata; each is a link that filters the gallery', async () => {
  await page.goto(`${srv.origin}/console/#/generations/${ids.ada}`);
  const details = page.locator('.detail-side');
  const user = details.getByRole('link', { name: 'cust_ada' });
  await user.waitFor();
  const pairs = await details.getByRole('list', { name: 'Metadata' }).locator('.chip').evaluateAll((cs) => cs.map((c) => c.textContent));
  assert.deepEqual(pairs.sort(), ['plan=pro', 'project=alpha', 'team.name=Ops & Sales / EU']);
  await noSeriousViolations('a detail view with attribution');
  await shot('04-detail');
  // A generation without attribution shows neither.
  await page.goto(`${srv.origin}/console/#/generations/${ids.plain}`);
  // The view before stays until this one's answer: wait for its id.
  await page.waitForFunction((id) => document.querySelector('.detail-side code.wrap')?.textContent === id, ids.plain);
  assert.equal(await page.locator('.detail-side').getByText('End user').count(), 0);
  assert.equal(await page.locator('.detail-side').getByText('Metadata').count(), 0);

  await page.goto(`${srv.origin}/console/#/generations/${ids.ada}`);
  await user.click();
  assert.deepEqual(await tiles(4), [ids.live, ids.liveOther, ids.ada, ids.adaCode]);
  assert.deepEqual(await hashFilters(), [['endUser', 'cust_ada']]);
  assert.equal(await endUserField().inputValue(), 'cust_ada');

  await page.goBack();
  await details.getByRole('link', { name: 'team.name=Ops & Sales / EU' }).click();
  assert.deepEqual(await tiles(1), [ids.ada]);
  assert.deepEqual(await hashFilters(), [['metadata[team.name]', 'Ops & Sales / EU']]);
  assert.deepEqual(await chips(), ['team.name=Ops & Sales / EU']);
  assert.equal(await endUserField().inputValue(), '', 'only what was clicked');
  await noSeriousViolations('the gallery filtered by a pair');
  await shot('05-gallery-from-detail');
});

test('a bad filter is told at once and not sent; one from a link gets the API\'s answer, not a blank page', async () => {
  await page.goto(`${srv.origin}/console/#/generations?metadata[project]=alpha`);
  await tiles(3);
  const before = await hashFilters();
  for (const [typed, message] of [
    ['project', /key=value/],
    ['bad key=1', /"bad key" is not a key/],
    [`k=${'v'.repeat(513)}`, /at most 512 characters/],
  ] as const) {
    await pairField().fill(typed);
    await pairField().press('Enter');
    assert.match(await page.getByRole('alert').innerText(), message);
    assert.deepEqual(await hashFilters(), before, `${typed.slice(0, 20)}: nothing applied`);
  }
  await pairField().fill('');
  await endUserField().fill('x'.repeat(129));
  await endUserField().press('Enter');
  assert.match(await page.getByRole('alert').innerText(), /End user: at most 128 characters/);
  await shot('06-bad-filter');
  await endUserField().fill('cust_bob');
  await endUserField().press('Enter');
  assert.deepEqual(await tiles(1), [ids.bob]);
  assert.equal(await page.getByRole('alert').count(), 0, 'a good filter clears the message');

  // A shared link the API refuses: its error, in the envelope's words.
  expect400 = true;
  try {
    // Chromium logs the refused request as an error: that one is expected.
    const logged = page.waitForEvent('console', { predicate: (m) => /status of 400/.test(m.text()), timeout: 5000 }).catch(() => null);
    await page.goto(`${srv.origin}/console/#/generations?metadata[bad%20key]=1`);
    const alert = page.locator('.gallery-results > .notice.error[role="alert"]');
    await alert.waitFor();
    assert.match(await alert.innerText(), /metadata\[bad key\]: is not a valid key.*\(invalid_request, HTTP 400\)/);
    await shot('07-refused-link');
    await logged;
  } finally {
    expect400 = false;
  }
});

test('phone width: the filter bar and its chips fit 375 px with no sideways scroll', async () => {
  const phone = await browser.newContext({ viewport: { width: 375, height: 812 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const p = await phone.newPage();
  p.setDefaultTimeout(30_000);
  p.on('pageerror', (e) => problems.push(`phone pageerror: ${e.message}`));
  await p.goto(`${srv.origin}/console/`);
  await p.getByRole('textbox', { name: 'API key' }).fill(key);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  await p.goto(`${srv.origin}/console/#/generations?endUser=cust_ada&metadata[project]=alpha&metadata[plan]=pro`);
  await p.locator('.gallery .tile').first().waitFor();
  const wide = await p.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(wide <= 375, `the gallery is ${wide} px wide`);
  await shot('08-phone-gallery', p);
  // A value with no space to break at: the chip wraps it rather than widening the page.
  await p.goto(`${srv.origin}/console/#/generations?endUser=cust_ada&metadata[note]=${'a_long_value_without_spaces_'.repeat(4)}&metadata[plan]=pro`);
  await p.getByText('No generations match these filters').waitFor();
  const chipRight = await p.locator('.filter-bar .chip').evaluateAll((cs) => Math.max(...cs.map((c) => c.getBoundingClientRect().right)));
  assert.ok(chipRight <= 375, `a long chip wraps inside the page: its right edge at ${chipRight}`);
  assert.ok(await p.evaluate(() => document.documentElement.scrollWidth) <= 375);
  await shot('09-phone-long-chip', p);
  await p.goto(`${srv.origin}/console/#/generations/${ids.ada}`);
  await p.locator('.detail-side').getByRole('link', { name: 'cust_ada' }).waitFor();
  assert.ok(await p.evaluate(() => document.documentElement.scrollWidth) <= 375);
  await shot('10-phone-detail', p);
  await phone.close();
});

test('the browser logged no unexpected error', () => {
  assert.deepEqual(problems, []);
});
