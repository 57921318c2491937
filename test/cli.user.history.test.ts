// `kiln ls` and `kiln usage [--daily]` as child processes against a real server: JSON lines off a
// terminal (each exactly the API's answer), tables on a pseudo-terminal, filters as flags, and
// exit code 2 for bad flags (caught locally or refused by the service).

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { cli, cliOnTty, finalScreen } from './_cli.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
let env: Record<string, string>;
let key: string;
const ids: string[] = [];

before(async () => {
  srv = await startServer();
  // No worker: outcomes are settled through the SQL functions the worker uses.
  await srv.db.sql`delete from graphile_worker._private_jobs`;
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  key = (await createKey(srv.db.sql, a.id)).key;
  env = { KILN_URL: `${srv.origin}/api/v1/`, KILN_API_KEY: key };
  for (let i = 0; i < 7; i++) {
    const res = await api(srv.base, key, '/generations', { body: i % 2 ? { type: 'image', prompt: 'a fox' } : { type: 'code', prompt: 'a card', targetLanguage: 'tsx' } });
    ids.unshift(res.body.id);
  }
  // Newest first: ids[0] is the last one made. Two completed, one failed, the rest pending.
  await srv.db.sql`select kiln.complete_generation(${ids[0]!}, ${srv.db.sql.json({ type: 'code', code: 'export const Card = 1', structuredOutput: null })}, 42, null)`;
  await srv.db.sql`select kiln.complete_generation(${ids[6]!}, ${srv.db.sql.json({ type: 'code', code: 'x', structuredOutput: null })}, 7, null)`;
  await srv.db.sql`select kiln.fail_generation(${ids[1]!}, 'upstream said no')`;
});

test('kiln ls: one JSON line per generation, newest first, each the GET /generations body; then the next cursor', async () => {
  const r = await cli(['ls', '--limit', '3'], env);
  assert.equal(r.code, 0, r.stderr);
  const page = await api(srv.base, key, '/generations?limit=3');
  assert.deepEqual(r.lines.slice(0, 3), page.body.data);
  assert.deepEqual(r.lines.map((l) => l.id ?? 'cursor'), [...ids.slice(0, 3), 'cursor']);
  const next = await cli(['ls', '--limit', '3', '--cursor', r.lines[3].nextCursor], env);
  assert.deepEqual(next.lines.map((l) => l.id ?? 'cursor'), [...ids.slice(3, 6), 'cursor']);

  const all = await cli(['ls', '--all', '--limit', '2'], env);
  assert.equal(all.code, 0, all.stderr);
  assert.deepEqual(all.lines.map((l) => l.id), ids, '--all follows every page, and ends without a cursor');

  const filtered = await cli(['ls', '--status', 'completed,failed', '--type', 'code'], env);
  assert.deepEqual(filtered.lines.map((l) => l.id), [ids[0], ids[6]]);
  const since = await cli(['ls', '--since', '2000-01-01', '--model', 'local/sketch'], env);
  assert.deepEqual(since.lines.map((l) => l.id), [ids[1], ids[3], ids[5]], 'the images (odd places)');
});

test('kiln ls on a terminal: a table, the failed row with its error, and how to get more', async () => {
  const { code, raw } = await cliOnTty(['ls', '--limit', '4'], env);
  assert.equal(code, 0, raw);
  const screen = finalScreen(raw);
  assert.equal(screen.length, 5, screen.join('\n'));
  assert.ok(screen[0]!.startsWith(ids[0]!) && screen[0]!.includes('completed') && screen[0]!.includes('$0.000042'));
  assert.ok(screen[1]!.startsWith(ids[1]!) && screen[1]!.includes('failed') && screen[1]!.includes('upstream said no'));
  // What was asked tells the rows apart: the prompt, in its column.
  assert.match(screen[0]!, /\$0\.000042  a card {12}code$/);
  assert.match(screen[1]!, /failed {18}a fox {13}upstream said no$/);
  assert.match(screen[4]!, /^more: kiln ls --cursor [A-Za-z0-9_-]{43} \(or --all\)$/);
});

test('kiln ls on a terminal: a long prompt on one line, cut to what the terminal leaves', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const own = { KILN_URL: env.KILN_URL!, KILN_API_KEY: (await createKey(srv.db.sql, a.id)).key };
  const prompt = 'Line one\n\tline two: a pricing card with three tiers, a toggle for yearly billing and a footer';
  assert.equal((await api(srv.base, own.KILN_API_KEY, '/generations', { body: { type: 'code', prompt, targetLanguage: 'tsx' } })).status, 202);
  for (const [columns, shown] of [[100, 'Line one line t…'], [140, 'Line one line two: a pricing card with three tiers, a…']] as const) {
    const { code, raw } = await cliOnTty(['ls'], { ...own, COLUMNS: String(columns) });
    assert.equal(code, 0, raw);
    const [line, ...rest] = finalScreen(raw);
    assert.deepEqual(rest, []);
    assert.ok(line!.endsWith(`  ${shown}`), line);
    assert.ok(line!.length <= columns, `${line!.length} > ${columns}`);
  }
});

test('kiln ls: bad flags exit 2 — caught locally, or the service\'s 400', async () => {
  for (const args of [['--status', 'done'], ['--type', 'video'], ['--limit', '0'], ['--all', '--cursor', 'x'], ['--bogus'], ['extra']]) {
    const r = await cli(['ls', ...args], env);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
  }
  for (const args of [['--since', 'yesterday'], ['--cursor', 'not-a-cursor'], ['--model', 'a b']]) {
    const r = await cli(['ls', ...args], env);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /invalid_request|must be|not a cursor/);
  }
});

test('kiln usage --daily: the API\'s days as JSON, a table with a total on a terminal; kiln usage alone is kiln me', async () => {
  const r = await cli(['usage', '--daily'], env);
  assert.equal(r.code, 0, r.stderr);
  const daily = await api(srv.base, key, '/usage/daily');
  assert.deepEqual(r.lines, [daily.body]);
  const used = (await api(srv.base, key, '/usage')).body.used_micros;
  assert.equal(daily.body.days.reduce((s: number, d: any) => s + d.spend_micros, 0), used);

  const t = daily.body.days[0].day;
  const ranged = await cli(['usage', '--daily', '--from', t, '--to', t], env);
  assert.deepEqual(ranged.lines[0].days, daily.body.days);

  const { code, raw } = await cliOnTty(['usage', '--daily'], env);
  assert.equal(code, 0, raw);
  const screen = finalScreen(raw);
  assert.match(screen[0]!, /^personal budget · \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2} \(UTC days\)$/);
  const dollars = `$${Math.floor(used / 1e6)}.${String(used % 1e6).padStart(6, '0')}`;
  assert.match(screen.at(-1)!, new RegExp(`^total\\s+\\${dollars}$`));

  const plain = await cli(['usage'], env);
  const me = await cli(['me'], env);
  assert.deepEqual(plain.lines, me.lines);
  for (const args of [['--from', '2026-01-01'], ['--daily', '--from', '2026-02-30'], ['--daily', '--to', '2026-01-01']]) {
    const bad = await cli(['usage', ...args], env);
    assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
  }
});

test('kiln usage --daily --by endUser|metadata.KEY: the API\'s groups as JSON lines, a table per day and group on a terminal', async () => {
  // Last in this file: it adds generations the tests above do not expect.
  for (const [endUser, project, cost] of [['cli-alice', 'alpha', 300], ['cli-bob', 'beta', 200], ['cli-alice', null, 100]] as const) {
    const res = await api(srv.base, key, '/generations', { body: { type: 'code', prompt: 'a card', targetLanguage: 'tsx', endUser, ...(project && { metadata: { project } }) } });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    await srv.db.sql`select kiln.complete_generation(${res.body.id}, ${srv.db.sql.json({ type: 'code', code: 'x', structuredOutput: null })}, ${cost}, null)`;
  }
  for (const by of ['endUser', 'metadata.project']) {
    const r = await cli(['usage', '--daily', '--by', by], env);
    assert.equal(r.code, 0, r.stderr);
    const api1 = await api(srv.base, key, `/usage/daily?groupBy=${by}&limit=1000`);
    assert.deepEqual(r.lines, api1.body.groups, by);
    assert.ok(r.lines.some((g) => g.group === null) && r.lines.some((g) => g.group !== null));
  }
  const byUser = await cli(['usage', '--daily', '--by', 'endUser'], env);
  const alice = byUser.lines.find((g) => g.group === 'cli-alice');
  assert.equal(alice.spend_micros, 400);
  assert.equal(alice.charges, 2);

  const { code, raw } = await cliOnTty(['usage', '--daily', '--by', 'endUser'], env);
  assert.equal(code, 0, raw);
  const screen = finalScreen(raw);
  assert.equal(screen[0], 'spend per UTC day and end user');
  assert.ok(screen.some((l) => /^\d{4}-\d{2}-\d{2}  cli-alice\s+\$0\.000400\s+2/.test(l)), screen.join('\n'));
  assert.ok(screen.some((l) => /^\d{4}-\d{2}-\d{2}  \(no end user\)/.test(l)), screen.join('\n'));
  const used = (await api(srv.base, key, '/usage')).body.used_micros;
  const dollars = `$${Math.floor(used / 1e6)}.${String(used % 1e6).padStart(6, '0')}`;
  assert.match(screen.at(-1)!, new RegExp(`^total\\s+\\${dollars}$`), 'the groups add up to the period\'s spend');

  for (const args of [['--by', 'endUser'], ['--daily', '--by', 'user'], ['--daily', '--by', 'metadata.bad key']]) {
    const bad = await cli(['usage', ...args], env);
    assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
  }
});
