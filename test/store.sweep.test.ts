// Bytes before rows, and the sweep: a worker killed after its image reached the bucket but
// before the row committed leaves bytes without a row (never a row without bytes); the sweep
// deletes them after the grace period, and the generation completes elsewhere. A write slower
// than the grace cannot commit a row whose bytes the sweep took.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { before, test } from 'node:test';
import { commitObject, stageObject } from '../src/storage/store.ts';
import { sweepOrphans } from '../src/storage/sweep.ts';
import { png } from './_openai-peer.ts';
import { startTestWorker, until, waitFor } from './_generations.ts';
import { startS3, stopWorker, type TestS3 } from './_s3.ts';
import { api, createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');

let s3: TestS3;
let srv: TestServer;
let account: string;
let key: string;

before(async () => {
  s3 = await startS3();
  srv = await startServer({ config: { store: s3.store() } });
  account = (await createAccount(srv.db.sql)).id;
  key = (await createKey(srv.db.sql, account)).key;
});

async function childWorker(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [BIN, 'worker'], {
    env: { ...process.env, ...env, DATABASE_URL: srv.db.url, KILN_LOG: 'silent', KILN_PUBLIC_URL: srv.origin },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  onCleanup(async () => { if (child.exitCode === null) child.kill('SIGKILL'); });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => { if (String(d).includes('worker started')) resolve(); });
    child.once('exit', (code) => reject(new Error(`worker exited early (${code})`)));
  });
  return child;
}

/** Every s3-backed row's key holds bytes. */
async function noRowWithoutBytes() {
  const keys = new Set(await s3.keys());
  const rows = await srv.db.sql`select path, location from kiln_private.objects where backend = 's3'`;
  for (const r of rows) assert.ok(keys.has(r.location), `row ${r.path} has no bytes`);
}

test('a write that outlasts the grace cannot commit: the sweep took its bytes, so no row appears', async () => {
  const image = await png(4, 4);
  const p = `${account}/uploads/${crypto.randomUUID()}.png`;
  const staged = await stageObject(srv.ctx, { path: p, owner: account, data: image, contentType: 'image/png', format: 'png', width: 4, height: 4, visibility: 'private' });
  assert.ok((await s3.keys()).includes(staged.location!));
  assert.equal(await sweepOrphans(srv.ctx, 0), 1);
  assert.ok(!(await s3.keys()).includes(staged.location!), 'the orphan is deleted');
  await assert.rejects(commitObject(srv.db.sql, staged), (e: any) => e.code === 'KS002');
  assert.equal((await srv.db.sql`select 1 from kiln_private.objects where path = ${p}`).length, 0);
  await noRowWithoutBytes();
});

test('a worker killed between the bucket write and the commit: no row, the orphan is swept, the generation completes elsewhere', async () => {
  const child = await childWorker(s3.env({ gate: true }));
  const gate = s3.hold();
  const created = await api(srv.base, key, '/generations', { body: { type: 'image', prompt: 'crash test', model: 'local/sketch' } });
  assert.equal(created.status, 202);
  const orphan = await gate.held; // s3rver has stored it; the worker has not heard back
  assert.ok((await s3.keys()).includes(orphan), 'the bytes reached the bucket');
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  gate.release();

  const id = created.body.id;
  const [g] = await srv.db.sql`select status, result from kiln_private.generations where id = ${id}`;
  assert.notEqual(g.status, 'completed');
  assert.equal((await srv.db.sql`select 1 from kiln_private.objects where location = ${orphan}`).length, 0, 'no row for the orphan');
  assert.equal((await srv.db.sql`select 1 from kiln_private.object_intents where location = ${orphan}`).length, 1, 'its note waits for the sweep');
  await noRowWithoutBytes();

  // Another worker: it runs the generation again and its sweep (every second, 1 s grace) takes the orphan.
  const sweeper = await startTestWorker(srv, { store: { ...s3.store(), sweepSeconds: 1, orphanGraceSeconds: 1 } });
  const done = await waitFor(srv, key, id, { timeoutMs: 30_000 });
  assert.equal(done.status, 'completed', JSON.stringify(done));
  await until('the orphan to be swept', async () => !(await s3.keys()).includes(orphan), 30_000, 200);
  const [r] = await srv.db.sql`select location from kiln_private.objects where path = ${new URL(done.result.url).pathname.slice(7)}`;
  assert.ok(r && r.location !== orphan && (await s3.keys()).includes(r.location), 'the completed image has its own bytes');
  await until('no notes left', async () => (await srv.db.sql`select 1 from kiln_private.object_intents`).length === 0, 30_000, 200);
  await noRowWithoutBytes();
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.charges where generation_id = ${id} and status = 'settled'`;
  assert.equal(n, 1, 'charged once');
  await stopWorker(srv, sweeper);
});
