// Streamed output in the user CLI, as child processes against a real server and worker:
// `kiln generate code --stream` writes the code to stdout while the generation is still
// processing and ends with stdout exactly the code, once; on a terminal that is the default; a
// reset is told on stderr; `kiln run --watch` shows each output's characters while it is written,
// as JSON lines in a pipe and as lines redrawn in place on a terminal.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { cli, cliOnTty, finalScreen, startCli, tempDir } from './_cli.ts';
import { startTestWorker, until } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { saveWorkflow } from './_workflows.ts';

let srv: TestServer;
let accountId: string;
let env: Record<string, string>;

before(async () => {
  srv = await startServer();
  await startTestWorker(srv);
  // `delayMs` with streaming on: the local model writes its text in ~20 pieces over the delay.
  // `local/held`: no streaming, a minute long; a test writes its stream as the worker would.
  for (const [id, upstream] of [['local/streamer', { delayMs: 3000 }], ['local/held', { delayMs: 60_000, stream: false }]] as const) {
    await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
      id, name: id, category: 'text', provider: 'local', upstream,
      cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 400, markup: 1,
    })})`;
  }
  const a = await createAccount(srv.db.sql, { tier: 'enterprise' });
  accountId = a.id;
  env = { KILN_URL: srv.origin, KILN_API_KEY: (await createKey(srv.db.sql, a.id)).key };
});

const ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

test('generate code --stream in a pipe: the first bytes arrive while the generation is processing; stdout is exactly the code, once; the file too', async () => {
  const dir = tempDir();
  const running = startCli(['generate', 'code', '--prompt', 'A pricing card', '--model', 'local/streamer', '--lang', 'tsx', '--stream'], env, { cwd: dir });
  let stderr = '';
  running.child.stderr!.on('data', (b) => { stderr += b; });
  const firstBytes = await new Promise<string>((resolve) => running.child.stdout!.once('data', (b) => resolve(String(b))));
  // The id is on stderr's first line, written before any code.
  const id = (await until('the id on stderr', () => ID.exec(stderr)?.[0]));
  const atFirstBytes = await api(srv.base, env.KILN_API_KEY!, `/generations/${id}`);
  assert.equal(atFirstBytes.body.status, 'processing', 'the first bytes came before the generation finished');
  assert.ok(atFirstBytes.body.partial?.text?.startsWith(firstBytes), JSON.stringify(atFirstBytes.body));

  const r = await running.done;
  assert.equal(r.code, 0, r.stderr);
  const get = await api(srv.base, env.KILN_API_KEY!, `/generations/${id}`);
  assert.equal(get.body.status, 'completed');
  assert.ok(firstBytes.length < get.body.result.code.length);
  assert.equal(r.stdout, get.body.result.code, 'stdout is the code, once, and nothing else');
  const file = path.join(fs.realpathSync(dir), `${id}.tsx`);
  assert.equal(fs.readFileSync(file, 'utf8'), get.body.result.code);
  const lines = r.stderr.trimEnd().split('\n');
  assert.deepEqual(lines[0], `code · local/streamer · ${id}`);
  assert.match(lines[1]!, new RegExp(`^✔ completed in \\d+\\.\\ds · cost \\$0\\.${String(get.body.result.costMicros).padStart(6, '0')}$`));
  assert.equal(lines[2], file);
  assert.equal(lines.length, 3, r.stderr);
});

test('generate code on a terminal streams by default: the code, then the status and file under it; --no-stream keeps the live line only', async () => {
  const dir = tempDir();
  const r = await cliOnTty(['generate', 'code', '--prompt', 'A pricing card', '--model', 'local/streamer', '--lang', 'css'], env, { cwd: dir });
  assert.equal(r.code, 0, r.raw);
  const [file] = fs.readdirSync(dir);
  const id = file!.slice(0, 36);
  const get = await api(srv.base, env.KILN_API_KEY!, `/generations/${id}`);
  const code: string = get.body.result.code;
  const screen = finalScreen(r.raw);
  const codeLines = code.split('\n').filter((l) => l.trim() !== '').map((l) => l.trimEnd());
  assert.deepEqual(screen.slice(1, -2), codeLines, 'the code once, between the header and the status');
  assert.equal(screen[0], `code · local/streamer · ${id}`);
  assert.match(screen.at(-2)!, /^✔ completed in \d+\.\ds · cost \$0\.\d{6}$/);
  assert.equal(screen.at(-1), path.join(fs.realpathSync(dir), file!));
  // Written as it came: in several writes while the generation ran (the pieces are in the raw bytes in order).
  assert.ok(!r.raw.includes('\x1b[2K'), 'no line redrawn over the code');

  const plain = await cliOnTty(['generate', 'code', '--prompt', 'A pricing card', '--model', 'local/streamer', '--no-stream'], env, { cwd: dir });
  assert.equal(plain.code, 0, plain.raw);
  const plainScreen = finalScreen(plain.raw);
  assert.equal(plainScreen.length, 2, plainScreen.join('\n'));
  assert.match(plainScreen[0]!, /^✔ completed in/);
});

test('generate code --stream: a reset is told on stderr with where the new text starts on stdout', async () => {
  const running = startCli(['generate', 'code', '--prompt', 'held', '--model', 'local/held', '--stream'], env, { cwd: tempDir() });
  let stderr = '';
  running.child.stderr!.on('data', (b) => { stderr += b; });
  const id = await until('the id on stderr', () => ID.exec(stderr)?.[0]);
  const worker = await until('processing', async () => {
    const [g] = await srv.db.sql<Array<{ status: string; worker_id: string | null }>>`select status, worker_id from kiln_private.generations where id = ${id}`;
    return g?.status === 'processing' && g.worker_id;
  });
  const flush = (session: number, offset: number, text: string) =>
    srv.db.sql`select kiln.stream_generation(${id}::uuid, ${worker}, ${session}::int, ${offset}::int, ${text}, null, null)`;
  await flush(0, 0, 'first "ü" try\n');
  await until('the first text on stdout', () => running.stdout() === 'first "ü" try\n');
  await srv.db.sql`select kiln.cut_generation_stream(${id}::uuid, ${worker})`;
  await until('the reset on stderr', () => stderr.includes('started over'));
  await flush(-1, 0, 'second');
  await until('the second text on stdout', () => running.stdout().endsWith('second'));
  await api(srv.base, env.KILN_API_KEY!, `/generations/${id}/cancel`, { method: 'POST' });
  const r = await running.done;
  assert.equal(r.code, 5, r.stderr);
  assert.equal(r.stdout, 'first "ü" try\nsecond');
  const bytes = Buffer.byteLength('first "ü" try\n');
  assert.match(r.stderr, new RegExp(`^kiln generate: the generation started over \\(attempt 2\\): stdout from byte ${bytes} on replaces the ${bytes} bytes before it$`, 'm'));
  assert.match(r.stderr, /^✖ failed in \d+\.\ds · nothing charged/m);
});

test('--stream is for code, and neither with --no-stream nor with --json', async () => {
  for (const [args, message] of [
    [['generate', 'image', '--prompt', 'x', '--stream'], /--stream is for code/],
    [['generate', 'code', '--prompt', 'x', '--stream', '--no-stream'], /contradict/],
    [['generate', 'code', '--prompt', 'x', '--stream', '--json'], /choose one/],
  ] as const) {
    const r = await cli([...args], env);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, message);
    assert.equal(r.stdout, '');
  }
});

const graph = {
  nodes: [
    { id: 'p1', kind: 'prompt', output: 'code', prompt: 'one', model: 'local/streamer' }, { id: 'o1', kind: 'output', label: 'One' },
    { id: 'p2', kind: 'prompt', output: 'code', prompt: 'two', model: 'local/streamer' }, { id: 'o2', kind: 'output' },
  ],
  edges: [{ from: 'p1', to: 'o1' }, { from: 'p2', to: 'o2' }],
};

test('run --watch in a pipe: output_progress lines with each output\'s characters while it is written, before its output line', async () => {
  const wf = await saveWorkflow(srv, accountId, graph, 'streamed');
  const r = await cli(['run', wf, '--watch'], env);
  assert.equal(r.code, 0, r.stderr);
  const result = r.lines.at(-1);
  assert.equal(result.event, 'result');
  assert.equal(result.status, 'completed');
  for (const [p, o] of [['p1', 'o1'], ['p2', 'o2']]) {
    const code: string = result.results.find((x: any) => x.outputNodeId === o).code;
    const at = r.lines.findIndex((l) => l.event === 'output' && l.outputNodeId === o);
    const writing = r.lines.filter((l) => l.event === 'output_progress' && l.outputNodeId === o);
    assert.ok(writing.length >= 2, `${o}: ${JSON.stringify(r.lines)}`);
    assert.ok(writing.every((l) => r.lines.indexOf(l) < at && l.promptNodeId === p && l.run_id === result.run_id && l.attempt === 1));
    const chars = writing.map((l) => l.chars);
    assert.ok(chars.every((n, i) => n > 0 && n <= [...code].length && (i === 0 || n > chars[i - 1])), `${o}: ${chars}`);
  }
  // The run's own progress lines stay { total, completed }.
  assert.deepEqual(r.lines.filter((l) => l.event === 'progress').map((l) => [l.total, l.completed]), [[2, 1], [2, 2]]);
});

test('run --watch on a terminal: one line per output showing its characters while it is written, then its result in place', async () => {
  const wf = await saveWorkflow(srv, accountId, graph, 'streamed tty');
  const r = await cliOnTty(['run', wf, '--watch'], env);
  assert.equal(r.code, 0, r.raw);
  // Drawn while running: each output's line with its characters so far (a redraw replaces it).
  for (const o of ['o1', 'o2']) assert.match(r.raw, new RegExp(`\\x1b\\[2K {2}\\S ${o} {2}(\\x1b\\[2m)?[\\d,]+ chars`), o);
  const screen = finalScreen(r.raw);
  assert.equal(screen.length, 3, screen.join('\n'));
  assert.match(screen[0]!, /^✔ run \S+ completed in .* 2\/2 outputs/);
  assert.deepEqual(screen.slice(1).map((l) => /^ {2}✔ (\S+(?: \(\w+\))?)/.exec(l)?.[1]).sort(), ['One (o1)', 'o2']);
  assert.ok(screen.every((l) => !/chars|waiting/.test(l)));
});
