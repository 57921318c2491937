// Retention (KILN_RETENTION): the sweep removes outputs older than the period — generation,
// transform and run outputs, and workflow write-backs — and their bucket bytes. Records, status,
// cost and the ledger stay; `result.url` becomes null with `result.expiredAt`; old URLs answer
// 410 `gone`; newer outputs and the shared seed images are untouched.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { publicUrl } from '../src/storage/store.ts';
import { startTestWorker, until, waitFor } from './_generations.ts';
import { startS3, stopWorker, type TestS3 } from './_s3.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { saveWorkflow, startRun, waitRun } from './_workflows.ts';

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

const pathOf = (url: string) => new URL(url).pathname.slice('/files/'.length);

async function generate(prompt: string) {
  const created = await api(srv.base, key, '/generations', { body: { type: 'image', prompt, model: 'local/sketch' } });
  assert.equal(created.status, 202);
  const done = await waitFor(srv, key, created.body.id, { timeoutMs: 30_000 });
  assert.equal(done.status, 'completed', JSON.stringify(done));
  return done;
}

test('retention expires old outputs and keeps records, costs, the ledger, newer outputs and seeds', async () => {
  // Outputs made by a worker without retention…
  const maker = await startTestWorker(srv);
  const old = await generate('an old pot');
  const transform = await api(srv.base, key, '/images/transforms', { body: { source: old.result.url, op: 'convert', options: { format: 'webp' } } });
  assert.equal(transform.status, 200);
  const wf = await saveWorkflow(srv, account, {
    nodes: [{ id: 'p', kind: 'prompt', output: 'image', prompt: 'Hero', model: 'local/sketch' }, { id: 'o', kind: 'output', label: 'Hero' }],
    edges: [{ from: 'p', to: 'o' }],
  });
  const run = await startRun(srv, key, wf);
  const ran = await waitRun(srv, key, wf, run, { timeoutMs: 30_000 });
  assert.equal(ran.status, 'completed');
  const [{ graph: before }] = await srv.db.sql`select graph from kiln_private.workflows where id = ${wf}`;
  const written = before.nodes.find((n: any) => n.id === 'o').result;
  assert.equal(written.path, pathOf(ran.results[0].url), 'the run wrote its output back');
  const fresh = await generate('a new pot');
  await maker.stop();

  // …made two hours old, except `fresh`.
  const oldPaths = [pathOf(old.result.url), transform.body.path, written.path];
  const keys = (await srv.db.sql`select location from kiln_private.objects where path = any(${oldPaths})`).map((r) => r.location);
  assert.equal(keys.length, 3);
  await srv.db.sql`update kiln_private.objects set created_at = now() - interval '2 hours' where path = any(${oldPaths})`;
  const ledger = async () => srv.db.sql`select id, status, reserved_micros::text, settled_micros::text from kiln_private.charges order by id`;
  const ledgerBefore = await ledger();
  assert.ok(ledgerBefore.length >= 3);

  // A worker with KILN_RETENTION=1h sweeping every second.
  const sweeper = await startTestWorker(srv, { store: { ...s3.store(), retentionSeconds: 3600, sweepSeconds: 1 } });
  const expired = await until('the old generation to expire', async () => {
    const g = await api(srv.base, key, `/generations/${old.id}`);
    return g.body.result?.expiredAt ? g.body : null;
  }, 30_000, 200);

  // The record stays: status, cost, type, media type; no URL.
  assert.equal(expired.status, 'completed');
  assert.equal(expired.result.url, null);
  assert.equal(expired.result.costMicros, old.result.costMicros);
  assert.equal(expired.result.mediaType, old.result.mediaType);
  assert.ok(Math.abs(Date.parse(expired.result.expiredAt) - Date.now()) < 60_000, expired.result.expiredAt);
  assert.deepEqual(await ledger(), ledgerBefore, 'the ledger is never touched');

  // Old URLs answer 410 gone (the signed one and the public transform URL); bytes left the bucket.
  for (const url of [old.result.url, transform.body.url]) {
    const res = await fetch(url, { redirect: 'manual' });
    assert.equal(res.status, 410, url);
    const body = await res.json();
    assert.equal(body.error.type, 'gone');
  }
  const unsigned = await fetch(publicUrl(srv.ctx, pathOf(old.result.url)));
  assert.equal(unsigned.status, 404, 'a private path stays invisible without a signature');
  // The rows go first, the bytes right after (the same sweep).
  await until('the bucket keys (and their notes) to be deleted', async () => {
    const bucket = new Set(await s3.keys());
    const notes = await srv.db.sql`select 1 from kiln_private.object_intents where location = any(${keys})`;
    return keys.every((k) => !bucket.has(k)) && notes.length === 0;
  }, 30_000, 100);
  // A transform from the expired image finds nothing.
  const again = await api(srv.base, key, '/images/transforms', { body: { source: old.result.url, op: 'trim' } });
  assert.equal(again.status, 404);

  // The run result keeps its record; the write-back says when it went and no longer names a path.
  const r = await api(srv.base, key, `/workflows/${wf}/runs/${run}`);
  assert.equal(r.body.results[0].status, 'completed');
  assert.equal(r.body.results[0].url, undefined);
  assert.ok(r.body.results[0].expiredAt);
  assert.equal(r.body.results[0].costMicros, ran.results[0].costMicros);
  const [{ graph: after }] = await srv.db.sql`select graph from kiln_private.workflows where id = ${wf}`;
  const wb = after.nodes.find((n: any) => n.id === 'o').result;
  assert.equal(wb.path, undefined);
  assert.ok(wb.expiredAt);
  assert.equal(wb.costMicros, written.costMicros);

  // Newer outputs and the seed images stay.
  const f = await api(srv.base, key, `/generations/${fresh.id}`);
  assert.equal(f.body.result.expiredAt, undefined);
  assert.equal((await fetch(f.body.result.url)).status, 200);
  assert.equal((await fetch(publicUrl(srv.ctx, 'seed/logo.png'))).status, 200);

  await stopWorker(srv, sweeper);
});

test('a workflow reading an expired write-back is refused before it runs', async () => {
  const wf = await saveWorkflow(srv, account, {
    nodes: [
      { id: 'o', kind: 'output', result: { type: 'image', mediaType: 'image/png', expiredAt: '2026-01-01T00:00:00.000Z' } },
      { id: 'p', kind: 'prompt', output: 'image', prompt: 'Variation', model: 'local/sketch' }, { id: 'o2', kind: 'output' },
    ],
    edges: [{ from: 'o', to: 'p' }, { from: 'p', to: 'o2' }],
  }).catch((e) => e);
  // Refused on save already (the same check runs at run start).
  assert.ok(wf instanceof Error, 'saving a graph that reads an expired image is refused');
  assert.match(String(wf.message), /expired/);
});
