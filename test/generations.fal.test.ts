// A fal request that ends badly ends the generation at once, through the whole path — POST
// /generations, the worker, a fal queue peer on loopback: fal retries a request up to 10 times on
// its side before it reports COMPLETED, so an error answer from the result of a completed request
// fails the generation within one poll interval (plus a second), with one submission and nothing
// charged; a network reset while fetching that result retries the fetch only, and the one image
// is charged once.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startFalPeer, type FalJob, type FalPeer } from './_fal-peer.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { charges, generationRow, startTestWorker, waitFor } from './_generations.ts';

const FAL_KEY = 'fal-secret-key:final';
process.env.KILN_TEST_FAL_FINAL_KEY = FAL_KEY;
/** fal's documented polling pace and Kiln's default. */
const POLL_MS = 1000;

let srv: TestServer;
let fal: FalPeer;

const marker = (s: unknown) => /\[case:([a-z-]+)\]/.exec(String(s))?.[1];
const jobsOf = (name: string): FalJob[] => [...fal.jobs.values()].filter((j) => marker(j.input.prompt) === name);
const resultFetches = (job: FalJob) => fal.requests.filter((r) => r.method === 'GET' && r.path === `/${job.queuePath}/requests/${job.id}`).length;

before(async () => {
  fal = await startFalPeer({ key: FAL_KEY });
  fal.plan((r) => {
    switch (marker(r.json?.prompt)) {
      case 'failed-final':
        // Completes 1.5 s after its submit, between two polls, and its result is fal's final error.
        return { runMs: 1500, result: () => ({ status: 500, headers: { 'x-fal-error-type': 'runner_disconnected' }, json: { detail: 'Runner disconnected', error_type: 'runner_disconnected' } }) };
      default:
        return { runMs: 300 };
    }
  });
  let resets = 0;
  fal.script((r) => {
    // The first fetch of the reset case's result: the connection is reset before any answer.
    const job = [...fal.jobs.values()].find((j) => r.path === `/${j.queuePath}/requests/${j.id}`);
    if (r.method === 'GET' && job && marker(job.input.prompt) === 'reset' && resets++ === 0) return { reset: true };
    return undefined;
  });
  // Kiln's defaults for attempts: 3 per upstream call, 5 executions of a generation.
  srv = await startServer({ config: { providerAttempts: 3, generationMaxAttempts: 5 } });
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'fal/flux-final', name: 'FLUX schnell (fal)', category: 'image', provider: 'fal',
    upstream: { baseUrl: fal.url, app: 'fal-ai/flux/schnell', apiKeyEnv: 'KILN_TEST_FAL_FINAL_KEY', pollIntervalMs: POLL_MS },
    output_modalities: ['image'], cost: { micros_per_image: 3000 }, markup: 1,
  })})`;
  await startTestWorker(srv);
});

after(async () => {
  await fal?.close();
});

async function create(name: string): Promise<{ key: string; id: string }> {
  const a = await createAccount(srv.db.sql);
  const key = (await createKey(srv.db.sql, a.id)).key;
  const res = await api(srv.base, key, '/generations', { body: { type: 'image', model: 'fal/flux-final', prompt: `[case:${name}] a kiln at dusk` } });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return { key, id: res.body.id };
}

test('a completed fal request whose result answers 500 (error_type) fails the generation within the poll interval plus a second: one submission, nothing charged', async (t) => {
  const { key, id } = await create('failed-final');
  const done = await waitFor(srv, key, id, { timeoutMs: 30_000 });
  const seenAt = Date.now();
  assert.equal(done.status, 'failed', JSON.stringify(done));
  assert.equal(done.error, 'upstream provider returned 500 (runner_disconnected)');

  const jobs = jobsOf('failed-final');
  assert.equal(jobs.length, 1, 'exactly one submission');
  const [job] = jobs;
  assert.equal(resultFetches(job!), 1, 'the failed result is fetched once');
  assert.equal(job!.canceled, false);
  const after = seenAt - job!.completedAt!;
  t.diagnostic(`failed ${after} ms after the request completed upstream (poll interval ${POLL_MS} ms)`);
  assert.ok(after <= POLL_MS + 1000, `failed ${after} ms after the request completed upstream`);

  const row = await generationRow(srv.db.sql, id);
  assert.equal(row.attempts, 1, 'the generation ran once');
  const ledger = await charges(srv.db.sql, id);
  assert.deepEqual(ledger.map((c) => [c.status, c.settled]), [['released', null]], 'not charged: the reservation is released');
  // Nothing comes back later: the job is gone, no second submission arrives.
  const [{ n }] = await srv.db.sql`select count(*)::int as n from graphile_worker.jobs where key = ${id}`;
  assert.equal(n, 0, 'no retry is queued');
  await new Promise((r) => setTimeout(r, POLL_MS));
  assert.equal(jobsOf('failed-final').length, 1);
});

test('a network reset while fetching a completed result retries that fetch only: one submission, completed, charged once', async () => {
  const { key, id } = await create('reset');
  const done = await waitFor(srv, key, id, { timeoutMs: 30_000 });
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const jobs = jobsOf('reset');
  assert.equal(jobs.length, 1, 'exactly one submission');
  assert.equal(resultFetches(jobs[0]!), 2, 'the reset fetch, then the one that answered');
  assert.equal((await generationRow(srv.db.sql, id)).attempts, 1);
  assert.equal((await generationRow(srv.db.sql, id)).provider_request_id, jobs[0]!.id);
  const ledger = await charges(srv.db.sql, id);
  assert.deepEqual(ledger.map((c) => [c.status, c.settled]), [['settled', '3000']]);
  const img = await fetch(done.result.url);
  assert.equal(img.status, 200);
});
