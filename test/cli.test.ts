// The operator CLI against a real database: every command prints JSON, errors go to stderr
// with a non-zero exit code.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, test } from 'node:test';
import { promisify } from 'node:util';
import { api, createTestDb, type TestDb } from './_setup.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');
let db: TestDb;

before(async () => {
  db = await createTestDb();
});

async function kiln(args: string[], env: Record<string, string> = {}) {
  try {
    const r = await promisify(execFile)(process.execPath, [BIN, ...args], {
      env: { ...process.env, DATABASE_URL: db.url, KILN_LOG: 'silent', ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr, json: r.stdout.trim() ? JSON.parse(r.stdout) : undefined };
  } catch (e: any) {
    return { code: e.code as number, stdout: e.stdout as string, stderr: e.stderr as string, json: undefined };
  }
}

test('users, keys, workspaces, plans and usage through the CLI', async () => {
  const user = await kiln(['user', 'create', '--email', 'ops@example.com', '--tier', 'pro']);
  assert.equal(user.code, 0, user.stderr);
  assert.match(user.json.id, /^[0-9a-f-]{36}$/);
  assert.equal(user.json.budget_micros, 20_000_000);

  const dup = await kiln(['user', 'create', '--email', 'OPS@example.com']);
  assert.notEqual(dup.code, 0);
  assert.match(dup.stderr, /already exists/);
  assert.equal(dup.stdout, '');

  const set = await kiln(['user', 'set', '--user', user.json.id, '--budget-micros', 'unlimited', '--tier', 'enterprise']);
  assert.equal(set.json.budget_micros, null);
  assert.equal(set.json.tier, 'enterprise');

  const key = await kiln(['key', 'create', '--user', user.json.id, '--scopes', 'read', '--rpm', '30']);
  assert.equal(key.code, 0, key.stderr);
  assert.match(key.json.key, /^kiln_live_[0-9A-Za-z]{40}$/);
  assert.deepEqual(key.json.scopes, ['read']);
  assert.equal(key.json.rpm, 30);
  const [stored] = await db.sql`select encode(key_hash, 'hex') as h, display_prefix from kiln_private.api_keys where id = ${key.json.id}`;
  assert.notEqual(stored.h, key.json.key, 'only the hash is stored');
  assert.ok(!JSON.stringify(stored).includes(key.json.key.slice(10)));

  const ws = await kiln(['workspace', 'create', '--name', 'Acme', '--owner', user.json.id]);
  assert.equal(ws.code, 0, ws.stderr);
  const other = await kiln(['user', 'create', '--email', 'm@example.com']);
  const add = await kiln(['workspace', 'member', 'add', '--workspace', ws.json.id, '--user', other.json.id, '--role', 'admin']);
  assert.equal(add.json.role, 'admin');
  const plan = await kiln(['workspace', 'plan', '--workspace', ws.json.id, '--status', 'active', '--budget-micros', '5000000']);
  assert.equal(plan.json.plan_status, 'active');
  const wkey = await kiln(['key', 'create', '--user', other.json.id, '--workspace', ws.json.id]);
  assert.equal(wkey.code, 0, wkey.stderr);
  const usage = await kiln(['usage', '--user', other.json.id, '--workspace', ws.json.id]);
  assert.equal(usage.json.scope, 'workspace');
  assert.equal(usage.json.workspace_budget_micros, 5_000_000);
  const rm = await kiln(['workspace', 'member', 'remove', '--workspace', ws.json.id, '--user', other.json.id]);
  assert.ok(rm.json.left_at);

  const revoke = await kiln(['key', 'revoke', '--key-id', key.json.id]);
  assert.ok(revoke.json.revoked_at);

  // Any set of the four scopes, a key budget and an expiry; a bad scope or a past expiry is a usage error.
  const full = await kiln(['key', 'create', '--user', user.json.id, '--scopes', 'read,write,keys,admin', '--budget-micros', '2500', '--expires-at', '2099-01-01T00:00:00Z']);
  assert.equal(full.code, 0, full.stderr);
  assert.deepEqual(full.json.scopes, ['read', 'write', 'keys', 'admin']);
  assert.equal(full.json.budget_micros, 2500);
  assert.equal(full.json.expires_at, '2099-01-01T00:00:00Z');
  assert.equal((await kiln(['key', 'create', '--user', user.json.id, '--scopes', 'read,root'])).code, 2);
  assert.equal((await kiln(['key', 'create', '--user', user.json.id, '--expires-at', '2001-01-01T00:00:00Z'])).code, 2);

  // The operator's audit log: what the commands above did, newest first, as the operator.
  const audit = await kiln(['audit', '--user', user.json.id]);
  assert.equal(audit.code, 0, audit.stderr);
  const actions = audit.json.data.map((e: any) => e.action);
  assert.deepEqual(actions.slice(0, 3), ['key.created', 'key.revoked', 'key.created']);
  assert.ok(audit.json.data.every((e: any) => e.actor_type === 'operator'));
  const keysOnly = await kiln(['audit', '--action', 'key.revoked', '--limit', '5']);
  assert.ok(keysOnly.json.data.length >= 1 && keysOnly.json.data.every((e: any) => e.action === 'key.revoked'));
});

test('key create --require-end-user makes a key whose spending requests must name an end user', async () => {
  const user = await kiln(['user', 'create', '--email', 'app@example.com', '--tier', 'pro']);
  const plain = await kiln(['key', 'create', '--user', user.json.id]);
  assert.equal(plain.json.require_end_user, false);
  const k = await kiln(['key', 'create', '--user', user.json.id, '--require-end-user']);
  assert.equal(k.code, 0, k.stderr);
  assert.equal(k.json.require_end_user, true);
  const [row] = await db.sql`select require_end_user from kiln_private.api_keys where id = ${k.json.id}`;
  assert.equal(row!.require_end_user, true);
  const [audit] = await db.sql`select details from kiln_private.audit_log where target_id = ${k.json.id} and action = 'key.created'`;
  assert.equal(audit!.details.requireEndUser, true);
});

test('model upsert validates the file and the entry shows up in model list', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-cli-'));
  const file = path.join(dir, 'model.json');
  fs.writeFileSync(file, JSON.stringify({
    id: 'acme/coder', name: 'Acme Coder', category: 'text', provider: 'openai',
    upstream: { baseUrl: 'http://127.0.0.1:9999/v1', model: 'coder-1', apiKeyEnv: 'ACME_API_KEY' },
    supports_image_input: false, input_modalities: ['text'], output_modalities: ['text'],
    cost: { input_micros_per_token: 3, output_micros_per_token: 15 }, maxOutputTokens: 4096, markup: 1.25, enabled: true,
  }));
  const up = await kiln(['model', 'upsert', '--file', file]);
  assert.equal(up.code, 0, up.stderr);
  assert.equal(up.json.id, 'acme/coder');
  const list = await kiln(['model', 'list']);
  const acme = list.json.find((m: any) => m.id === 'acme/coder');
  assert.equal(acme.markup, 1.25);
  assert.deepEqual(acme.cost, { input_micros_per_token: 3, output_micros_per_token: 15 });

  fs.writeFileSync(file, JSON.stringify({ id: 'bad', name: 'x', category: 'video', provider: 'openai' }));
  const bad = await kiln(['model', 'upsert', '--file', file]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /category/);
  fs.writeFileSync(file, JSON.stringify({ id: 'img', name: 'x', category: 'image', provider: 'openai', cost: { input_micros_per_token: 1, output_micros_per_token: 1 } }));
  const mismatch = await kiln(['model', 'upsert', '--file', file]);
  assert.equal(mismatch.code, 2);
  assert.match(mismatch.stderr, /micros_per_image/);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('model list prints entries in the upsert file format: each loads back unchanged, and a key left out keeps its value', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-cli-'));
  const file = path.join(dir, 'model.json');
  fs.writeFileSync(file, JSON.stringify({
    id: 'acme/round', name: 'Round Trip', description: 'd', category: 'text', provider: 'openai',
    upstream: { baseUrl: 'http://127.0.0.1:9999/v1', model: 'coder-1' }, supports_image_input: true,
    input_modalities: ['text', 'image'], output_modalities: ['text'], cost: { input_micros_per_token: 2, output_micros_per_token: 9 },
    maxOutputTokens: 512, markup: 1.5, enabled: false, sort_order: 7, fallbacks: ['local/coder'],
  }));
  assert.equal((await kiln(['model', 'upsert', '--file', file])).code, 0);
  const before = await kiln(['model', 'list']);
  assert.equal(before.code, 0, before.stderr);
  const round = before.json.find((m: any) => m.id === 'acme/round');
  assert.equal(round.maxOutputTokens, 512);
  assert.equal(round.sort_order, 7);
  assert.ok(!('max_output_tokens' in round));
  // Every listed entry (the seeded ones too), written back as it is printed, is accepted and changes nothing.
  for (const entry of before.json) {
    fs.writeFileSync(file, JSON.stringify(entry));
    const up = await kiln(['model', 'upsert', '--file', file]);
    assert.equal(up.code, 0, `${entry.id}: ${up.stderr}`);
  }
  const after = await kiln(['model', 'list']);
  const strip = (l: any[]) => l.map(({ updated_at: _, ...m }) => m);
  assert.deepEqual(strip(after.json), strip(before.json));

  // Only the name given: everything else keeps its stored value (sort_order included); null clears.
  fs.writeFileSync(file, JSON.stringify({ id: 'acme/round', name: 'Renamed', category: 'text', provider: 'openai' }));
  assert.equal((await kiln(['model', 'upsert', '--file', file])).code, 0);
  fs.writeFileSync(file, JSON.stringify({ id: 'acme/round', name: 'Renamed', category: 'text', provider: 'openai', description: null }));
  assert.equal((await kiln(['model', 'upsert', '--file', file])).code, 0);
  const [row] = await db.sql`select name, description, sort_order, markup::float8 as markup, enabled, max_output_tokens, fallbacks, cost from kiln.models where id = 'acme/round'`;
  assert.deepEqual({ ...row }, {
    name: 'Renamed', description: null, sort_order: 7, markup: 1.5, enabled: false, max_output_tokens: 512,
    fallbacks: ['local/coder'], cost: { input_micros_per_token: 2, output_micros_per_token: 9 },
  });
  // A new entry without sort_order still gets the default.
  fs.writeFileSync(file, JSON.stringify({ id: 'acme/fresh', name: 'Fresh', category: 'text', provider: 'local' }));
  assert.equal((await kiln(['model', 'upsert', '--file', file])).code, 0);
  assert.equal((await db.sql`select sort_order from kiln.models where id = 'acme/fresh'`)[0]!.sort_order, 100);

  // Every bad key and value in one run, nothing stored.
  fs.writeFileSync(file, JSON.stringify({
    id: 'acme/round', name: 'Again', category: 'text', provider: 'openai', sortOrder: 1, max_output_tokens: 9,
    colour: 'red', upstream: { baseURL: 'http://x/v1', baseUrl: 'http://127.0.0.1:9999/v1' }, enabled: 'yes', markup: 0.5,
  }));
  const bad = await kiln(['model', 'upsert', '--file', file]);
  assert.equal(bad.code, 2);
  assert.equal(bad.stdout, '');
  assert.match(bad.stderr, /6 problems/);
  assert.match(bad.stderr, /sortOrder: unknown key \(the key is sort_order\)/);
  assert.match(bad.stderr, /max_output_tokens: unknown key \(the key is maxOutputTokens\)/);
  assert.match(bad.stderr, /colour: unknown key\n/);
  assert.match(bad.stderr, /upstream\.baseURL: unknown key \(the key is upstream\.baseUrl\)/);
  assert.match(bad.stderr, /enabled: /);
  assert.match(bad.stderr, /markup: /);
  assert.equal((await db.sql`select name from kiln.models where id = 'acme/round'`)[0]!.name, 'Renamed');
  fs.rmSync(dir, { recursive: true, force: true });
});

test('usage errors exit non-zero with a message on stderr and nothing on stdout', async () => {
  for (const args of [
    ['user', 'create'],
    ['user', 'create', '--email', 'x@example.com', '--tier', 'gold'],
    ['key', 'create', '--user', 'not-a-uuid'],
    ['key', 'create', '--user', '00000000-0000-0000-0000-000000000000', '--scopes', 'root'],
    ['workspace', 'plan', '--workspace', '00000000-0000-0000-0000-000000000000', '--status', 'gone'],
    ['frobnicate'],
  ]) {
    const r = await kiln(args);
    assert.notEqual(r.code, 0, args.join(' '));
    assert.equal(r.stdout, '', args.join(' '));
    assert.ok(r.stderr.length > 0);
  }
  const missing = await kiln(['key', 'revoke', '--key-id', '00000000-0000-0000-0000-000000000000']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /not found/);
});

test('an unknown KILN_LOG level stops start-up with a message naming the accepted ones', async () => {
  for (const args of [['api'], ['migrate'], ['model', 'list']]) {
    const r = await kiln(args, { KILN_LOG: 'verbose', PORT: '0' });
    assert.equal(r.code, 1, args.join(' '));
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /KILN_LOG must be one of debug, info, warn, error, silent, got "verbose"/);
  }
  for (const level of ['debug', 'warn', 'error', 'silent']) {
    const r = await kiln(['model', 'list'], { KILN_LOG: level });
    assert.equal(r.code, 0, `${level}: ${r.stderr}`);
  }
});

test('kiln migrate is idempotent', async () => {
  const r = await kiln(['migrate']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.migrated, true);
});

test('kiln api serves the API against DATABASE_URL and stops cleanly on SIGTERM', async () => {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [BIN, 'api'], { env: { ...process.env, DATABASE_URL: db.url, PORT: '0', KILN_LOG: 'silent' } });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const base = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no listen line: ${out}`)), 30_000);
    child.stdout.on('data', () => {
      const m = /listening on (http:\S+)/.exec(out);
      if (m) { clearTimeout(t); resolve(m[1]); }
    });
  });
  const res = await api(base, null, '/openapi.json');
  assert.equal(res.status, 200);
  child.kill('SIGTERM');
  const code = await new Promise((resolve) => child.on('exit', (c) => resolve(c)));
  assert.equal(code, 0);
});
