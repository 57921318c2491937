// Every CLI output that is one JSON document ends with a newline, so `kiln me --json >> log`,
// `kiln user create … | jq` and a shell prompt after `kiln usage` all start on a fresh line:
// the user commands' one-line answers (me, run, transform, the last line of generate), what
// they print for a person on a terminal, and every operator command's JSON, through the real
// binary against a real server, worker and database.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { promisify } from 'node:util';
import { BIN, cli, cliOnTty, tempDir } from './_cli.ts';
import { startTestWorker } from './_generations.ts';
import { createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { saveWorkflow } from './_workflows.ts';

let srv: TestServer;
let accountId: string;
let env: Record<string, string>;

before(async () => {
  srv = await startServer();
  await startTestWorker(srv);
  accountId = (await createAccount(srv.db.sql, { tier: 'pro' })).id;
  env = { KILN_URL: `${srv.origin}/api/v1/`, KILN_API_KEY: (await createKey(srv.db.sql, accountId)).key };
});

/** stdout is exactly one JSON document and one newline, nothing before or after. */
function oneDocument(name: string, stdout: string): any {
  assert.ok(stdout.endsWith('\n'), `${name}: ends with a newline: ${JSON.stringify(stdout.slice(-20))}`);
  assert.ok(!stdout.endsWith('\n\n'), `${name}: one newline, not a blank line`);
  return JSON.parse(stdout);
}

test('user commands: me, run and transform print one JSON line ending in a newline; generate ends its last line', async () => {
  const dir = tempDir();
  const workflow = await saveWorkflow(srv, accountId, {
    nodes: [
      { id: 'brief', kind: 'text', text: 'Autumn sale' },
      { id: 'p1', kind: 'prompt', output: 'code', targetLanguage: 'css', prompt: 'A banner' },
      { id: 'o1', kind: 'output', label: 'Banner' },
    ],
    edges: [{ from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }],
  });
  const [me, started, generated] = await Promise.all([
    cli(['me', '--json'], env),
    cli(['run', workflow], env),
    cli(['generate', 'image', '--prompt', 'A fox', '--out', path.join(dir, 'fox.png')], env),
  ]);
  for (const [name, r] of [['me', me], ['run', started], ['generate', generated]] as const) {
    assert.equal(r.code, 0, `${name}: ${r.stderr}`);
    assert.ok(r.stdout.endsWith('}\n'), `${name}: ${JSON.stringify(r.stdout.slice(-20))}`);
  }
  assert.equal(oneDocument('me', me.stdout).tier, 'pro');
  assert.equal(oneDocument('run', started.stdout).event, 'started');
  assert.equal(generated.lines.at(-1).event, 'result');
  const transformed = await cli(['transform', generated.lines.at(-1).url, '--op', 'convert', '--format', 'webp'], env);
  assert.equal(transformed.code, 0, transformed.stderr);
  assert.equal(oneDocument('transform', transformed.stdout).format, 'webp');
  const models = await cli(['models'], env);
  assert.ok(models.stdout.endsWith('}\n') && models.lines.length >= 3, 'models: one line per model, the last ended');
});

test('on a terminal, kiln me leaves the cursor on a fresh line', async () => {
  const r = await cliOnTty(['me'], env);
  assert.equal(r.code, 0, r.raw);
  assert.match(r.raw, /^account [0-9a-f-]{36} · \S+@\S+ · scopes read,write\r?\ntier pro · personal budget\r?\npersonal {3}used \$0\.\d+ of \$20\.\d+.*\r?\n$/s);
});

test('operator commands: each JSON answer is one document ending in a newline', async () => {
  const kiln = async (args: string[]) => {
    const r = await promisify(execFile)(process.execPath, [BIN, ...args], {
      env: { ...process.env, DATABASE_URL: srv.db.url, KILN_LOG: 'silent' },
      timeout: 60_000,
    });
    return oneDocument(args.slice(0, 2).join(' '), r.stdout);
  };
  const dir = tempDir();
  const user = await kiln(['user', 'create', '--email', 'newline@example.com']);
  const ws = await kiln(['workspace', 'create', '--name', 'Newline', '--owner', user.id]);
  const key = await kiln(['key', 'create', '--user', user.id]);
  const file = path.join(dir, 'graph.json');
  fs.writeFileSync(file, JSON.stringify({
    nodes: [{ id: 'p1', kind: 'prompt', output: 'code', prompt: 'x' }, { id: 'o1', kind: 'output' }],
    edges: [{ from: 'p1', to: 'o1' }],
  }));
  const wf = await kiln(['workflow', 'import', '--user', user.id, '--file', file]);
  const answers = await Promise.all([
    kiln(['user', 'set', '--user', user.id, '--tier', 'pro']),
    kiln(['usage', '--user', user.id]),
    kiln(['model', 'list']),
    kiln(['workflow', 'export', '--id', wf.id]),
    kiln(['workspace', 'plan', '--workspace', ws.id, '--status', 'active']),
    kiln(['identity', 'list', '--user', user.id]),
    kiln(['migrate']),
  ]);
  assert.ok(Array.isArray(answers[2]) && Array.isArray(answers[5]));
  assert.ok((await kiln(['key', 'revoke', '--key-id', key.id])).revoked_at);
});
