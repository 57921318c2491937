// The fal and replicate adapters through the whole path — POST /generations, the worker, real
// fal-queue and Replicate peers on loopback: images land in the store and serve; per-image and
// per-second prices settle exactly on the ledger (never above the reservation); upstream failures
// release the reservation; a Kiln cancel and the provider deadline reach the upstream as its cancel call.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { startFalPeer, type FalJob, type FalPeer } from './_fal-peer.ts';
import { startReplicatePeer, type Prediction, type ReplicatePeer } from './_replicate-peer.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { charges, generationRow, startTestWorker, until, waitFor } from './_generations.ts';

const FAL_KEY = 'fal-secret-key:xyz';
const REP_KEY = 'r8_replicate_secret';
process.env.KILN_TEST_FAL_KEY = FAL_KEY;
process.env.KILN_TEST_REP_KEY = REP_KEY;

let srv: TestServer;
let fal: FalPeer;
let rep: ReplicatePeer;

interface Case {
  model: string;
  aspectRatio?: string;
  /** Created by its test (it must act within the provider deadline), waited for until processing. */
  processingOnly?: boolean;
  key?: string;
  id?: string;
  final?: Promise<any>;
}

const cases: Record<string, Case> = {
  'fal-ok': { model: 'fal/flux', aspectRatio: '16:9' },
  'fal-rejected': { model: 'fal/flux' },
  'fal-cancel': { model: 'fal/flux', processingOnly: true },
  'rep-ok': { model: 'rep/flux', aspectRatio: '3:2' },
  'rep-capped': { model: 'rep/flux' },
  'rep-failed': { model: 'rep/flux' },
  'rep-timeout': { model: 'rep/flux' },
  'rep-cancel': { model: 'rep/flux', processingOnly: true },
};

const marker = (s: unknown) => /\[case:([a-z-]+)\]/.exec(String(s))?.[1];
const falJobs = (name: string): FalJob[] => [...fal.jobs.values()].filter((j) => marker(j.input.prompt) === name);
const predictions = (name: string): Prediction[] => [...rep.predictions.values()].filter((p) => marker(p.input.prompt) === name);

before(async () => {
  fal = await startFalPeer({ key: FAL_KEY });
  fal.plan((r) => {
    switch (marker(r.json?.prompt)) {
      case 'fal-rejected':
        return { queued: 1, running: 1, result: () => ({ status: 422, json: { detail: [{ loc: ['body', 'prompt'], msg: 'flagged', type: 'content_policy_violation' }] } }) };
      case 'fal-cancel':
        return { queued: 1, running: 1_000_000 };
      default:
        return { queued: 2, running: 2 };
    }
  });
  rep = await startReplicatePeer({ token: REP_KEY });
  rep.plan((r) => {
    switch (marker(r.json?.input?.prompt)) {
      case 'rep-ok':
        return { starting: 1, processing: 2, final: { status: 'succeeded', predictTime: 2.345 } };
      case 'rep-capped':
        return { starting: 0, processing: 1, final: { status: 'succeeded', predictTime: 30 } };
      case 'rep-failed':
        return { starting: 0, processing: 1, final: { status: 'failed', error: `E1001: out of memory (${REP_KEY})` } };
      case 'rep-timeout':
      case 'rep-cancel':
        return { starting: 1, processing: 1_000_000 };
      default:
        return {};
    }
  });
  // The provider timeout is the whole upstream job's deadline here (submit, polls, result).
  srv = await startServer({ config: { providerTimeoutMs: 3000, providerAttempts: 2, generationMaxAttempts: 2 } });
  await startTestWorker(srv);
  for (const model of [
    { id: 'fal/flux', name: 'FLUX schnell (fal)', category: 'image', provider: 'fal',
      upstream: { baseUrl: fal.url, app: 'fal-ai/flux/schnell', apiKeyEnv: 'KILN_TEST_FAL_KEY', pollIntervalMs: 20 },
      output_modalities: ['image'], cost: { micros_per_image: 3000 }, markup: 1 },
    { id: 'rep/flux', name: 'FLUX schnell (Replicate)', category: 'image', provider: 'replicate',
      upstream: { baseUrl: rep.url, model: 'black-forest-labs/flux-schnell', apiKeyEnv: 'KILN_TEST_REP_KEY', pollIntervalMs: 20, maxSeconds: 10 },
      output_modalities: ['image'], cost: { micros_per_second: 1400 }, markup: 1.5 },
  ]) {
    await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json(model)})`;
  }
  await Promise.all(Object.entries(cases).filter(([, c]) => !c.processingOnly).map(([name, c]) => create(name, c)));
});

async function create(name: string, c: Case) {
  const a = await createAccount(srv.db.sql);
  c.key = (await createKey(srv.db.sql, a.id)).key;
  const res = await api(srv.base, c.key, '/generations', {
    body: { type: 'image', model: c.model, prompt: `[case:${name}] a lighthouse`, ...(c.aspectRatio ? { aspectRatio: c.aspectRatio } : {}) },
  });
  assert.equal(res.status, 202, `${name}: ${JSON.stringify(res.body)}`);
  c.id = res.body.id;
  c.final = waitFor(srv, c.key, c.id!, {
    timeoutMs: 40_000,
    done: (b) => (c.processingOnly ? b.status !== 'pending' : b.status === 'completed' || b.status === 'failed'),
  });
  c.final.catch(() => {});
}

after(async () => {
  await fal?.close();
  await rep?.close();
});

async function ledger(name: string) {
  const rows = await charges(srv.db.sql, cases[name]!.id!);
  assert.equal(rows.length, 1, name);
  return rows[0];
}

async function released(name: string) {
  const row = await ledger(name);
  assert.deepEqual([row.status, row.settled], ['released', null], name);
}

async function servedImage(url: string) {
  const img = await fetch(url);
  assert.equal(img.status, 200);
  return sharp(Buffer.from(await img.arrayBuffer())).metadata();
}

test('fal: queued → running → done; the image is stored and served at the requested ratio; the per-image price settles', async () => {
  const done = await cases['fal-ok']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const [job] = falJobs('fal-ok');
  assert.deepEqual(job!.statuses, ['IN_QUEUE', 'IN_QUEUE', 'IN_PROGRESS', 'IN_PROGRESS', 'COMPLETED']);
  assert.equal(job!.input.image_size, 'landscape_16_9');
  assert.equal(done.result.costMicros, 3000);
  const meta = await servedImage(done.result.url);
  assert.deepEqual([meta.width, meta.height, meta.format], [1024, 576, 'png']);
  const row = await ledger('fal-ok');
  assert.deepEqual([row.status, row.reserved, row.settled], ['settled', '3000', '3000']);
  assert.equal((await generationRow(srv.db.sql, cases['fal-ok']!.id!)).provider_request_id, job!.id);
  assert.equal(fal.requests.filter((r) => r.headers.authorization !== `Key ${FAL_KEY}`).length, 0);
});

test('replicate: starting → processing → succeeded; the run time settles exactly at price × seconds × markup', async () => {
  const done = await cases['rep-ok']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const [p] = predictions('rep-ok');
  assert.deepEqual(p!.statuses, ['starting', 'starting', 'processing', 'processing', 'succeeded']);
  // 2.345 s × 1,400 µ$/s × 1.5 = 4,924.5 → rounded up once: 4,925. Reserved: 10 s × 1,400 × 1.5.
  assert.equal(done.result.costMicros, 4925);
  const row = await ledger('rep-ok');
  assert.deepEqual([row.status, row.reserved, row.settled], ['settled', '21000', '4925']);
  const meta = await servedImage(done.result.url);
  assert.deepEqual([meta.width, meta.height], [1216, 811], 'FLUX 3:2 (1216×832) cropped to exactly 3:2');
  assert.equal((await generationRow(srv.db.sql, cases['rep-ok']!.id!)).provider_request_id, p!.id);
});

test('replicate: a run longer than maxSeconds is charged the reservation, never more', async () => {
  const done = await cases['rep-capped']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.costMicros, 21000);
  const row = await ledger('rep-capped');
  assert.deepEqual([row.status, row.reserved, row.settled], ['settled', '21000', '21000']);
});

test('upstream failures end the generation with a summarised message, no retry for content errors, reservation released', async () => {
  const rf = await cases['rep-failed']!.final!;
  assert.equal(rf.status, 'failed');
  assert.equal(rf.error, 'upstream prediction failed (E1001)');
  assert.equal(predictions('rep-failed').length, 1, 'not retried');
  await released('rep-failed');

  const ff = await cases['fal-rejected']!.final!;
  assert.equal(ff.status, 'failed');
  assert.equal(ff.error, 'upstream provider returned 422 (content_policy_violation)');
  assert.equal(falJobs('fal-rejected').length, 1);
  await released('fal-rejected');
});

test('the provider deadline cancels each prediction upstream; retried, then failed; reservation released', async () => {
  const done = await cases['rep-timeout']!.final!;
  assert.equal(done.status, 'failed');
  assert.match(done.error, /timed out/);
  const ps = predictions('rep-timeout');
  assert.equal(ps.length, 2, 'one prediction per execution');
  for (const p of ps) assert.equal(p.canceled, true, 'each was cancelled upstream');
  await released('rep-timeout');
});

for (const [name, provider] of [['fal-cancel', 'fal'], ['rep-cancel', 'replicate']] as const) {
  test(`${provider}: POST /generations/{id}/cancel of a processing generation reaches the upstream as its cancel call`, async (t) => {
    const c = cases[name]!;
    await create(name, c);
    const seen = await c.final!;
    assert.equal(seen.status, 'processing', JSON.stringify(seen));
    const upstream = () => (provider === 'fal' ? falJobs(name)[0] : predictions(name)[0]);
    await until('the upstream is polled', () => (provider === 'fal' ? (falJobs(name)[0]?.polls ?? 0) > 1 : (predictions(name)[0]?.polls ?? 0) > 1), 15_000);
    const canceledAt = Date.now();
    const res = await api(srv.base, c.key!, `/generations/${c.id}/cancel`, { method: 'POST' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await until('the peer receives the cancel call', () => upstream()!.canceled, 5_000);
    const cancel = (provider === 'fal' ? fal : rep).requests.find((r) => r.path.endsWith(`/${upstream()!.id}/cancel`))!;
    t.diagnostic(`upstream cancel ${cancel.receivedAt - canceledAt} ms after POST …/cancel`);
    assert.ok(cancel.receivedAt - canceledAt < 2000);
    assert.equal(cancel.method, provider === 'fal' ? 'PUT' : 'POST');
    await released(name);
    const row = await generationRow(srv.db.sql, c.id!);
    assert.deepEqual([row.status, row.error, row.attempts], ['failed', 'canceled', 1]);
  });
}
