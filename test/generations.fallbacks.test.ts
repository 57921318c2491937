// Fallback chains and upstream health through the whole path: POST /generations, a real worker,
// two OpenAI-protocol peers on loopback. A chain whose first upstream is down falls back and
// bills the second (result and ledger name it); a content error does not fall back; after the
// threshold of failures kiln.provider_health shows the upstream skipped and jobs go straight to
// the fallback until one trial call succeeds. The trial is granted to exactly one claimer.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { chatReply, errorReply, startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { inputTokenBound } from '../src/providers/index.ts';
import { charges, startTestWorker, until, waitFor } from './_generations.ts';
import { saveWorkflow, waitRun } from './_workflows.ts';

let srv: TestServer;
let primary: OpenAIPeer;
let backup: OpenAIPeer;
let key: string;
let accountId: string;
/** What the primary peer answers: flipped by the tests. */
let primaryMode: 'down' | 'ok' | 'content-error' | 'hang' = 'down';

const SKIP_SECONDS = 2;

before(async () => {
  primary = await startOpenAIPeer();
  backup = await startOpenAIPeer();
  primary.script(() => {
    if (primaryMode === 'ok') return chatReply('from the primary', { prompt_tokens: 10, completion_tokens: 10 });
    if (primaryMode === 'content-error') return errorReply(400, 'invalid_request_error', 'content_policy_violation');
    if (primaryMode === 'hang') return { hang: true };
    return errorReply(503, 'server_error', null, 'overloaded');
  });
  backup.script(() => chatReply('from the backup', { prompt_tokens: 10, completion_tokens: 20 }));
  srv = await startServer({
    config: { providerAttempts: 1, providerTimeoutMs: 3000, generationMaxAttempts: 1, upstreamFailureThreshold: 5, upstreamSkipSeconds: SKIP_SECONDS },
  });
  await startTestWorker(srv);
  const models = [
    // The primary is cheap per token but allows more output; the backup is dearer: the
    // reservation must cover the dearest worst case of the chain.
    { id: 'chain/primary', name: 'Primary', category: 'text', provider: 'openai',
      upstream: { baseUrl: primary.url, model: 'up-primary' }, fallbacks: ['chain/backup', 'chain/disabled', 'chain/painter'],
      cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 1000, markup: 1 },
    { id: 'chain/backup', name: 'Backup', category: 'text', provider: 'openai',
      upstream: { baseUrl: backup.url, model: 'up-backup' },
      cost: { input_micros_per_token: 2, output_micros_per_token: 5 }, maxOutputTokens: 500, markup: 1 },
    { id: 'chain/disabled', name: 'Disabled', category: 'text', provider: 'openai', enabled: false,
      upstream: { baseUrl: backup.url, model: 'never' }, cost: { input_micros_per_token: 100, output_micros_per_token: 100 }, markup: 1 },
    { id: 'chain/painter', name: 'Other category', category: 'image', provider: 'openai',
      upstream: { baseUrl: backup.url, model: 'never' }, cost: { micros_per_image: 1 }, markup: 1 },
  ];
  for (const m of models) await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json(m)})`;
  const account = await createAccount(srv.db.sql, { budgetMicros: 100_000_000 });
  accountId = account.id;
  key = (await createKey(srv.db.sql, account.id)).key;
});

after(async () => {
  await srv?.close();
  await primary?.close();
  await backup?.close();
});

async function generate(prompt: string) {
  const res = await api(srv.base, key, '/generations', { method: 'POST', body: { type: 'code', model: 'chain/primary', prompt } });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return { id: res.body.id as string, done: await waitFor(srv, key, res.body.id) };
}

async function health() {
  const [row] = await srv.db.sql`select * from kiln.provider_health where model_id = 'chain/primary'`;
  return row!;
}

const hits = (peer: OpenAIPeer, prompt: string) => peer.requests.filter((r) => JSON.stringify(r.json).includes(prompt)).length;

test('a chain whose first upstream is down falls back and bills the second; the reservation covers the dearest entry', async () => {
  primaryMode = 'down';
  const { id, done } = await generate('[fb-1] write a haiku');
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.code, 'from the backup');
  assert.equal(done.result.model, 'chain/backup');
  assert.equal(hits(primary, '[fb-1]'), 1, 'the primary was tried once (one attempt per call in this test)');
  assert.equal(hits(backup, '[fb-1]'), 1);
  // The disabled entry and the image entry are never part of the chain.
  assert.equal(backup.requests.some((r) => r.json?.model === 'never'), false);

  const [c] = await charges(srv.db.sql, id);
  assert.equal(c!.status, 'settled');
  assert.equal(c!.model_id, 'chain/backup', 'the ledger names the model that produced the output');
  assert.equal(c!.settled, String(10 * 2 + 20 * 5), 'billed at the backup price');
  // Reservation: max(primary: input + 1000 out at 1/1, backup: 2·input + 500·5) — the backup's.
  const [{ request }] = await srv.db.sql`select request from kiln_private.generations where id = ${id}`;
  assert.equal(request.fallbacks.map((m: { id: string }) => m.id).join(','), 'chain/backup');
  // Both entries bound the same input (same prompt, neither takes images), markup 1.
  const input = inputTokenBound(request.model, { type: 'code', prompt: request.prompt, targetLanguage: request.targetLanguage, textInputs: request.textInputs });
  assert.ok(2 * input + 2500 > input + 1000);
  assert.equal(Number(c!.reserved), 2 * input + 500 * 5);
  assert.equal(done.result.costMicros, 120);
});

test('a workflow output falls back the same way: priced over the chain at run time, billed to the fallback', async () => {
  primaryMode = 'down';
  const wf = await saveWorkflow(srv, accountId, {
    nodes: [
      { id: 'brief', kind: 'text', text: '[fb-wf] a brief' },
      { id: 'p', kind: 'prompt', output: 'code', prompt: '[fb-wf] write it', model: 'chain/primary' },
      { id: 'o', kind: 'output' },
    ],
    edges: [{ from: 'brief', to: 'p' }, { from: 'p', to: 'o' }],
  });
  const started = await api(srv.base, key, `/workflows/${wf}/runs`, { method: 'POST' });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const run = await waitRun(srv, key, wf, started.body.id);
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.equal(run.results[0].code, 'from the backup');
  assert.equal(run.results[0].model, 'chain/backup', 'the result names the model that produced it');
  const [c] = await srv.db.sql`select c.model_id, c.status, c.reserved_micros::int as reserved, c.settled_micros::int as settled
    from kiln_private.charges c join kiln_private.generations g on g.id = c.generation_id where g.run_id = ${started.body.id}`;
  assert.equal(c!.model_id, 'chain/backup');
  assert.equal(c!.settled, 10 * 2 + 20 * 5);
  // A run output stores its spec; its text inputs are the nodes feeding the prompt.
  const [{ spec }] = await srv.db.sql`select g.request as spec from kiln_private.generations g where g.run_id = ${started.body.id}`;
  const textInputs = spec.inputs.filter((i: { kind: string }) => i.kind === 'text').map((i: { content: string; label: string }) => ({ content: i.content, label: i.label }));
  const input = inputTokenBound(spec.model, { type: 'code', prompt: spec.prompt, targetLanguage: spec.targetLanguage, textInputs });
  assert.equal(c!.reserved, 2 * input + 500 * 5, 'the backup\'s worst case, priced when the output started');
  assert.equal(run.results[0].costMicros, 120);
});

test('a content error (4xx) does not fall back', async () => {
  primaryMode = 'content-error';
  const { id, done } = await generate('[fb-2] something refused');
  assert.equal(done.status, 'failed');
  assert.match(done.error, /400/);
  assert.equal(hits(backup, '[fb-2]'), 0, 'no fallback for a content error');
  const [c] = await charges(srv.db.sql, id);
  assert.equal(c!.status, 'released');
  // The upstream answered: that resets its failure count.
  assert.equal((await health()).consecutive_failures, 0);
});

test('after 5 consecutive failures the upstream is skipped, jobs go straight to the fallback, and one trial decides', async () => {
  primaryMode = 'down';
  for (let i = 0; i < 5; i++) {
    const { done } = await generate(`[fb-3-${i}] fail over`);
    assert.equal(done.result.model, 'chain/backup');
  }
  let h = await health();
  assert.equal(h.state, 'skipped');
  assert.equal(h.consecutive_failures, 5);
  assert.match(h.last_error, /503/);
  assert.ok(Number(h.calls_15m) >= 5 && Number(h.failures_15m) >= 5, JSON.stringify(h));
  assert.ok(Number(h.error_rate_15m) > 0.5, JSON.stringify(h));

  // Skipped: the primary is not called at all, even though it is healthy again now.
  primaryMode = 'ok';
  const before = primary.requests.length;
  const skipped = await generate('[fb-4] while skipped');
  assert.equal(skipped.done.result.model, 'chain/backup');
  assert.equal(primary.requests.length, before, 'a skipped upstream gets no call');

  // After the skip window one trial call goes to the primary; it succeeds and the entry recovers.
  await new Promise((r) => setTimeout(r, SKIP_SECONDS * 1000 + 200));
  assert.equal((await health()).state, 'awaiting_trial');
  const trial = await generate('[fb-5] the trial');
  assert.equal(trial.done.result.model, 'chain/primary');
  assert.equal(trial.done.result.code, 'from the primary');
  h = await health();
  assert.equal(h.state, 'healthy');
  assert.equal(h.consecutive_failures, 0);
  const next = await generate('[fb-6] healthy again');
  assert.equal(next.done.result.model, 'chain/primary');
  const [c] = await charges(srv.db.sql, next.id);
  assert.equal(c!.model_id, 'chain/primary');
  assert.equal(c!.settled, String(10 + 10));
});

test('a failed trial skips the upstream for another window; concurrent claimers get exactly one trial', async () => {
  const sql = srv.db.sql;
  const id = 'chain/primary';
  for (let i = 0; i < 5; i++) await sql`select kiln.record_upstream(${id}, false, 'upstream provider returned 503', 5, 1)`;
  assert.equal((await health()).state, 'skipped');
  assert.equal((await sql`select kiln.claim_upstream(${id}, 60) as v`)[0]!.v, 'skip');
  await new Promise((r) => setTimeout(r, 1100));
  // 20 claimers on separate connections at once: one trial, the rest skip.
  const verdicts = await Promise.all(Array.from({ length: 20 }, () => sql`select kiln.claim_upstream(${id}, 60) as v`.then(([r]) => r!.v as string)));
  assert.equal(verdicts.filter((v) => v === 'trial').length, 1, verdicts.join(','));
  assert.equal(verdicts.filter((v) => v === 'skip').length, 19);
  assert.equal((await health()).state, 'trial');
  // The trial fails: skipped again at once (no need for 5 more failures).
  assert.equal((await sql`select kiln.record_upstream(${id}, false, 'upstream provider timed out', 5, 30) as s`)[0]!.s, 'skipped');
  const h = await health();
  assert.equal(h.state, 'skipped');
  assert.match(h.last_error, /timed out/);
  // A success resets it (what a later successful trial does).
  await sql`select kiln.record_upstream(${id}, true, null, 5, 30)`;
  assert.equal((await health()).state, 'healthy');
});

test('a trial call that is canceled gives its lease back: the next job gets the trial at once', async () => {
  const sql = srv.db.sql;
  for (let i = 0; i < 5; i++) await sql`select kiln.record_upstream('chain/primary', false, 'upstream provider returned 503', 5, 1)`;
  await new Promise((r) => setTimeout(r, 1100));
  primaryMode = 'hang';
  const before = primary.requests.length;
  const res = await api(srv.base, key, '/generations', { method: 'POST', body: { type: 'code', model: 'chain/primary', prompt: '[fb-7] the trial hangs' } });
  assert.equal(res.status, 202);
  await until('the trial call reaches the primary', () => primary.requests.length > before);
  assert.equal((await health()).state, 'trial');
  const canceled = await api(srv.base, key, `/generations/${res.body.id}/cancel`, { method: 'POST' });
  assert.equal(canceled.status, 200);
  await until('the trial lease is given back', async () => (await health()).state === 'awaiting_trial', 5000);
  primaryMode = 'ok';
  const next = await generate('[fb-8] the next trial');
  assert.equal(next.done.result.model, 'chain/primary');
  assert.equal((await health()).state, 'healthy');
});

test('a catalog entry cannot list itself, and the view shows every network entry', async () => {
  await assert.rejects(
    srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({ id: 'chain/self', name: 'Self', category: 'text', provider: 'openai', upstream: { baseUrl: backup.url }, fallbacks: ['chain/self'] })})`,
    /invalid model entry/,
  );
  const rows = await srv.db.sql`select model_id, provider, base_url, state from kiln.provider_health order by model_id`;
  assert.ok(rows.some((r) => r.model_id === 'chain/backup' && r.state === 'healthy' && r.base_url === backup.url));
  assert.equal(rows.some((r) => r.provider === 'local'), false, 'in-process models have no upstream');
});
