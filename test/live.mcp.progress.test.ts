// MCP progress while a tool call waits (docs/mcp.md, "Progress"): generate_code, get_generation and
// get_workflow_run with waitSeconds and a progressToken receive notifications/progress as the model
// writes, before the result — with the SDK 1.x and 2.x clients. Without a token, none are sent.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { startTestWorker } from './_generations.ts';
import { connectV1, connectV2, link, startMcpServer, type AnyClient, type McpServer } from './_mcp.ts';
import { createAccount, testConfig } from './_setup.ts';
import { createWorkflow } from '../src/workflows/authoring.ts';

let srv: McpServer;
let accountId: string;
const clients: Record<string, AnyClient> = {};

before(async () => {
  srv = await startMcpServer();
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/streamer', name: 'Streamer', category: 'text', provider: 'local', upstream: { delayMs: 1500 },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 400, markup: 1,
  })})`;
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  accountId = a.id;
  await link(srv.db.sql, srv.iss.issuer, 'progress', a.id);
  const token = await srv.iss.sign({ sub: 'progress' });
  clients.v1 = await connectV1(srv.mcpUrl, token);
  clients.v2 = await connectV2(srv.mcpUrl, token);
});

interface Seen { progress: number; message?: string; at: number }

async function callWithProgress(client: AnyClient, name: string, args: Record<string, unknown>): Promise<{ result: any; seen: Seen[]; doneAt: number }> {
  const seen: Seen[] = [];
  const options = {
    onprogress: (p: { progress: number; message?: string }) => seen.push({ progress: p.progress, message: p.message, at: performance.now() }),
    timeout: 30_000,
  };
  // SDK 1.x takes (params, resultSchema, options); 2.x (params, options).
  const result = client.era === '2025-11-25'
    ? await (client as any).callTool({ name, arguments: args }, undefined, options)
    : await (client as any).callTool({ name, arguments: args }, options);
  return { result, seen, doneAt: performance.now() };
}

for (const era of ['v1', 'v2'] as const) {
  test(`${era}: generate_code with a progressToken receives the code as it is written, before the result`, async () => {
    const { result, seen, doneAt } = await callWithProgress(clients[era]!, 'generate_code', { prompt: `progress ${era}`, model: 'local/streamer', waitSeconds: 30 });
    const g = result.structuredContent;
    assert.equal(g.status, 'completed', JSON.stringify(result));
    assert.ok(seen.length >= 3, `progress notifications: ${seen.length}`);
    assert.ok(seen.every((s) => s.at < doneAt));
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.progress > seen[i - 1]!.progress, 'progress grows');
    assert.equal(seen.at(-1)!.progress, [...g.result.code].length, 'progress counts the characters written');
    assert.equal(seen.map((s) => s.message).join(''), g.result.code, 'the messages are the text as it was written');
  });
}

test('get_generation and get_workflow_run with a progressToken report progress too; without one, nothing is sent', async () => {
  const client = clients.v2!;
  const started = (await client.callTool({ name: 'generate_code', arguments: { prompt: 'later', model: 'local/streamer' } })).structuredContent;
  const got = await callWithProgress(client, 'get_generation', { id: started.id, waitSeconds: 30 });
  assert.equal(got.result.structuredContent.status, 'completed');
  assert.ok(got.seen.length >= 1);

  const wf = await createWorkflow(srv.db.sql, testConfig(), {
    accountId, workspaceId: null, name: 'mcp progress',
    graph: { nodes: [{ id: 'p', kind: 'prompt', output: 'code', prompt: 'x', model: 'local/streamer' }, { id: 'o', kind: 'output' }], edges: [{ from: 'p', to: 'o' }] },
  });
  const run = (await client.callTool({ name: 'run_workflow', arguments: { workflowId: wf.id } })).structuredContent;
  const waited = await callWithProgress(client, 'get_workflow_run', { workflowId: wf.id, runId: run.id, waitSeconds: 30 });
  assert.equal(waited.result.structuredContent.status, 'completed');
  assert.ok(waited.seen.length >= 3, `run progress notifications: ${waited.seen.length}`);
  assert.equal(waited.seen.map((s) => s.message).join(''), waited.result.structuredContent.results[0].code);

  // No token: the SDK sends none, and the call answers as before.
  const quiet = await client.callTool({ name: 'generate_code', arguments: { prompt: 'quiet', model: 'local/streamer', waitSeconds: 30 } });
  assert.equal(quiet.structuredContent.status, 'completed');
});
