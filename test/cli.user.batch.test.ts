// `kiln batch` end to end as child processes against a real server and worker (docs/api.md, "User
// commands"): create from a file (and from stdin) and watch it to completion — JSON lines in a
// pipe, a progress bar on a terminal —, results to a file and to stdout with every custom_id
// once, a refused file printing every pointer, cancel (and a watch that ends canceled), ls and get.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { BIN, cli, cliOnTty, finalScreen, startCli, tempDir } from './_cli.ts';
import { startTestWorker, until } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
let env: Record<string, string>;

before(async () => {
  srv = await startServer();
  // A line of it takes 3 s: a batch of them is still running when the test cancels it, even on a loaded machine.
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/slow', name: 'slow', category: 'text', provider: 'local', upstream: { delayMs: 3000, stream: false },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
  })})`;
  await startTestWorker(srv);
  env = await accountEnv();
});

async function accountEnv(): Promise<Record<string, string> & { ACCOUNT: string }> {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  return { KILN_URL: `${srv.origin}/api/v1/`, KILN_API_KEY: (await createKey(srv.db.sql, a.id)).key, ACCOUNT: a.id };
}

const line = (custom_id: string, body: Record<string, unknown>) => ({ custom_id, method: 'POST', url: '/api/v1/generations', body });

/** A JSON Lines file of `lines` in a fresh directory. */
function jsonlFile(lines: unknown[], name = 'batch.jsonl'): string {
  const file = path.join(tempDir(), name);
  fs.writeFileSync(file, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
  return file;
}

const mixed = (n: number, prefix: string) => Array.from({ length: n }, (_, i) =>
  line(`${prefix}-${i}`, i % 2 ? { type: 'image', prompt: `tile ${i}` } : { type: 'code', prompt: `card ${i}`, targetLanguage: 'tsx' }));

test('create FILE --watch in a pipe: created, progress and result lines; results -o FILE and to stdout hold every custom_id once; get and ls', async () => {
  const file = jsonlFile(mixed(24, 'w'));
  const r = await cli(['batch', 'create', file, '--watch', '--idempotency-key', 'cli-batch-1'], env, { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  const [created, ...rest] = r.lines;
  assert.equal(created.event, 'created');
  assert.equal(created.status, 'in_progress');
  assert.equal(created.requestCounts.total, 24);
  const result = rest.at(-1);
  assert.equal(result.event, 'result');
  assert.equal(result.id, created.id);
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.requestCounts, { total: 24, completed: 24, failed: 0, canceled: 0 });
  assert.ok(Number.isInteger(result.elapsed_ms));
  const progress = rest.slice(0, -1);
  assert.ok(progress.length >= 1 && progress.every((l) => l.event === 'progress' && l.id === created.id), JSON.stringify(progress));
  // The same key and file: the same batch (replayed), not a second one.
  const again = await cli(['batch', 'create', file, '--idempotency-key', 'cli-batch-1'], env);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.lines[0].id, created.id);

  const dir = tempDir();
  const out = path.join(dir, 'results.jsonl');
  const saved = await cli(['batch', 'results', created.id, '-o', out], env);
  assert.equal(saved.code, 0, saved.stderr);
  assert.deepEqual(saved.lines, [{ event: 'saved', id: created.id, file: out, lines: 24, completed: 24, failed: 0 }]);
  assert.deepEqual(fs.readdirSync(dir), ['results.jsonl'], 'no temporary file left');
  const fromFile = fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.deepEqual(fromFile.map((l) => l.custom_id).sort(), Array.from({ length: 24 }, (_, i) => `w-${i}`).sort());
  assert.ok(fromFile.every((l) => l.response.status_code === 200 && l.response.body.batchId === created.id));
  // --out DIR: <id>.jsonl inside it; no -o: the same JSONL on stdout, and nothing else.
  const inDir = await cli(['batch', 'results', created.id, '--out', dir], env);
  assert.equal(inDir.lines[0].file, path.join(dir, `${created.id}.jsonl`));
  // (Each download signs its URLs anew: lines are compared by custom_id and generation.)
  const names = (text: string) => text.split('\n').filter(Boolean).map((l) => { const o = JSON.parse(l); return `${o.custom_id} ${o.generationId}`; });
  assert.deepEqual(names(fs.readFileSync(inDir.lines[0].file, 'utf8')), names(fs.readFileSync(out, 'utf8')));
  const stdout = await cli(['batch', 'results', created.id], env);
  assert.equal(stdout.code, 0, stdout.stderr);
  assert.equal(stdout.stderr, '');
  assert.deepEqual(names(stdout.stdout), names(fs.readFileSync(out, 'utf8')));
  assert.ok(stdout.stdout.endsWith('}\n'));

  const got = await cli(['batch', 'get', created.id], env);
  assert.equal(got.code, 0, got.stderr);
  assert.deepEqual(got.lines, [(await api(srv.base, env.KILN_API_KEY!, `/batches/${created.id}`)).body]);
  assert.equal(got.lines[0].spentMicros, fromFile.reduce((n, l) => n + l.response.body.result.costMicros, 0));

  // Another batch from stdin (`-`), then ls: newest first, one page at a time.
  const piped = spawn(process.execPath, [BIN, 'batch', 'create', '-'], { env: { ...process.env, KILN_LOG: 'silent', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let pipedOut = '';
  piped.stdout.on('data', (b) => { pipedOut += b; });
  piped.stdin.end(JSON.stringify(line('stdin-1', { type: 'code', prompt: 'from stdin' })));
  assert.equal(await new Promise((resolve) => piped.on('close', resolve)), 0);
  const fromStdin = JSON.parse(pipedOut);
  assert.equal(fromStdin.event, 'created');
  assert.equal(fromStdin.requestCounts.total, 1);
  const ls = await cli(['batch', 'ls', '--limit', '1'], env);
  assert.equal(ls.code, 0, ls.stderr);
  assert.equal(ls.lines[0].id, fromStdin.id);
  assert.ok(ls.lines[1].nextCursor);
  const next = await cli(['batch', 'ls', '--limit', '1', '--cursor', ls.lines[1].nextCursor], env);
  assert.equal(next.lines[0].id, created.id);
  assert.equal(next.lines.length, 1, 'the last page has no nextCursor');
});

test('a refused file: every problem on stderr with its pointer, exit 2, nothing on stdout and nothing created', async () => {
  const own = await accountEnv();
  const file = jsonlFile([
    line('ok', { type: 'code', prompt: 'fine' }),
    '{not json',
    line('ok', { type: 'code', prompt: 'duplicate id' }),
    line('bad-model', { type: 'code', prompt: 'x', model: 'no/such-model' }),
    { custom_id: 'u', method: 'POST', url: '/v1/chat/completions', body: { type: 'code', prompt: 'x' } },
  ]);
  const r = await cli(['batch', 'create', file, '--watch'], own);
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stdout, '');
  const lines = r.stderr.trimEnd().split('\n');
  assert.match(lines[0]!, /^kiln batch: invalid_request 400: The batch has 4 problems/);
  for (const pointer of ['/lines/2', '/lines/3/custom_id', '/lines/4/body/model', '/lines/5/url']) {
    assert.ok(lines.some((l) => l.startsWith(`  ${pointer}: `)), `${pointer} on a line of its own:\n${r.stderr}`);
  }
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.batches where account_id = ${own.ACCOUNT}`;
  assert.equal(n, 0);

  // Arguments: exit 2 before any request.
  for (const args of [['batch'], ['batch', 'frob'], ['batch', 'create'], ['batch', 'create', path.join(tempDir(), 'missing.jsonl')], ['batch', 'ls', '--limit', '0'], ['batch', 'get']]) {
    const u = await cli(args, own);
    assert.equal(u.code, 2, `${args.join(' ')}: ${u.stderr}`);
    assert.match(u.stderr, /^kiln batch: /);
  }
  const missing = await cli(['batch', 'get', '00000000-0000-4000-8000-000000000000'], own);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /not_found 404/);
});

test('Ctrl-C stops watching, not the batch; get --watch follows it again; cancel: it ends canceled (exit 5); a second cancel is a 409 (exit 1)', async () => {
  const file = jsonlFile(Array.from({ length: 30 }, (_, i) => line(`s${i}`, { type: 'code', prompt: `slow ${i}`, model: 'local/slow' })));
  const first = startCli(['batch', 'create', file, '--watch'], env, { timeoutMs: 90_000 });
  const created = await first.line((l) => l.event === 'created');
  await first.line((l) => l.event === 'progress');
  first.child.kill('SIGINT');
  const detached = await first.done;
  assert.equal(detached.code, 130, detached.stderr);
  assert.equal(detached.lines.at(-1).event, 'detached');
  assert.equal(detached.lines.at(-1).id, created.id);
  assert.match(detached.stderr, new RegExp(`stopped watching; the batch goes on \\(kiln batch get ${created.id}, kiln batch cancel ${created.id}\\)`));
  assert.equal((await api(srv.base, env.KILN_API_KEY!, `/batches/${created.id}`)).body.status, 'in_progress');

  const watching = startCli(['batch', 'get', created.id, '--watch'], env, { timeoutMs: 90_000 });
  await watching.line((l) => l.event === 'progress');
  const c = await cli(['batch', 'cancel', created.id], env);
  assert.equal(c.code, 0, c.stderr);
  assert.equal(c.lines[0].event, 'canceled');
  assert.equal(c.lines[0].id, created.id);
  assert.ok(['canceling', 'canceled'].includes(c.lines[0].status), c.lines[0].status);
  const done = await watching.done;
  assert.equal(done.code, 5, done.stderr);
  const result = done.lines.at(-1);
  assert.equal(result.event, 'result');
  assert.equal(result.status, 'canceled');
  assert.ok(result.requestCounts.canceled > 0);
  const again = await cli(['batch', 'cancel', created.id], env);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /conflict 409: The batch has already ended \(canceled\)/);
  const out = await cli(['batch', 'results', created.id], env);
  const results = out.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.equal(results.length, 30);
  assert.equal(results.filter((l) => l.error?.code === 'canceled').length, result.requestCounts.canceled);
});

test('on a terminal: a progress bar redrawn in place, then the outcome and where the results are', async () => {
  const file = jsonlFile(mixed(12, 't'));
  const r = await cliOnTty(['batch', 'create', file, '--watch'], { ...env, NO_COLOR: '1' }, { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.raw);
  assert.match(r.raw, /batch [0-9a-f-]{36} · 12 lines\r\n/, 'the live block names the batch');
  assert.match(r.raw, /in_progress +\[[█░]{24}\] \d+\/12  \d+\.\ds/, 'and draws its bar');
  const screen = finalScreen(r.raw);
  assert.equal(screen.length, 2, screen.join('\n'));
  assert.match(screen[0]!, /^✔ batch ([0-9a-f-]{36}) completed in \d+\.\ds · 12 lines: 12 completed · spent \$0\.\d{6}$/);
  const id = /batch ([0-9a-f-]{36})/.exec(screen[0]!)![1]!;
  assert.equal(screen[1], `results: kiln batch results ${id} -o results.jsonl`);
  await until('the batch is listed', async () => (await api(srv.base, env.KILN_API_KEY!, `/batches/${id}`)).body.status === 'completed', 5_000, 50);
});
