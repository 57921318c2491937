// The user CLI on a pseudo-terminal (script(1)): the live line redrawn in place, and the screen it
// leaves — the settled status and the cost. And Ctrl-C: SIGINT to a running `kiln generate` or
// `kiln run --watch` cancels the job on the server (nothing charged) before the CLI exits 130.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { before, test } from 'node:test';
import { LiveBlock } from '../src/cli/user/live.ts';
import { cliOnTty, finalScreen, startCli, tempDir } from './_cli.ts';
import { charges, startTestWorker } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { saveWorkflow } from './_workflows.ts';

let srv: TestServer;
let accountId: string;
let env: Record<string, string>;

before(async () => {
  srv = await startServer();
  await startTestWorker(srv);
  // A code model that takes 30 s: still running when Ctrl-C comes.
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/slow-coder', name: 'Slow coder', category: 'text', provider: 'local', upstream: { delayMs: 30_000 },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
  })})`;
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  accountId = a.id;
  env = { KILN_URL: srv.origin, KILN_API_KEY: (await createKey(srv.db.sql, a.id)).key };
});

test('LiveBlock: a block taller than the terminal is drawn as rows − 1 lines, the last "+N more"; cursor-up never exceeds them', () => {
  let written = '';
  const out = Object.assign(new PassThrough(), { columns: 80, rows: 6 }) as unknown as NodeJS.WriteStream;
  out.write = ((chunk: string) => { written += chunk; return true; }) as typeof out.write;
  const lines = Array.from({ length: 12 }, (_, i) => `output ${i + 1}`);
  const block = new LiveBlock(out, () => lines, 1_000_000);
  block.draw();
  block.draw();
  const draws = written.replace(/\x1b\[\?25[lh]/g, '').split(/(?=\x1b\[\d+A)/);
  assert.equal(draws.length, 3);
  for (const d of draws) {
    assert.equal(d.match(/\n/g)?.length, 5, JSON.stringify(d));
    assert.match(d, /output 4\n\r\x1b\[2K.*\+8 more.*\n$/);
    const up = /^\x1b\[(\d+)A/.exec(d);
    if (up) assert.equal(Number(up[1]), 5);
  }
  written = '';
  block.close();
  // The last drawing is never redrawn: shown whole.
  assert.match(written, /output 12\n/);
});

test('on a terminal with --no-stream: one live line redrawn in place; the final screen shows the settled status, the cost and the file', async () => {
  const dir = tempDir();
  const [ok, failed] = await Promise.all([
    // Code streams to a terminal by default (test/cli.user.stream.test.ts); --no-stream keeps this view.
    cliOnTty(['generate', 'code', '--prompt', 'A pricing card', '--lang', 'css', '--no-stream'], env, { cwd: dir }),
    cliOnTty(['generate', 'image', '--prompt', 'A fox', '--image', 'https://kiln-cli-test.invalid/in.png', '--out', path.join(dir, 'never.png')], env),
  ]);
  assert.equal(ok.code, 0, ok.raw);
  const screen = finalScreen(ok.raw);
  const [file] = fs.readdirSync(dir);
  assert.match(file!, /^[0-9a-f-]{36}\.css$/);
  const id = file!.slice(0, 36);
  const get = await api(srv.base, env.KILN_API_KEY!, `/generations/${id}`);
  const cost = String(get.body.result.costMicros).padStart(6, '0');
  assert.equal(screen.length, 2, screen.join('\n'));
  assert.match(screen[0]!, new RegExp(`^✔ completed in \\d+\\.\\ds · cost \\$0\\.${cost}$`));
  assert.equal(screen[1], path.join(fs.realpathSync(dir), file!));
  // The line was drawn more than once (the spinner and the statuses before the last), in place.
  assert.ok((ok.raw.match(/\x1b\[2K/g) ?? []).length > 1, 'redrawn');
  assert.match(ok.raw, /pending|processing/);
  assert.ok(!ok.raw.includes('{"event"'), 'no JSON lines on a terminal');

  assert.equal(failed.code, 5, failed.raw);
  const failedScreen = finalScreen(failed.raw);
  assert.equal(failedScreen.length, 1, failedScreen.join('\n'));
  assert.match(failedScreen[0]!, /^✖ failed in \d+\.\ds · nothing charged · images\[0\]: (image URL host could not be resolved|timed out fetching image URL)$/);
  assert.deepEqual(fs.readdirSync(dir), [file]);
});

test('run --watch on a terminal: one line per output, updated in place; then the total cost', async () => {
  const graph = {
    nodes: [
      { id: 'brief', kind: 'text', text: 'Autumn sale' },
      { id: 'p1', kind: 'prompt', output: 'code', prompt: 'Tagline', model: 'local/coder' }, { id: 'o1', kind: 'output', label: 'Tagline' },
      { id: 'p2', kind: 'prompt', output: 'image', prompt: 'Hero', model: 'local/sketch' }, { id: 'o2', kind: 'output', label: 'Hero' },
      { id: 'p3', kind: 'prompt', output: 'code', prompt: 'Footer', model: 'local/coder' }, { id: 'o3', kind: 'output' },
    ],
    edges: [{ from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }, { from: 'brief', to: 'p2' }, { from: 'p2', to: 'o2' }, { from: 'o1', to: 'p3' }, { from: 'p3', to: 'o3' }],
  };
  const wf = await saveWorkflow(srv, accountId, graph, 'tty workflow');
  const r = await cliOnTty(['run', wf, '--watch'], env);
  assert.equal(r.code, 0, r.raw);
  const screen = finalScreen(r.raw);
  assert.equal(screen.length, 4, screen.join('\n'));
  const runId = /run ([0-9a-f-]{36})/.exec(screen[0]!)![1];
  const run = await api(srv.base, env.KILN_API_KEY!, `/workflows/${wf}/runs/${runId}`);
  const total = run.body.results.reduce((n: number, o: any) => n + o.costMicros, 0);
  assert.match(screen[0]!, new RegExp(`^✔ run ${runId} completed in \\d+\\.\\ds · 3/3 outputs · total cost \\$0\\.${String(total).padStart(6, '0')}$`));
  assert.deepEqual(screen.slice(1).map((l) => /^ {2}✔ (\S+(?: \(\w+\))?)/.exec(l)?.[1]).sort(), ['Hero (o2)', 'Tagline (o1)', 'o3']);
  assert.ok(screen.slice(1).every((l) => !l.includes('waiting')));
});

test('Ctrl-C during `kiln generate`: the generation is canceled on the server, nothing is charged, no file, exit 130', async () => {
  const dir = tempDir();
  const running = startCli(['generate', 'code', '--prompt', 'slow', '--model', 'local/slow-coder', '--out', path.join(dir, 'slow.txt')], env);
  const processing = await running.line((l) => l.status === 'processing');
  const id = processing.id;
  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => c.status), ['reserved']);
  running.child.kill('SIGINT');
  const r = await running.done;
  assert.equal(r.code, 130, r.stderr);
  const last = r.lines.at(-1);
  assert.deepEqual([last.event, last.id, last.status, last.error, last.canceled, last.cost_micros, last.file], ['result', id, 'failed', 'canceled', true, 0, null]);
  const get = await api(srv.base, env.KILN_API_KEY!, `/generations/${id}`);
  assert.deepEqual(get.body, { id, status: 'failed', result: null, error: 'canceled', prompt: 'slow' });
  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => [c.status, c.settled]), [['released', null]]);
  assert.deepEqual(fs.readdirSync(dir), []);
});

test('Ctrl-C during `kiln run --watch`: the run is canceled on the server, exit 130', async () => {
  const graph = {
    nodes: [{ id: 'p1', kind: 'prompt', output: 'code', prompt: 'slow', model: 'local/slow-coder' }, { id: 'o1', kind: 'output' }],
    edges: [{ from: 'p1', to: 'o1' }],
  };
  const wf = await saveWorkflow(srv, accountId, graph, 'slow workflow');
  const usage = async () => (await api(srv.base, env.KILN_API_KEY!, '/usage')).body.used_micros;
  const usedBefore = await usage();
  const running = startCli(['run', wf, '--watch'], env);
  const status = await running.line((l) => l.event === 'status' && l.status === 'running');
  running.child.kill('SIGINT');
  const r = await running.done;
  assert.equal(r.code, 130, r.stderr);
  const last = r.lines.at(-1);
  assert.deepEqual([last.event, last.run_id, last.status, last.canceled], ['result', status.run_id, 'failed', true]);
  const run = await api(srv.base, env.KILN_API_KEY!, `/workflows/${wf}/runs/${status.run_id}`);
  assert.equal(run.body.status, 'failed');
  assert.equal(await usage(), usedBefore, 'nothing charged or held for the canceled work');
});
