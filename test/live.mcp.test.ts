// MCP's waitSeconds: generate_code answers with the completed generation when it settles in time
// (else the pending id), get_generation and get_workflow_run wait for completed or failed; the
// cancel tools end a job or a run and release its reservation.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { startTestWorker } from './_generations.ts';
import { connectV2, link, ok, startMcpServer, type AnyClient, type McpServer } from './_mcp.ts';
import { createAccount, testConfig } from './_setup.ts';
import { createWorkflow } from '../src/workflows/authoring.ts';

let srv: McpServer;
let client: AnyClient;
let accountId: string;

before(async () => {
  srv = await startMcpServer();
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/slow-coder', name: 'Slow coder', category: 'text', provider: 'local', upstream: { delayMs: 1500 },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
  })})`;
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/stuck-coder', name: 'Stuck coder', category: 'text', provider: 'local', upstream: { delayMs: 60_000 },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
  })})`;
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  accountId = a.id;
  await link(srv.db.sql, srv.iss.issuer, 'waiter', a.id);
  client = await connectV2(srv.mcpUrl, await srv.iss.sign({ sub: 'waiter' }));
});

test('generate_code with waitSeconds: the completed generation in one call; too short a wait: the pending id', async () => {
  const done = await ok(client, 'generate_code', { prompt: 'one call', waitSeconds: 20 });
  assert.equal(done.status, 'completed');
  assert.match(done.result.code, /one call/);
  const t0 = performance.now();
  const pending = await ok(client, 'generate_code', { prompt: 'slow', model: 'local/slow-coder', waitSeconds: 1 });
  assert.deepEqual(Object.keys(pending).sort(), ['id', 'status']);
  assert.equal(pending.status, 'pending');
  assert.ok(performance.now() - t0 >= 950);
  // get_generation waits for it.
  const got = await ok(client, 'get_generation', { id: pending.id, waitSeconds: 20 });
  assert.equal(got.status, 'completed');
});

test('get_workflow_run with waitSeconds returns the completed run; waitSeconds above 50 is refused', async () => {
  const wf = await createWorkflow(srv.db.sql, testConfig(), {
    accountId, workspaceId: null, name: 'mcp wait',
    graph: { nodes: [{ id: 'p', kind: 'prompt', output: 'code', prompt: 'x', model: 'local/slow-coder' }, { id: 'o', kind: 'output' }], edges: [{ from: 'p', to: 'o' }] },
  });
  const run = await ok(client, 'run_workflow', { workflowId: wf.id });
  const body = await ok(client, 'get_workflow_run', { workflowId: wf.id, runId: run.id, waitSeconds: 20 });
  assert.equal(body.status, 'completed');
  assert.equal(body.results.length, 1);
  const res = await client.callTool({ name: 'get_workflow_run', arguments: { workflowId: wf.id, runId: run.id, waitSeconds: 51 } });
  assert.equal(res.isError, true);
});

test('cancel_generation: a processing job ends failed/canceled with nothing charged; again is a conflict; another account\'s is not found', async () => {
  const started = await ok(client, 'generate_code', { prompt: 'cancel me', model: 'local/stuck-coder' });
  for (let i = 0; i < 200; i++) {
    const [g] = await srv.db.sql`select status from kiln_private.generations where id = ${started.id}`;
    if (g!.status === 'processing') break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const canceled = await ok(client, 'cancel_generation', { id: started.id });
  assert.equal(canceled.status, 'failed');
  assert.equal(canceled.error, 'canceled');
  const [c] = await srv.db.sql`select status from kiln_private.charges where generation_id = ${started.id}`;
  assert.equal(c!.status, 'released');
  const again = await client.callTool({ name: 'cancel_generation', arguments: { id: started.id } });
  assert.equal(again.isError, true);
  assert.equal(again.structuredContent?.error?.type ?? JSON.parse(again.content[0].text).error.type, 'conflict');
  const other = await createAccount(srv.db.sql, { tier: 'pro' });
  await link(srv.db.sql, srv.iss.issuer, 'other-canceler', other.id);
  const stranger = await connectV2(srv.mcpUrl, await srv.iss.sign({ sub: 'other-canceler' }));
  const started2 = await ok(client, 'generate_code', { prompt: 'not yours', model: 'local/stuck-coder' });
  const denied = await stranger.callTool({ name: 'cancel_generation', arguments: { id: started2.id } });
  assert.equal(denied.isError, true);
  assert.match(JSON.stringify(denied), /not_found/);
  await ok(client, 'cancel_generation', { id: started2.id });
  await stranger.close();
});

test('cancel_workflow_run: the run ends failed/canceled and its running output is released', async () => {
  const wf = await createWorkflow(srv.db.sql, testConfig(), {
    accountId, workspaceId: null, name: 'mcp cancel',
    graph: { nodes: [{ id: 'p', kind: 'prompt', output: 'code', prompt: 'x', model: 'local/stuck-coder' }, { id: 'o', kind: 'output' }], edges: [{ from: 'p', to: 'o' }] },
  });
  const run = await ok(client, 'run_workflow', { workflowId: wf.id });
  for (let i = 0; i < 200; i++) {
    const [o] = await srv.db.sql`select g.status from kiln_private.generations g where g.run_id = ${run.id}`;
    if (o?.status === 'processing') break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const canceled = await ok(client, 'cancel_workflow_run', { workflowId: wf.id, runId: run.id });
  assert.equal(canceled.status, 'failed');
  assert.equal(canceled.error, 'canceled');
  const charges = await srv.db.sql`select c.status from kiln_private.charges c join kiln_private.generations g on g.id = c.generation_id where g.run_id = ${run.id}`;
  assert.deepEqual(charges.map((r) => r.status), ['released']);
});
