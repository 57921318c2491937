// Issue 39, the object store down (docs/storage.md, "When the store is down"): `kiln api` and
// `kiln worker` as real processes with KILN_STORE=s3, s3rver on loopback behind a gate that
// answers 503 or closes connections, and a loopback image provider that counts its calls.
// - 20 image generations during an 8 s outage (their worker killed and replaced meanwhile): all
//   complete, each charged once, the provider called exactly once each;
// - an outage past KILN_STORE_OUTAGE_GRACE: each generation fails uncharged, naming the store;
// - transforms and streamed /files answer 503 with Retry-After, /readyz stays 200 and says the
//   store is degraded, kiln_store_up goes 0 then 1;
// - the sweep and `kiln store migrate` pause and go on, deleting nothing they could not confirm.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { before, test } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { createContext } from '../src/context.ts';
import { moveObjects } from '../src/storage/move.ts';
import { StoreError } from '../src/storage/health.ts';
import { needBucket, putObject } from '../src/storage/store.ts';
import { SweepPaused, sweepOrphans } from '../src/storage/sweep.ts';
import { until } from './_generations.ts';
import { spawnKiln, type Spawned } from './_live.ts';
import { imageReply, startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';
import { png } from './_peer.ts';
import { startS3, type TestS3 } from './_s3.ts';
import { api, createAccount, createKey, createTestDb, onCleanup, testConfig, type TestDb } from './_setup.ts';

let db: TestDb;
let s3: TestS3;
let peer: OpenAIPeer;
let apiProc: Spawned;
let origin: string;
let account: string;
let key: string;

/** Worker settings: a dead worker's generations are taken over within seconds. */
const WORKER_ENV = { KILN_WORKER_HEARTBEAT_SECONDS: '1', KILN_WORKER_STALE_SECONDS: '3' };

before(async () => {
  db = await createTestDb();
  s3 = await startS3();
  peer = await startOpenAIPeer({ strict: false });
  onCleanup(() => peer.close());
  peer.script(() => imageReply(64, 48));
  await db.sql`select kiln.upsert_model(${db.sql.json({
    id: 'peer/painter', name: 'Peer painter', category: 'image', provider: 'openai',
    upstream: { baseUrl: peer.url, model: 'peer-image' }, output_modalities: ['image'], cost: { micros_per_image: 1000 }, markup: 1,
  })})`;
  account = (await createAccount(db.sql)).id;
  await db.sql`update kiln_private.accounts set parallel_slots = 4 where id = ${account}`;
  key = (await createKey(db.sql, account)).key;
  // A fixed port, so that the image URLs it signs point at it.
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  apiProc = await spawnKiln('api', db.url, { ...s3.env({ gate: true, redirect: false }), KILN_METRICS_PORT: '0', PORT: String(port), KILN_PUBLIC_URL: origin });
});

async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const imageCalls = () => peer.requests.filter((r) => r.path.endsWith('/images/generations')).length;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

async function post(prompt: string): Promise<string> {
  const res = await api(apiProc.base, key, '/generations', { body: { type: 'image', prompt, model: 'peer/painter' } });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.id;
}

async function settled(ids: string[], timeoutMs: number) {
  return until(`${ids.length} generations to settle`, async () => {
    const rows = await db.sql`select id, status, error, attempts, cost_micros::int as cost from kiln_private.generations where id = any (${ids}::uuid[])`;
    return rows.every((r) => r.status === 'completed' || r.status === 'failed') && rows;
  }, timeoutMs, 200);
}

async function chargesOf(ids: string[]) {
  return db.sql`select generation_id, status, reserved_micros::int as reserved, settled_micros::int as settled
                from kiln_private.charges where generation_id = any (${ids}::uuid[])`;
}

const heldCount = async () => (await db.sql`select count(*)::int as n from kiln_private.held_outputs`)[0]!.n as number;

test('20 image generations through an 8 s outage (and a killed worker): all complete, each charged once, the provider called once each', async (t) => {
  let worker = await spawnKiln('worker', db.url, { ...s3.env({ gate: true }), ...WORKER_ENV });
  t.after(() => worker.stop());
  s3.down('503');
  const downAt = Date.now();
  const calls0 = imageCalls();
  const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => post(`a kiln in the rain #${i}`)));

  // Every output came back from the provider and is held in Postgres, as the store refused it.
  await until('every output held', async () => (await heldCount()) === 20, 60_000, 100);
  const pending = await db.sql`select status, last_error from kiln_private.generations where id = any (${ids}::uuid[])`;
  assert.ok(pending.every((g) => g.status === 'pending' || g.status === 'processing'), 'none completed without its bytes');
  assert.ok(pending.some((g) => /image store/.test(g.last_error ?? '')), JSON.stringify(pending[0]));
  assert.equal((await chargesOf(ids)).filter((c) => c.status !== 'reserved').length, 0, 'nothing settled without bytes');

  // The worker dies mid-outage; another takes over: the held outputs survive, no provider call is repeated.
  await worker.stop('SIGKILL');
  worker = await spawnKiln('worker', db.url, { ...s3.env({ gate: true }), ...WORKER_ENV });

  await new Promise((r) => setTimeout(r, Math.max(0, 8000 - (Date.now() - downAt))));
  assert.ok(s3.refused > 20, `the gate refused ${s3.refused} requests`);
  s3.up();

  const rows = await settled(ids, 90_000);
  assert.deepEqual(rows.filter((r) => r.status !== 'completed').map((r) => r.error), [], 'all completed');
  assert.equal(imageCalls() - calls0, 20, 'the provider was called exactly once per generation');
  assert.ok(rows.every((r) => r.attempts === 1), `one attempt each: ${rows.map((r) => r.attempts)}`);
  const charges = await chargesOf(ids);
  assert.equal(charges.length, 20, 'one charge per generation');
  assert.ok(charges.every((c) => c.status === 'settled' && c.settled === 1000), JSON.stringify(charges[0]));
  assert.equal(await heldCount(), 0, 'nothing held once stored');

  // Their bytes are in the bucket, and served.
  const keys = await s3.keys();
  const objects = await db.sql`select location, sha256 from kiln_private.objects where path like ${`${account}/generations/%`}`;
  assert.equal(objects.length, 20);
  for (const o of objects) assert.ok(keys.includes(o.location), `${o.location} is in the bucket`);
  const done = await api(apiProc.base, key, `/generations/${ids[0]}`);
  const file = await fetch(done.body.result.url);
  assert.equal(file.status, 200);
  const bytes = Buffer.from(await file.arrayBuffer());
  assert.equal(sha(bytes), objects.find((o) => o.location.includes(ids[0]!))!.sha256.toString('hex'));
});

test('an outage past KILN_STORE_OUTAGE_GRACE fails each generation uncharged, naming the store; the provider is called once', async (t) => {
  const worker = await spawnKiln('worker', db.url, { ...s3.env({ gate: true }), ...WORKER_ENV, KILN_STORE_OUTAGE_GRACE: '3s' });
  t.after(async () => {
    s3.up();
    await worker.stop();
  });
  s3.down('close');
  const calls0 = imageCalls();
  const started = Date.now();
  const ids = await Promise.all(Array.from({ length: 3 }, (_, i) => post(`a kiln in the fog #${i}`)));
  const rows = await settled(ids, 60_000);
  for (const r of rows) {
    assert.equal(r.status, 'failed');
    assert.equal(r.error, 'The image store was unreachable for 3 seconds; nothing was charged.');
    assert.equal(r.cost, null);
  }
  assert.ok(Date.now() - started >= 3000, 'not before the grace');
  assert.equal(imageCalls() - calls0, 3, 'the provider was called once per generation');
  const charges = await chargesOf(ids);
  assert.equal(charges.length, 3);
  assert.ok(charges.every((c) => c.status === 'released' && c.settled === null), JSON.stringify(charges));
  assert.equal(await heldCount(), 0, 'the held outputs went with their generations');
  const shown = await api(apiProc.base, key, `/generations/${ids[0]}`);
  assert.equal(shown.body.status, 'failed');
  assert.match(JSON.stringify(shown.body), /image store was unreachable for 3 seconds/);
});

type Family = { name: string; metrics: Array<{ value: string; labels?: Record<string, string> }> };

async function storeUp(): Promise<number | null> {
  const res = await fetch(apiProc.metrics!);
  assert.equal(res.status, 200);
  const fams = parsePrometheusTextFormat(await res.text()) as unknown as Family[];
  const f = fams.find((x) => x.name === 'kiln_store_up');
  return f?.metrics[0] ? Number(f.metrics[0].value) : null;
}

test('while the store is down: transforms and streamed files answer 503 with Retry-After, /readyz stays ready but degraded, kiln_store_up is 0', async () => {
  const [gen] = await db.sql`select id from kiln_private.generations where status = 'completed' and account_id = ${account} limit 1`;
  const url = (await api(apiProc.base, key, `/generations/${gen!.id}`)).body.result.url as string;
  assert.equal((await fetch(url)).status, 200);
  assert.equal(await until('kiln_store_up 1', async () => (await storeUp()) === 1, 20_000, 200), true);
  const ready = await fetch(`${origin}/readyz`);
  assert.equal(ready.status, 200);
  assert.deepEqual((await ready.json()).store, { backend: 's3', status: 'ok' });

  for (const mode of ['503', 'close'] as const) {
    s3.down(mode);
    const t = await api(apiProc.base, key, '/images/transforms', { body: { source: url, op: 'convert', options: { format: 'webp' } } });
    assert.equal(t.status, 503, `${mode}: ${JSON.stringify(t.body)}`);
    assert.equal(t.body.error.type, 'server_error');
    assert.match(t.body.error.message, /image store is unavailable/);
    assert.equal(t.headers.get('retry-after'), '5');

    const f = await fetch(url);
    assert.equal(f.status, 503, mode);
    assert.equal(f.headers.get('retry-after'), '5');
    assert.equal((await f.json()).error.type, 'server_error');

    const degraded = await until('/readyz to name the store', async () => {
      const r = await fetch(`${origin}/readyz`);
      assert.equal(r.status, 200, 'still ready: the database answers');
      const body = await r.json();
      return body.store?.status === 'degraded' && body;
    }, 10_000, 200);
    assert.equal(degraded.status, 'ready');
    assert.ok(degraded.migrations.applied > 0);
    assert.ok(Date.parse(degraded.store.since) <= Date.now());
    assert.match(degraded.store.message, /image store/);
    assert.equal(await until('kiln_store_up 0', async () => (await storeUp()) === 0, 10_000, 200), true);

    s3.up();
    assert.equal(await until('kiln_store_up 1 again', async () => (await storeUp()) === 1, 10_000, 200), true);
    await until('/readyz store ok', async () => (await (await fetch(`${origin}/readyz`)).json()).store?.status === 'ok', 10_000, 200);
    const again = await api(apiProc.base, key, '/images/transforms', { body: { source: url, op: 'convert', options: { format: 'webp' } } });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal((await fetch(url)).status, 200);
  }
});

test('the orphan sweep and kiln store migrate pause while the store is down and go on after', async (t) => {
  t.after(() => s3.up());
  const config = testConfig({ store: s3.store({ gate: true }) });
  const ctx = createContext(config, db.app, new AbortController().signal);
  // A missing key is an answer, not an outage; no answer is one.
  const bucket = await needBucket(config);
  assert.equal(await bucket.read('nothing/here.png'), null);
  assert.equal(bucket.health.status.up, true);
  s3.down('503');
  const err = await bucket.read('nothing/here.png').catch((e) => e);
  assert.ok(err instanceof StoreError && err.down, String(err));
  assert.equal(bucket.health.status.up, false);
  s3.up();
  assert.equal((await bucket.health.check(0)).up, true, 'a check finds it up again');

  // Bytes without a row, noted long ago: the orphan sweep's work.
  await db.sql`insert into kiln_private.object_intents (location, created_at) values ('orphan/a.png', now() - interval '2 hours'), ('orphan/b.png', now() - interval '2 hours')`;
  s3.down('503');
  await assert.rejects(sweepOrphans(ctx, 60), SweepPaused);
  const notes = await db.sql`select location, claimed_at from kiln_private.object_intents where location like 'orphan/%'`;
  assert.equal(notes.length, 2, 'no note forgotten while the store is down');
  assert.ok(notes.every((n) => n.claimed_at === null), 'none claimed either');
  s3.up();
  await until('the sweep to go on', async () => (await sweepOrphans(ctx, 60).catch(() => 0)) > 0, 10_000, 200);
  assert.equal((await db.sql`select count(*)::int as n from kiln_private.object_intents where location like 'orphan/%'`)[0]!.n, 0, 'deleted, then forgotten');

  // Objects on postgres, moved to s3 through an outage.
  const pgCtx = createContext(testConfig({ store: { ...s3.store({ gate: true }), backend: 'postgres' } }), db.app, new AbortController().signal);
  const data = await png(8, 8);
  for (let i = 0; i < 3; i++) {
    await putObject(pgCtx, { path: `${account}/moves/m${i}.png`, owner: account, data, contentType: 'image/png', format: 'png', width: 8, height: 8, visibility: 'private' });
  }
  s3.down('close');
  const events: string[] = [];
  const moving = moveObjects(ctx, 's3', {
    onPause: () => events.push('paused'),
    onResume: () => events.push('resumed'),
  });
  await until('the move to pause', () => events.includes('paused'), 10_000, 50);
  const meanwhile = await db.sql`select count(*)::int as n from kiln_private.objects where backend = 'postgres' and path like ${`${account}/moves/%`}`;
  assert.equal(meanwhile[0]!.n, 3, 'no row switched while the store is down');
  await new Promise((r) => setTimeout(r, 1500));
  s3.up();
  const result = await moving;
  assert.deepEqual(events, ['paused', 'resumed']);
  assert.equal(result.stopped, false);
  const rows = await db.sql`select backend, location from kiln_private.objects where path like ${`${account}/moves/%`}`;
  assert.equal(rows.length, 3);
  const keys = await s3.keys();
  for (const r of rows) {
    assert.equal(r.backend, 's3');
    assert.ok(keys.includes(r.location));
  }
});
