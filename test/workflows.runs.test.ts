// Workflow execution against a loopback OpenAI peer (real HTTP, real worker, real Postgres):
// dependency order and data flow, parallel branches, failure handling, snapshot immutability,
// write-back, budget exhaustion mid-run, parallel slots and the run window.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { getWorkflow, replaceWorkflow } from '../src/workflows/authoring.ts';
import { startTestWorker } from './_generations.ts';
import { errorReply, startOpenAIPeer, type OpenAIPeer, type PeerRequest } from './_openai-peer.ts';
import { api, createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';
import { chatAfter, peerModels, runCharges, saveWorkflow, startRun, userText, waitRun } from './_workflows.ts';

let srv: TestServer;
let peer: OpenAIPeer;
/** When each step's request arrived and when its reply was sent (ms since epoch). */
const seen = new Map<string, { at: number; done: number; req: PeerRequest }[]>();

/** Step markers in prompts ("STEP<name>;") script the peer: delay, failure, reply text. */
const behaviour: Record<string, { ms?: number; fail?: boolean }> = {};

before(async () => {
  peer = await startOpenAIPeer();
  onCleanup(() => peer.close());
  peer.script(async (req) => {
    const step = /STEP<([^>]+)>/.exec(userText(req))?.[1] ?? 'unknown';
    const b = behaviour[step] ?? {};
    const entry = { at: Date.now(), done: 0, req };
    seen.set(step, [...(seen.get(step) ?? []), entry]);
    const ms = b.ms ?? 20;
    setTimeout(() => { entry.done = Date.now(); }, ms);
    if (b.fail) return { ...errorReply(400, 'invalid_request_error', 'content_policy', 'the upstream refused this prompt'), delayMs: ms };
    return chatAfter(ms, `result-of-${step}`);
  });
  srv = await startServer();
  await peerModels(srv.db.sql, peer);
  await startTestWorker(srv, { workerConcurrency: 16 });
});

async function account(opts: { budgetMicros?: number | null; slots?: number } = {}) {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: opts.budgetMicros });
  if (opts.slots !== undefined) await srv.db.sql`update kiln_private.accounts set parallel_slots = ${opts.slots} where id = ${a.id}`;
  const k = await createKey(srv.db.sql, a.id);
  return { id: a.id, key: k.key, keyId: k.id };
}

const text = (id: string, t: string, label?: string) => ({ id, kind: 'text', text: t, ...(label ? { label } : {}) });
const prompt = (id: string, step: string, extra: object = {}) => ({ id, kind: 'prompt', output: 'code', model: 'peer/coder', prompt: `STEP<${step}>; make ${id}`, ...extra });
const out = (id: string, label?: string) => ({ id, kind: 'output', ...(label ? { label } : {}) });
const e = (from: string, to: string) => ({ from, to });

test('a diamond runs in dependency order; upstream outputs reach downstream prompts; branches overlap', async () => {
  const { id, key, keyId } = await account();
  Object.assign(behaviour, { 'dia-A': { ms: 50 }, 'dia-B': { ms: 400 }, 'dia-C': { ms: 400 }, 'dia-D': { ms: 20 } });
  const wf = await saveWorkflow(srv, id, {
    nodes: [
      text('brief', 'BRIEF-TEXT', 'Brief'),
      prompt('pA', 'dia-A'), out('oA', 'A out'),
      prompt('pB', 'dia-B'), out('oB', 'B out'),
      prompt('pC', 'dia-C'), out('oC'),
      prompt('pD', 'dia-D'), out('oD', 'Final'),
    ],
    edges: [e('brief', 'pA'), e('pA', 'oA'), e('oA', 'pB'), e('oA', 'pC'), e('pB', 'oB'), e('pC', 'oC'), e('oB', 'pD'), e('oC', 'pD'), e('brief', 'pD'), e('pD', 'oD')],
  });
  const run = await startRun(srv, key, wf);
  const done = await waitRun(srv, key, wf, run);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual(done.progress, { total: 4, completed: 4 });

  const [a, b, c, d] = ['dia-A', 'dia-B', 'dia-C', 'dia-D'].map((s) => seen.get(s)!);
  for (const x of [a, b, c, d]) assert.equal(x!.length, 1, 'each prompt ran once');
  assert.ok(b![0]!.at >= a![0]!.done && c![0]!.at >= a![0]!.done, 'B and C start after A answered');
  assert.ok(d![0]!.at >= b![0]!.done && d![0]!.at >= c![0]!.done, 'D starts after B and C answered');
  // Overlap is the claim (each answers 400 ms after it starts, so run one after the other they
  // could not overlap); how close together they start depends on the machine's load.
  assert.ok(b![0]!.at < c![0]!.done && c![0]!.at < b![0]!.done, 'B and C overlap in time');

  assert.match(userText(a![0]!.req), /--- Brief ---\nBRIEF-TEXT/);
  assert.match(userText(b![0]!.req), /--- A out ---\nresult-of-dia-A/);
  const dText = userText(d![0]!.req);
  assert.match(dText, /--- B out ---\nresult-of-dia-B/);
  assert.match(dText, /--- oC ---\nresult-of-dia-C/, 'an output without a label is labelled by its id');
  assert.match(dText, /--- Brief ---\nBRIEF-TEXT/);

  const by = new Map<string, any>(done.results.map((r: any) => [r.outputNodeId, r]));
  assert.equal(done.results[0].outputNodeId, 'oA');
  assert.equal(done.results[3].outputNodeId, 'oD');
  assert.deepEqual(by.get('oD'), { promptNodeId: 'pD', outputNodeId: 'oD', type: 'code', status: 'completed', label: 'Final', code: 'result-of-dia-D', costMicros: 50, model: 'peer/coder' });
  const ledger = await runCharges(srv.db.sql, run);
  assert.deepEqual(ledger.map((c) => [c.node_id, c.status, c.settled, c.origin, c.key_id, c.model_id]), [
    ['oA', 'settled', '50', 'workflow', keyId, 'peer/coder'],
    ['oB', 'settled', '50', 'workflow', keyId, 'peer/coder'],
    ['oC', 'settled', '50', 'workflow', keyId, 'peer/coder'],
    ['oD', 'settled', '50', 'workflow', keyId, 'peer/coder'],
  ]);
  // Output generations get time-ordered ids (UUID version 7), as POST /generations' do.
  const gens = await srv.db.sql`select id::text from kiln_private.generations where run_id = ${run}`;
  assert.equal(gens.length, 4);
  for (const g of gens) assert.match(g.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test('a failed output fails the run: downstream never starts nor is charged, other results stay', async () => {
  const { id, key } = await account();
  Object.assign(behaviour, { 'f-ok': { ms: 20 }, 'f-bad': { ms: 150, fail: true }, 'f-slow': { ms: 500 }, 'f-down': {} });
  const wf = await saveWorkflow(srv, id, {
    nodes: [prompt('ok', 'f-ok'), out('oOk'), prompt('bad', 'f-bad'), out('oBad'), prompt('down', 'f-down'), out('oDown'), prompt('slow', 'f-slow'), out('oSlow')],
    edges: [e('ok', 'oOk'), e('bad', 'oBad'), e('oBad', 'down'), e('down', 'oDown'), e('slow', 'oSlow')],
  });
  const run = await startRun(srv, key, wf);
  const failed = await waitRun(srv, key, wf, run);
  assert.equal(failed.status, 'failed');
  assert.match(failed.error, /^output "oBad" of prompt "bad" failed: upstream provider returned 400/);
  assert.ok(failed.completedAt);
  // The independent slow output was in flight when the run failed: it may still record.
  const settled = await waitRun(srv, key, wf, run, { done: (b) => b.results.length === 3 });
  const by = new Map<string, any>(settled.results.map((r: any) => [r.outputNodeId, r]));
  assert.equal(by.get('oOk').status, 'completed');
  assert.equal(by.get('oSlow').status, 'completed');
  assert.equal(by.get('oBad').status, 'failed');
  assert.match(by.get('oBad').error, /^upstream provider returned 400/);
  assert.equal(by.get('oBad').costMicros, 0);
  assert.ok(!by.has('oDown'), 'abandoned outputs are not results');
  assert.deepEqual(settled.progress, { total: 4, completed: 3 });
  assert.equal(settled.status, 'failed');
  assert.equal(seen.get('f-down'), undefined, 'the downstream prompt never reached the provider');
  const ledger = await runCharges(srv.db.sql, run);
  assert.deepEqual(ledger.map((c) => [c.node_id, c.status]), [['oBad', 'released'], ['oOk', 'settled'], ['oSlow', 'settled']]);
  const [row] = await srv.db.sql`select status from kiln_private.workflow_run_outputs where run_id = ${run} and output_node_id = 'oDown'`;
  assert.equal(row.status, 'abandoned');
});

test('the run uses its snapshot: an edit after enqueue changes neither what runs nor what is charged; write-back skips removed outputs', async () => {
  const { id, key } = await account();
  Object.assign(behaviour, { 'snap-1': { ms: 400 }, 'snap-2': { ms: 20 }, 'snap-new': {} });
  const original = {
    nodes: [prompt('p1', 'snap-1', { prompt: 'STEP<snap-1>; OLD-PROMPT' }), out('o1', 'First'), prompt('p2', 'snap-2'), out('o2')],
    edges: [e('p1', 'o1'), e('p2', 'o2')],
  };
  const wf = await saveWorkflow(srv, id, original);
  const run = await startRun(srv, key, wf);
  const edited = {
    nodes: [prompt('p1', 'snap-1', { prompt: 'STEP<snap-1>; NEW-PROMPT' }), out('o1', 'First'), prompt('p3', 'snap-new'), out('o3')],
    edges: [e('p1', 'o1'), e('p3', 'o3')],
  };
  await replaceWorkflow(srv.db.sql, srv.ctx.config, { id: wf, graph: edited, name: null });
  const editedAt = (await getWorkflow(srv.db.sql, wf))!.updated_at;

  const done = await waitRun(srv, key, wf, run);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual(done.results.map((r: any) => r.outputNodeId).sort(), ['o1', 'o2']);
  assert.match(userText(seen.get('snap-1')![0]!.req), /OLD-PROMPT/);
  assert.equal(seen.get('snap-1')!.length, 1);
  assert.equal(seen.get('snap-new'), undefined);
  assert.deepEqual((await runCharges(srv.db.sql, run)).map((c) => c.node_id), ['o1', 'o2']);
  const [snap] = await srv.db.sql`select snapshot from kiln_private.workflow_runs where id = ${run}`;
  assert.deepEqual(snap.snapshot, original);

  const saved = await getWorkflow(srv.db.sql, wf);
  assert.ok(saved!.updated_at > editedAt, 'write-back is an update');
  const nodes = new Map<string, any>(saved!.graph.nodes.map((n: any) => [n.id, n]));
  assert.deepEqual(Object.keys(nodes.get('o1').result).sort(), ['code', 'completedAt', 'costMicros', 'runId', 'type']);
  assert.equal(nodes.get('o1').result.code, 'result-of-snap-1');
  assert.equal(nodes.get('o1').label, 'First');
  assert.equal(nodes.get('p1').prompt, 'STEP<snap-1>; NEW-PROMPT', 'the edit itself is kept');
  assert.ok(!nodes.has('o2'), 'a removed output node is not re-added');
  assert.equal(nodes.get('o3').result, undefined);
});

test('running out of budget mid-run fails that output with insufficient_quota', async () => {
  // local/sketch costs 1000 per image: the first image fits in 1500, the second's reservation does not.
  const { id, key } = await account({ budgetMicros: 1500 });
  const wf = await saveWorkflow(srv, id, {
    nodes: [
      { id: 'i1', kind: 'prompt', output: 'image', model: 'local/sketch', prompt: 'first' }, out('o1'),
      { id: 'i2', kind: 'prompt', output: 'image', model: 'local/sketch', prompt: 'second' }, out('o2'),
    ],
    edges: [e('i1', 'o1'), e('o1', 'i2'), e('i2', 'o2')],
  });
  const run = await startRun(srv, key, wf);
  const done = await waitRun(srv, key, wf, run);
  assert.equal(done.status, 'failed');
  assert.match(done.error, /^output "o2" of prompt "i2" failed: insufficient_quota: the budget for this period is exhausted/);
  const by = new Map<string, any>(done.results.map((r: any) => [r.outputNodeId, r]));
  assert.equal(by.get('o1').status, 'completed');
  assert.equal(by.get('o2').status, 'failed');
  assert.match(by.get('o2').error, /^insufficient_quota: /);
  assert.deepEqual((await runCharges(srv.db.sql, run)).map((c) => [c.node_id, c.status, c.settled]), [['o1', 'settled', '1000']]);
});

test('independent outputs run in parallel, bounded by the account\'s parallel slots', async () => {
  const { id, key } = await account({ slots: 2 });
  const steps = ['s1', 's2', 's3', 's4', 's5'];
  for (const s of steps) behaviour[`slot-${s}`] = { ms: 300 };
  const wf = await saveWorkflow(srv, id, {
    nodes: steps.flatMap((s) => [prompt(s, `slot-${s}`), out(`o${s}`)]),
    edges: steps.map((s) => e(s, `o${s}`)),
  });
  const t0 = Date.now();
  const run = await startRun(srv, key, wf);
  const done = await waitRun(srv, key, wf, run);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const spans = steps.map((s) => seen.get(`slot-${s}`)![0]!);
  const maxConcurrent = Math.max(...spans.map((x) => spans.filter((y) => y.at < x.at + 250 && x.at < y.at + 250).length));
  assert.equal(maxConcurrent, 2, `at most 2 at once, started at ${spans.map((x) => x.at - t0).join(', ')} ms`);
  // A freed slot wakes the next output at once (not after the slot retry delay).
  assert.ok(Date.now() - t0 < 1500 + 2 * srv.ctx.config.slotRetryMs, `took ${Date.now() - t0} ms`);
});

test('outputs not started within the run window fail the run with a clear error', async () => {
  const { id, key } = await account();
  behaviour['win-slow'] = { ms: 1800 };
  behaviour['win-after'] = {};
  const api1s = await startServer({ db: srv.db, config: { runWindowSeconds: 1 } });
  const wf = await saveWorkflow(srv, id, {
    nodes: [prompt('slow', 'win-slow'), out('oSlow'), prompt('after', 'win-after'), out('oAfter')],
    edges: [e('slow', 'oSlow'), e('oSlow', 'after'), e('after', 'oAfter')],
  });
  const run = await startRun(api1s, key, wf);
  const failed = await waitRun(api1s, key, wf, run, { timeoutMs: 10_000 });
  assert.equal(failed.status, 'failed');
  assert.match(failed.error, /did not finish within its 1-second window: prompt "after" → output "oAfter" was not started/);
  // The slow output started in time: it still records its result.
  const later = await waitRun(api1s, key, wf, run, { done: (b) => b.results.some((r: any) => r.outputNodeId === 'oSlow') });
  assert.equal(later.results.find((r: any) => r.outputNodeId === 'oSlow').status, 'completed');
  assert.equal(seen.get('win-after'), undefined);
  assert.deepEqual((await runCharges(srv.db.sql, run)).map((c) => [c.node_id, c.status]), [['oSlow', 'settled']]);
});

test('duplicate jobs and repeated settlements for one output run it once and charge once', async () => {
  const { id, key } = await account();
  behaviour['dup-1'] = { ms: 400 };
  const wf = await saveWorkflow(srv, id, { nodes: [prompt('p1', 'dup-1'), out('o1')], edges: [e('p1', 'o1')] });
  const run = await startRun(srv, key, wf);
  const waitFor = async (check: () => boolean) => { while (!check()) await new Promise((r) => setTimeout(r, 10)); };
  await waitFor(() => (seen.get('dup-1')?.length ?? 0) > 0);
  // The output is a generation (origin workflow): extra jobs for it (no job key, so they are
  // separate jobs) while a live worker runs it.
  const [{ gen }] = await srv.db.sql`select generation_id as gen from kiln_private.workflow_run_outputs where run_id = ${run} and output_node_id = 'o1'`;
  for (let i = 0; i < 2; i++) {
    await srv.db.sql`select graphile_worker.add_job('generation__run', ${srv.db.sql.json({ id: gen })}::json)`;
  }
  const done = await waitRun(srv, key, wf, run);
  assert.equal(done.status, 'completed');
  await new Promise((r) => setTimeout(r, 300));
  // And again once it has settled.
  await srv.db.sql`select graphile_worker.add_job('generation__run', ${srv.db.sql.json({ id: gen })}::json)`;
  const [again] = await srv.db.sql`select kiln.complete_generation(${gen}::uuid, '{"type":"code","code":"other"}'::jsonb, 1, null) as r`;
  assert.equal(again.r.applied, false);
  const [late] = await srv.db.sql`select kiln.fail_generation(${gen}::uuid, 'late failure') as r`;
  assert.equal(late.r.applied, false);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(seen.get('dup-1')!.length, 1, 'the provider was called once');
  assert.deepEqual((await runCharges(srv.db.sql, run)).map((c) => [c.node_id, c.status, c.settled]), [['o1', 'settled', '50']]);
  const final = await waitRun(srv, key, wf, run);
  assert.equal(final.status, 'completed');
  assert.equal(final.results[0].code, 'result-of-dup-1');
  const [{ n }] = await srv.db.sql`select count(*)::int as n from graphile_worker._private_jobs where payload->>'run' = ${run} or payload->>'id' = ${gen}`;
  assert.equal(n, 0, 'no job left behind (the deadline check is removed when the run settles)');
});

test('a workspace-bound key bills the Team pool; a lapsed plan refuses the run with 402', async () => {
  const owner = await createAccount(srv.db.sql, { tier: 'pro' });
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Team', ${owner.id}::uuid)`;
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}::uuid, 'active', 5000000, true)`;
  const k = await createKey(srv.db.sql, owner.id, { workspaceId: ws.id });
  behaviour['ws-1'] = {};
  // The workspace's workflow: a workspace-bound key reaches the workspace's workflows (issue 28).
  const wf = await saveWorkflow(srv, owner.id, { nodes: [prompt('p1', 'ws-1'), out('o1')], edges: [e('p1', 'o1')] }, 'team workflow', ws.id);
  const run = await startRun(srv, k.key, wf);
  assert.equal((await waitRun(srv, k.key, wf, run)).status, 'completed');
  const [c] = await srv.db.sql`select workspace_id, pool_id from kiln_private.charges where workflow_run_id = ${run}`;
  assert.equal(c.workspace_id, ws.id);
  assert.equal(c.pool_id, ws.id);

  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}::uuid, 'lapsed', null, false)`;
  const refused = await api(srv.base, k.key, `/workflows/${wf}/runs`, { method: 'POST' });
  assert.equal(refused.status, 402);
  assert.equal(refused.body.error.type, 'payment_required');
});
