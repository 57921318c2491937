// Run control against a loopback OpenAI peer (real HTTP, real worker, real Postgres): cancel a
// run (outputs in flight aborted and released, completed ones stay charged), retry a failed run
// on its snapshot (only the failed output and its dependents run and are charged), and the
// run history (GET /workflows/{id}/runs).

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { replaceWorkflow } from '../src/workflows/authoring.ts';
import { startTestWorker, until } from './_generations.ts';
import { errorReply, startOpenAIPeer, type OpenAIPeer, type PeerRequest } from './_openai-peer.ts';
import { api, createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';
import { chatAfter, peerModels, runCharges, saveWorkflow, startRun, userText, waitRun } from './_workflows.ts';

let srv: TestServer;
let peer: OpenAIPeer;
/** Requests per step marker ("STEP<name>;" in a prompt). */
const seen = new Map<string, PeerRequest[]>();
/** Per step: reply delay, and which calls (0-based) fail with a non-retryable 400. */
const behaviour: Record<string, { ms?: number; failCalls?: number[] }> = {};

before(async () => {
  peer = await startOpenAIPeer();
  onCleanup(() => peer.close());
  peer.script(async (req) => {
    const step = /STEP<([^>]+)>/.exec(userText(req))?.[1] ?? 'unknown';
    const calls = seen.get(step) ?? [];
    seen.set(step, [...calls, req]);
    const b = behaviour[step] ?? {};
    const ms = b.ms ?? 20;
    if (b.failCalls?.includes(calls.length)) return { ...errorReply(400, 'invalid_request_error', 'content_policy', 'refused'), delayMs: ms };
    return chatAfter(ms, `result-of-${step}-${calls.length + 1}`);
  });
  srv = await startServer();
  await peerModels(srv.db.sql, peer);
  await startTestWorker(srv, { workerConcurrency: 8 });
});

async function account() {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const k = await createKey(srv.db.sql, a.id);
  return { id: a.id, key: k.key, keyId: k.id };
}

const prompt = (id: string, step: string) => ({ id, kind: 'prompt', output: 'code', model: 'peer/coder', prompt: `STEP<${step}>; make ${id}` });
const out = (id: string) => ({ id, kind: 'output' });
const e = (from: string, to: string) => ({ from, to });


const post = (key: string | null, path: string) => api(srv.base, key, path, { method: 'POST' });

test('cancel a running run: the output in flight is aborted and released, waiting ones abandoned, completed ones stay charged', async (t) => {
  const { id, key } = await account();
  Object.assign(behaviour, { 'c-fast': { ms: 10 }, 'c-slow': { ms: 30_000 }, 'c-after': {} });
  const wf = await saveWorkflow(srv, id, {
    nodes: [prompt('fast', 'c-fast'), out('oFast'), prompt('slow', 'c-slow'), out('oSlow'), prompt('after', 'c-after'), out('oAfter')],
    edges: [e('fast', 'oFast'), e('slow', 'oSlow'), e('oSlow', 'after'), e('after', 'oAfter')],
  });
  const run = await startRun(srv, key, wf);
  await waitRun(srv, key, wf, run, { done: (b) => b.results.some((r: any) => r.outputNodeId === 'oFast') });
  const slowReq = await until('the slow output reaches the peer', () => seen.get('c-slow')?.[0]);

  const canceledAt = Date.now();
  const res = await post(key, `/workflows/${wf}/runs/${run}/cancel`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const body = res.body;
  assert.equal(body.id, run);
  assert.equal(body.status, 'failed');
  assert.equal(body.error, 'canceled');
  assert.ok(body.completedAt);
  assert.equal(body.retryOf, null);
  const by = new Map<string, any>(body.results.map((r: any) => [r.outputNodeId, r]));
  assert.equal(by.get('oFast').status, 'completed');
  assert.equal(by.get('oFast').code, 'result-of-c-fast-1');
  assert.deepEqual(by.get('oSlow'), { promptNodeId: 'slow', outputNodeId: 'oSlow', type: 'code', status: 'failed', error: 'canceled', costMicros: 0 });
  assert.ok(!by.has('oAfter'), 'the waiting output is abandoned, not a result');

  await until('the peer sees the slow call aborted', () => slowReq.abortedAt, 5_000);
  t.diagnostic(`in-flight output aborted ${slowReq.abortedAt! - canceledAt} ms after the cancel`);
  assert.ok(slowReq.abortedAt! - canceledAt <= 2_000);

  const ledger = await runCharges(srv.db.sql, run);
  assert.deepEqual(ledger.map((c) => [c.node_id, c.status, c.settled]), [['oFast', 'settled', '50'], ['oSlow', 'released', null]]);
  const [after] = await srv.db.sql`select status from kiln_private.workflow_run_outputs where run_id = ${run} and output_node_id = 'oAfter'`;
  assert.equal(after.status, 'abandoned');
  assert.equal(seen.get('c-after'), undefined, 'the downstream output never ran');
  // Nothing is left in flight: no deadline check, no job.
  await until('no job left for the run', async () => {
    const [r] = await srv.db.sql`select count(*)::int as n from graphile_worker._private_jobs j
      where j.key like ${'workflow:' + run + '%'} or j.payload->>'id' in (select generation_id::text from kiln_private.workflow_run_outputs where run_id = ${run})`;
    return r.n === 0;
  }, 5_000);

  const get = await api(srv.base, key, `/workflows/${wf}/runs/${run}`);
  assert.deepEqual(get.body, body);
  const again = await post(key, `/workflows/${wf}/runs/${run}/cancel`);
  assert.equal(again.status, 409);
  assert.equal(again.body.error.type, 'conflict');
});

test('run cancel: 409 for a completed run; 404 unknown, foreign or mismatched; 400 bad ids; 403 read-only key', async () => {
  const { id, key } = await account();
  Object.assign(behaviour, { 'r-one': {} });
  const wf = await saveWorkflow(srv, id, { nodes: [prompt('one', 'r-one'), out('oOne')], edges: [e('one', 'oOne')] });
  const run = await startRun(srv, key, wf);
  assert.equal((await waitRun(srv, key, wf, run)).status, 'completed');
  const done = await post(key, `/workflows/${wf}/runs/${run}/cancel`);
  assert.equal(done.status, 409);
  assert.equal(done.body.error.type, 'conflict');
  assert.deepEqual((await runCharges(srv.db.sql, run)).map((c) => c.status), ['settled']);

  const other = await account();
  const otherWf = await saveWorkflow(srv, other.id, { nodes: [prompt('one', 'r-one'), out('oOne')], edges: [e('one', 'oOne')] });
  const zero = '00000000-0000-4000-8000-000000000000';
  for (const [k, path] of [
    [other.key, `/workflows/${wf}/runs/${run}/cancel`],
    [key, `/workflows/${otherWf}/runs/${run}/cancel`],
    [key, `/workflows/${wf}/runs/${zero}/cancel`],
  ] as const) {
    const r = await post(k, path);
    assert.equal(r.status, 404, path);
    assert.equal(r.body.error.type, 'not_found');
  }
  assert.equal((await post(key, `/workflows/nope/runs/${run}/cancel`)).body.error.message, 'id: must be a uuid');
  assert.equal((await post(key, `/workflows/${wf}/runs/nope/cancel`)).status, 400);
  const readOnly = (await createKey(srv.db.sql, id, { scopes: ['read'] })).key;
  assert.equal((await post(readOnly, `/workflows/${wf}/runs/${run}/cancel`)).status, 403);
  assert.equal((await post(readOnly, `/workflows/${wf}/runs/${run}/retry`)).status, 403);
});

test('retry a run whose middle output failed: only it and its dependents run and are charged; completed outputs are reused', async () => {
  const { id, key, keyId } = await account();
  // A → B → C in a chain, D independent. B fails on its first call only.
  Object.assign(behaviour, { 'rt-A': {}, 'rt-B': { failCalls: [0] }, 'rt-C': {}, 'rt-D': { ms: 50 } });
  const graph = {
    nodes: [prompt('A', 'rt-A'), out('oA'), prompt('B', 'rt-B'), out('oB'), prompt('C', 'rt-C'), out('oC'), prompt('D', 'rt-D'), out('oD')],
    edges: [e('A', 'oA'), e('oA', 'B'), e('B', 'oB'), e('oB', 'C'), e('C', 'oC'), e('D', 'oD')],
  };
  const wf = await saveWorkflow(srv, id, graph);
  const first = await startRun(srv, key, wf);
  const failed = await waitRun(srv, key, wf, first, { done: (b) => b.status === 'failed' && b.results.length === 3 });
  assert.match(failed.error, /output "oB" of prompt "B" failed/);
  assert.deepEqual(failed.results.map((r: any) => [r.outputNodeId, r.status]).sort(), [['oA', 'completed'], ['oB', 'failed'], ['oD', 'completed']]);
  assert.equal(seen.get('rt-C'), undefined);

  // Edits after the failure do not change what a retry runs: it uses the run's snapshot.
  await replaceWorkflow(srv.db.sql, srv.ctx.config, { id: wf, graph: { nodes: [prompt('Z', 'rt-Z'), out('oZ')], edges: [e('Z', 'oZ')] }, name: null });

  const notFailed = await post(key, `/workflows/${wf}/runs/${first}/retry`);
  const res = notFailed;
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ['id', 'status']);
  assert.equal(res.body.status, 'pending');
  const second = res.body.id as string;
  assert.notEqual(second, first);
  assert.equal(res.headers.get('location'), `${srv.origin}/api/v1/workflows/${wf}/runs/${second}`);

  const done = await waitRun(srv, key, wf, second);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.retryOf, first);
  assert.deepEqual(done.progress, { total: 4, completed: 4 });
  const by = new Map<string, any>(done.results.map((r: any) => [r.outputNodeId, r]));
  assert.deepEqual(by.get('oA'), { promptNodeId: 'A', outputNodeId: 'oA', type: 'code', status: 'completed', code: 'result-of-rt-A-1', costMicros: 0, model: 'peer/coder' });
  assert.deepEqual(by.get('oD'), { promptNodeId: 'D', outputNodeId: 'oD', type: 'code', status: 'completed', code: 'result-of-rt-D-1', costMicros: 0, model: 'peer/coder' });
  assert.equal(by.get('oB').code, 'result-of-rt-B-2');
  assert.equal(by.get('oC').code, 'result-of-rt-C-1');
  assert.equal(by.get('oB').costMicros, 50);

  // The provider: A and D ran once (the first run), B twice, C once (fed B's new result, and A's reused one reached B).
  assert.deepEqual(['rt-A', 'rt-B', 'rt-C', 'rt-D', 'rt-Z'].map((s) => seen.get(s)?.length ?? 0), [1, 2, 1, 1, 0]);
  assert.match(userText(seen.get('rt-B')![1]!), /result-of-rt-A-1/);
  assert.match(userText(seen.get('rt-C')![0]!), /result-of-rt-B-2/);

  // The ledger: the retry charged only B and C; the first run's charges are unchanged.
  assert.deepEqual((await runCharges(srv.db.sql, first)).map((c) => [c.node_id, c.status, c.settled]),
    [['oA', 'settled', '50'], ['oB', 'released', null], ['oD', 'settled', '50']]);
  assert.deepEqual((await runCharges(srv.db.sql, second)).map((c) => [c.node_id, c.status, c.settled, c.key_id]),
    [['oB', 'settled', '50', keyId], ['oC', 'settled', '50', keyId]]);
  assert.equal((await api(srv.base, key, `/workflows/${wf}/runs/${first}`)).body.retryOf, null);

  // 409: the completed retry is not failed; the failed run was already retried.
  for (const run of [second, first]) {
    const r = await post(key, `/workflows/${wf}/runs/${run}/retry`);
    assert.equal(r.status, 409, run);
    assert.equal(r.body.error.type, 'conflict');
  }
  assert.match((await post(key, `/workflows/${wf}/runs/${first}/retry`)).body.error.message, new RegExp(`already retried by run ${second}`));
  const zero = '00000000-0000-4000-8000-000000000000';
  assert.equal((await post(key, `/workflows/${wf}/runs/${zero}/retry`)).status, 404);
  assert.equal((await post((await account()).key, `/workflows/${wf}/runs/${first}/retry`)).status, 404);
  assert.equal((await post(key, `/workflows/${wf}/runs/nope/retry`)).status, 400);

  // History: newest first, with retryOf; paging as GET /workflows.
  const list = await api(srv.base, key, `/workflows/${wf}/runs`);
  assert.equal(list.status, 200, JSON.stringify(list.body));
  assert.deepEqual(list.body.data.map((r: any) => [r.id, r.status, r.retryOf]), [[second, 'completed', first], [first, 'failed', null]]);
  assert.deepEqual(Object.keys(list.body.data[0]).sort(), ['completedAt', 'createdAt', 'id', 'progress', 'retryOf', 'status']);
  assert.deepEqual(list.body.data[0].progress, { total: 4, completed: 4 });
  assert.deepEqual(list.body.data[1].progress, { total: 4, completed: 3 });
});

test('a retry while outputs of the failed run are still in flight cancels them first: none runs (or is charged) twice', async () => {
  const { id, key } = await account();
  Object.assign(behaviour, { 'if-bad': { failCalls: [0] }, 'if-slow': { ms: 30_000 } });
  const wf = await saveWorkflow(srv, id, {
    nodes: [prompt('bad', 'if-bad'), out('oBad'), prompt('slow', 'if-slow'), out('oSlow')],
    edges: [e('bad', 'oBad'), e('slow', 'oSlow')],
  });
  const first = await startRun(srv, key, wf);
  await waitRun(srv, key, wf, first, { done: (b) => b.status === 'failed' });
  const slowReq = await until('the slow output is in flight', () => seen.get('if-slow')?.[0]);
  behaviour['if-slow'] = { ms: 20 };
  const res = await post(key, `/workflows/${wf}/runs/${first}/retry`);
  assert.equal(res.status, 202, JSON.stringify(res.body));
  await until('the old in-flight call is aborted', () => slowReq.abortedAt, 5_000);
  const done = await waitRun(srv, key, wf, res.body.id);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual((await runCharges(srv.db.sql, first)).map((c) => [c.node_id, c.status]), [['oBad', 'released'], ['oSlow', 'released']]);
  assert.deepEqual((await runCharges(srv.db.sql, res.body.id)).map((c) => [c.node_id, c.status]), [['oBad', 'settled'], ['oSlow', 'settled']]);
});

test('GET /workflows/{id}/runs: newest first, limit/offset as GET /workflows, 404 unknown or foreign workflow, 400 bad id or page', async () => {
  const { id, key } = await account();
  Object.assign(behaviour, { 'h-one': {} });
  const wf = await saveWorkflow(srv, id, { nodes: [prompt('one', 'h-one'), out('oOne')], edges: [e('one', 'oOne')] });
  const empty = await api(srv.base, key, `/workflows/${wf}/runs`);
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.body, { data: [] });
  const runs: string[] = [];
  for (let i = 0; i < 3; i++) runs.push(await startRun(srv, key, wf));
  const newestFirst = [...runs].reverse();
  assert.deepEqual((await api(srv.base, key, `/workflows/${wf}/runs`)).body.data.map((r: any) => r.id), newestFirst);
  assert.deepEqual((await api(srv.base, key, `/workflows/${wf}/runs?limit=2`)).body.data.map((r: any) => r.id), newestFirst.slice(0, 2));
  assert.deepEqual((await api(srv.base, key, `/workflows/${wf}/runs?limit=2&offset=2`)).body.data.map((r: any) => r.id), newestFirst.slice(2));
  assert.deepEqual((await api(srv.base, key, `/workflows/${wf}/runs?offset=5`)).body.data, []);
  const readOnly = (await createKey(srv.db.sql, id, { scopes: ['read'] })).key;
  assert.equal((await api(srv.base, readOnly, `/workflows/${wf}/runs`)).status, 200);
  const res = await api(srv.base, key, `/workflows/${wf}/runs`);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  for (const r of res.body.data) {
    assert.match(r.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(r.retryOf, null);
  }

  for (const q of ['limit=0', 'limit=101', 'limit=x', 'offset=-1', 'limit=1&limit=2']) {
    const r = await api(srv.base, key, `/workflows/${wf}/runs?${q}`);
    assert.equal(r.status, 400, q);
    assert.equal(r.body.error.type, 'invalid_request');
  }
  assert.equal((await api(srv.base, key, '/workflows/nope/runs')).status, 400);
  const other = await account();
  for (const [k, w] of [[other.key, wf], [key, '00000000-0000-4000-8000-000000000000']] as const) {
    const r = await api(srv.base, k, `/workflows/${w}/runs`);
    assert.equal(r.status, 404);
    assert.equal(r.body.error.type, 'not_found');
  }
  assert.equal((await api(srv.base, null, `/workflows/${wf}/runs`)).status, 401);
});
