// The user CLI end to end without a terminal (pipes, as in CI): `kiln generate|run|transform|
// models|me` as child processes against a real server and worker, talking to the API only
// (KILN_URL, KILN_API_KEY). JSON lines, files written, every exit code caused for real, and no
// partial file left behind by a command that fails.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { before, test } from 'node:test';
import sharp from 'sharp';
import { cli, cliOnTty, finalScreen, tempDir } from './_cli.ts';
import { startTestWorker } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { saveWorkflow } from './_workflows.ts';

let srv: TestServer;
let accountId: string;
let env: Record<string, string>;

before(async () => {
  srv = await startServer();
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  accountId = a.id;
  env = { KILN_URL: `${srv.origin}/api/v1/`, KILN_API_KEY: (await createKey(srv.db.sql, a.id)).key };
});

/** Files in `dir`, temporaries included (a `.part` left behind would show here). */
const entries = (dir: string) => fs.readdirSync(dir).sort();

test('generate code: JSON lines per status, then the result; the code written to <id>.<ext> in the current directory', async () => {
  const dir = tempDir();
  const r = await cli(['generate', 'code', '--prompt', 'A pricing card', '--lang', 'tsx'], env, { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  const statuses = r.lines.filter((l) => l.event === 'status');
  const result = r.lines.at(-1);
  assert.equal(result.event, 'result');
  assert.deepEqual(statuses.map((l) => l.status), ['pending', 'processing', 'completed'].filter((s) => statuses.some((l) => l.status === s)));
  assert.equal(statuses[0].status, 'pending');
  assert.ok(statuses.every((l) => l.id === result.id && Number.isInteger(l.elapsed_ms)));
  assert.equal(result.status, 'completed');
  assert.equal(result.error, null);
  assert.equal(result.file, path.join(fs.realpathSync(dir), `${result.id}.tsx`));
  assert.deepEqual(entries(dir), [`${result.id}.tsx`]);
  const get = await api(srv.base, env.KILN_API_KEY!, `/generations/${result.id}`);
  assert.equal(fs.readFileSync(result.file, 'utf8'), get.body.result.code);
  assert.equal(result.cost_micros, get.body.result.costMicros);
  assert.ok(result.cost_micros > 0);
});

test('generate image --aspect 16:9 --out FILE: the PNG at FILE; --out DIR: <id>.png inside it', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'banner.png');
  const [one, two] = await Promise.all([
    cli(['generate', 'image', '--prompt', 'A red fox', '--aspect', '16:9', '--out', file], env),
    cli(['generate', 'image', '--prompt', 'A blue fox', '--out', dir], env),
  ]);
  assert.equal(one.code, 0, one.stderr);
  assert.equal(one.lines.at(-1).file, file);
  const meta = await sharp(fs.readFileSync(file)).metadata();
  assert.equal(meta.format, 'png');
  assert.equal(Math.round((meta.width! / meta.height!) * 9), 16);
  assert.equal(one.lines.at(-1).cost_micros, 1000, 'local/sketch bills 1,000 µ$ per image');
  assert.match(one.lines.at(-1).url, /^http:\/\/127\.0\.0\.1:\d+\/.*sig=/);
  assert.equal(two.code, 0, two.stderr);
  assert.equal(two.lines.at(-1).file, path.join(dir, `${two.lines.at(-1).id}.png`));
  assert.deepEqual(entries(dir), ['banner.png', `${two.lines.at(-1).id}.png`].sort());
});

test('exit codes 2 (arguments), 3 (auth), 4 (quota, payment), 5 (job failed), 6 (unavailable) — and no file left by any of them', async () => {
  const dir = tempDir();
  const out = path.join(dir, 'out.png');
  const readKey = (await createKey(srv.db.sql, accountId, { scopes: ['read'] })).key;
  const poor = await createAccount(srv.db.sql, { budgetMicros: 500 });
  const poorKey = (await createKey(srv.db.sql, poor.id)).key;
  // A key billing a workspace whose Team plan lapsed: 402 payment_required.
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Lapsed', ${accountId})`;
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', 1000000, true)`;
  const teamKey = (await createKey(srv.db.sql, accountId, { workspaceId: ws.id })).key;
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'lapsed', null, false)`;
  // A port nothing listens on: bound, then closed.
  const closed = await new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as net.AddressInfo).port; s.close(() => resolve(p)); });
  });
  const gen = (extra: string[] = []) => ['generate', 'image', '--prompt', 'A fox', '--out', out, ...extra];
  const cases: Array<{ name: string; args: string[]; env?: Record<string, string>; code: number; stderr: RegExp; type?: string }> = [
    { name: 'unknown kind', args: ['generate', 'video', '--prompt', 'x', '--out', out], code: 2, stderr: /image or code/ },
    { name: 'no prompt', args: ['generate', 'code', '--out', out], code: 2, stderr: /--prompt is required/ },
    { name: 'unknown option', args: gen(['--colour', 'red']), code: 2, stderr: /unknown option --colour/ },
    { name: 'bad aspect', args: gen(['--aspect', '5:4']), code: 2, stderr: /--aspect must be one of/ },
    { name: 'no key', args: gen(), env: { KILN_API_KEY: '' }, code: 2, stderr: /KILN_API_KEY/ },
    { name: 'model the server does not know (400)', args: gen(['--model', 'nope/none']), code: 2, stderr: /invalid_request 400: model: "nope\/none" is not in the catalog/, type: 'invalid_request' },
    { name: 'unknown workflow (404)', args: ['run', crypto.randomUUID(), '--watch'], code: 2, stderr: /not_found 404/, type: 'not_found' },
    { name: 'wrong key (401)', args: gen(), env: { KILN_API_KEY: 'kiln_live_not_a_key' }, code: 3, stderr: /unauthorized 401/, type: 'unauthorized' },
    { name: 'read-only key (403)', args: gen(), env: { KILN_API_KEY: readKey }, code: 3, stderr: /insufficient_scope 403/, type: 'insufficient_scope' },
    { name: 'budget spent (429 insufficient_quota)', args: gen(), env: { KILN_API_KEY: poorKey }, code: 4, stderr: /insufficient_quota 429/, type: 'insufficient_quota' },
    { name: 'Team plan lapsed (402)', args: gen(), env: { KILN_API_KEY: teamKey }, code: 4, stderr: /payment_required 402/, type: 'payment_required' },
    // The image input's host never resolves (.invalid, RFC 2606): the worker fails the job for good.
    { name: 'the job failed', args: gen(['--image', 'https://kiln-cli-test.invalid/in.png']), code: 5, stderr: /^$/ },
    { name: 'nothing listening', args: gen(), env: { KILN_URL: `http://127.0.0.1:${closed}`, KILN_CLIENT_ATTEMPTS: '2' }, code: 6, stderr: /network_error: could not reach/, type: 'network_error' },
    { name: 'nothing listening (models)', args: ['models'], env: { KILN_URL: `http://127.0.0.1:${closed}`, KILN_CLIENT_ATTEMPTS: '2' }, code: 6, stderr: /network_error/ },
  ];
  const results = await Promise.all(cases.map((c) => cli(c.args, { ...env, ...c.env })));
  cases.forEach((c, i) => {
    const r = results[i]!;
    assert.equal(r.code, c.code, `${c.name}: exit ${r.code}, stderr ${r.stderr}`);
    assert.match(r.stderr, c.stderr, c.name);
    if (c.type) assert.equal(r.lines.at(-1)?.type, c.type, `${c.name}: the error line`);
  });
  const failed = results[cases.findIndex((c) => c.code === 5)]!;
  const last = failed.lines.at(-1);
  assert.deepEqual([last.event, last.status, last.file, last.cost_micros], ['result', 'failed', null, 0]);
  assert.match(last.error, /could not be resolved|timed out/);
  assert.deepEqual(entries(dir), [], 'no output file, no temporary file');
  // Each refused request reached the service at most once: nothing was created for them.
  const [n] = await srv.db.sql`select count(*)::int as n from kiln_private.generations where account_id = ${poor.id}`;
  assert.equal(n.n, 0);
});

test('writing the file itself fails (EFBIG half-way, under ulimit -f): exit 1, an error line, no partial or temporary file', async () => {
  const dir = tempDir();
  const out = path.join(dir, 'big.png');
  // 2 blocks = 1 KiB, less than any PNG: the temporary file is cut short by the write that fails.
  // tsx's cache is off so that only the result is written.
  const r = await cli(['generate', 'image', '--prompt', 'A large fox', '--aspect', '16:9', '--out', out], { ...env, TSX_DISABLE_CACHE: '1' }, { fileBlocks: 2 });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /EFBIG|file too large/i);
  const last = r.lines.at(-1);
  assert.equal(last.event, 'error');
  assert.deepEqual(entries(dir), [], 'no output file, no temporary file');
});

test('run WORKFLOW_ID: started; --watch: status, output + progress per output, then the results and total cost', async () => {
  const graph = {
    nodes: [
      { id: 'brief', kind: 'text', text: 'Autumn sale' },
      { id: 'p1', kind: 'prompt', output: 'code', targetLanguage: 'tsx', prompt: 'Landing section', model: 'local/coder' },
      { id: 'o1', kind: 'output', label: 'Landing' },
      { id: 'p2', kind: 'prompt', output: 'image', prompt: 'Hero image', model: 'local/sketch' },
      { id: 'o2', kind: 'output' },
    ],
    edges: [{ from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }, { from: 'brief', to: 'p2' }, { from: 'p2', to: 'o2' }],
  };
  const wf = await saveWorkflow(srv, accountId, graph, 'cli workflow');
  const [plain, watched] = await Promise.all([cli(['run', wf], env), cli(['run', wf, '--watch'], env)]);
  assert.equal(plain.code, 0, plain.stderr);
  assert.deepEqual(plain.lines.map((l) => [l.event, l.workflow_id, l.status]), [['started', wf, 'pending']]);
  assert.equal(watched.code, 0, watched.stderr);
  const kinds = watched.lines.map((l) => l.event);
  assert.equal(kinds[0], 'started');
  assert.equal(kinds.at(-1), 'result');
  assert.deepEqual(kinds.filter((k) => k === 'output' || k === 'progress'), ['output', 'progress', 'output', 'progress']);
  const result = watched.lines.at(-1);
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.progress, { total: 2, completed: 2 });
  const get = await api(srv.base, env.KILN_API_KEY!, `/workflows/${wf}/runs/${result.run_id}`);
  // Signed URLs carry their own expiry: compare them without it.
  const unsigned = (results: any[]) => results.map((o) => ({ ...o, url: o.url?.split('?')[0] }));
  assert.deepEqual(unsigned(result.results), unsigned(get.body.results));
  assert.deepEqual(watched.lines.filter((l) => l.event === 'output').map((l) => l.outputNodeId).sort(), ['o1', 'o2']);
  const total = get.body.results.reduce((n: number, o: any) => n + o.costMicros, 0);
  assert.ok(total >= 1000);
  assert.equal(result.total_cost_micros, total);
});

test('models, me and transform: JSON lines; transform --out writes the converted image', async () => {
  const dir = tempDir();
  const [models, me] = await Promise.all([cli(['models'], env), cli(['me', '--json'], env)]);
  assert.equal(models.code, 0, models.stderr);
  const listed = await api(srv.base, env.KILN_API_KEY!, '/models');
  assert.deepEqual(models.lines, listed.body.data);
  assert.equal(me.code, 0, me.stderr);
  assert.equal(me.lines.length, 1);
  assert.equal(me.lines[0].tier, 'pro');
  assert.equal(me.lines[0].used_micros, (await api(srv.base, env.KILN_API_KEY!, '/usage')).body.used_micros);
  // Who the key is: the account id a user could not learn from the CLI before (GET /me).
  const who = await api(srv.base, env.KILN_API_KEY!, '/me');
  assert.equal(who.status, 200);
  assert.deepEqual(me.lines[0].account, who.body);
  assert.match(me.lines[0].account.accountId, /^[0-9a-f-]{36}$/);

  const image = await cli(['generate', 'image', '--prompt', 'A green fox', '--out', path.join(dir, 'fox.png')], env);
  assert.equal(image.code, 0, image.stderr);
  const t = await cli(['transform', image.lines.at(-1).url, '--op', 'convert', '--format', 'webp', '--quality', '0.8', '--out', path.join(dir, 'fox.webp')], env);
  assert.equal(t.code, 0, t.stderr);
  const line = t.lines[0];
  assert.equal(line.format, 'webp');
  assert.equal(line.file, path.join(dir, 'fox.webp'));
  const bytes = fs.readFileSync(line.file);
  assert.equal(bytes.length, line.bytes);
  assert.equal((await sharp(bytes).metadata()).format, 'webp');
  const bad = await cli(['transform', 'seed/nothing-here.png', '--op', 'trim', '--out', path.join(dir, 'x.png')], env);
  assert.equal(bad.code, 2, bad.stderr);
  const noOp = await cli(['transform', 'seed/x.png'], env);
  assert.equal(noOp.code, 2);
  assert.match(noOp.stderr, /--op is required/);
  assert.deepEqual(entries(dir), ['fox.png', 'fox.webp']);
});

test('kiln keys: create prints the secret once, list shows it, rotate keeps the id, revoke ends it; exit codes say why', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const manager = { ...env, KILN_API_KEY: (await createKey(srv.db.sql, a.id, { scopes: ['read', 'write', 'keys'] })).key };
  const made = await cli(['keys', 'create', 'deploy bot', '--scopes', 'read', '--budget-micros', '5000'], manager);
  assert.equal(made.code, 0, made.stderr);
  const created = made.lines.at(-1);
  assert.equal(created.event, 'created');
  assert.match(created.key, /^kiln_live_/);
  assert.equal(created.budgetMicros, 5000);
  const listed = await cli(['keys'], manager);
  assert.ok(listed.lines.some((k: any) => k.id === created.id && !('key' in k)), 'listed, without its secret');
  // On a terminal: a table under a header whose columns line up with the rows'.
  const table = await cliOnTty(['keys'], { ...manager, COLUMNS: '200' });
  assert.equal(table.code, 0, table.raw);
  const [header, ...rows] = finalScreen(table.raw);
  assert.match(header!, /^id {36}prefix  +status  +scopes  +name  +budget  +last used$/);
  const mine = rows.find((l) => l.startsWith(created.id))!;
  assert.ok(mine, rows.join('\n'));
  for (const [column, value] of [['prefix', created.prefix], ['status', 'active'], ['scopes', 'read'], ['name', 'deploy bot'], ['budget', '$0.000000 of $0.005000'], ['last used', 'never used']]) {
    assert.equal(mine.indexOf(value), header!.indexOf(column), `${column} in ${mine}`);
  }
  assert.equal(rows.length, 2, 'the manager key and the new one');
  const rotated = (await cli(['keys', 'rotate', created.id, '--grace', '0'], manager)).lines.at(-1);
  assert.equal(rotated.id, created.id);
  assert.equal((await api(srv.base, created.key, '/usage')).status, 401, 'grace 0: the old secret ends');
  assert.equal((await api(srv.base, rotated.key, '/usage')).status, 200);
  const revoked = await cli(['keys', 'revoke', created.id], manager);
  assert.equal(revoked.code, 0);
  assert.equal((await api(srv.base, rotated.key, '/usage')).status, 401);
  // A key without the keys scope: exit 3 (auth); a bad flag: exit 2 before any request.
  assert.equal((await cli(['keys', 'list'], env)).code, 3);
  assert.equal((await cli(['keys', 'create', 'x', '--scopes', 'root'], manager)).code, 2);
  assert.equal((await cli(['keys', 'rotate', created.id, '--grace', '8d'], manager)).code, 2);
  // --grace's unit is said when it is wrong (the usage says it too: test/cli.args.test.ts).
  const unit = await cli(['keys', 'rotate', created.id, '--grace', 'soon'], manager);
  assert.equal(unit.code, 2);
  assert.match(unit.stderr, /--grace must be a number of seconds/);
});
