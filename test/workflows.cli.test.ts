// `kiln workflow import` / `kiln workflow export` against a real database: graphs are validated
// before they are stored, --id replaces a graph (an edit), export prints the stored graph.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, test } from 'node:test';
import { promisify } from 'node:util';
import { createAccount, createTestDb, type TestDb } from './_setup.ts';
import { EXAMPLES } from './_workflows.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');
let db: TestDb;

before(async () => {
  db = await createTestDb();
});

async function kiln(args: string[]) {
  try {
    const r = await promisify(execFile)(process.execPath, [BIN, ...args], { env: { ...process.env, DATABASE_URL: db.url, KILN_LOG: 'silent' }, timeout: 60_000 });
    return { code: 0, stderr: r.stderr, json: r.stdout.trim() ? JSON.parse(r.stdout) : undefined };
  } catch (e: any) {
    return { code: e.code as number, stderr: e.stderr as string, json: undefined };
  }
}

test('import validates and stores, --id replaces (bumping updated_at), export prints the stored graph', async () => {
  const user = await createAccount(db.sql);
  const file = path.join(EXAMPLES, 'social-campaign.json');
  const imported = await kiln(['workflow', 'import', '--user', user.id, '--file', file]);
  assert.equal(imported.code, 0, imported.stderr);
  assert.match(imported.json.id, /^[0-9a-f-]{36}$/);
  assert.equal(imported.json.name, 'Autumn sale social campaign', 'the file\'s name is the default');
  assert.equal(imported.json.nodes, 10);
  assert.equal(imported.json.user, user.id);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-wf-'));
  const bad = path.join(dir, 'bad.json');
  fs.writeFileSync(bad, JSON.stringify({
    nodes: [{ id: 'p1', kind: 'prompt', output: 'image', prompt: 'x', model: 'local/coder' }, { id: 'o1', kind: 'output' }],
    edges: [{ from: 'p1', to: 'o1' }, { from: 'o1', to: 'p1' }],
  }));
  const rejected = await kiln(['workflow', 'import', '--user', user.id, '--file', bad, '--name', 'Bad']);
  assert.equal(rejected.code, 1);
  assert.match(rejected.stderr, /invalid graph: .*cycle: .*p1.*o1/);
  assert.match(rejected.stderr, /node "p1": model "local\/coder" is a text model and cannot produce image output/);
  const [{ n }] = await db.sql`select count(*)::int as n from kiln_private.workflows where account_id = ${user.id}`;
  assert.equal(n, 1, 'nothing stored');

  const replaced = await kiln(['workflow', 'import', '--id', imported.json.id, '--file', path.join(EXAMPLES, 'product-teaser-video.json'), '--name', 'Teaser']);
  assert.equal(replaced.code, 0, replaced.stderr);
  assert.equal(replaced.json.id, imported.json.id);
  assert.equal(replaced.json.name, 'Teaser');
  assert.ok(Date.parse(replaced.json.updated_at) > Date.parse(imported.json.updated_at));

  const exported = await kiln(['workflow', 'export', '--id', imported.json.id]);
  assert.equal(exported.code, 0, exported.stderr);
  assert.deepEqual(exported.json, JSON.parse(fs.readFileSync(path.join(EXAMPLES, 'product-teaser-video.json'), 'utf8')));

  const missing = await kiln(['workflow', 'export', '--id', '00000000-0000-4000-8000-000000000000']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /workflow not found/);
  fs.rmSync(dir, { recursive: true, force: true });
});
