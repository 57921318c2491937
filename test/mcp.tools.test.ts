// The MCP tools on the real server (h3 app, Postgres, graphile-worker, local provider) with tokens
// from a loopback OIDC issuer: listed with schemas, called with SDK 1.x (2025-11-25) and 2.x (2026-07-28)
// clients, results equal to the REST twin's body for the same state; ownership, budget, workspace
// billing, rate limits, identity linking, and the MCP-token / API-key separation.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { extractWWWAuthenticateParams } from '@modelcontextprotocol/client';
import { startTestWorker } from './_generations.ts';
import { api, createAccount, createKey, startServer } from './_setup.ts';
import { saveWorkflow, waitRun } from './_workflows.ts';
import {
  connectV1, connectV2, link, ok, startMcpServer, toolError, unsign, waitGeneration, waitRunMcp,
  type AnyClient, type McpServer,
} from './_mcp.ts';

const TOOLS = [
  'get_usage', 'list_models', 'generate_image', 'generate_code', 'get_generation',
  'transform_image', 'list_workflows', 'run_workflow', 'get_workflow_run',
  // Additive to the nine core tools.
  'cancel_generation', 'cancel_workflow_run', 'list_generations', 'get_daily_usage', 'get_workflow', 'save_workflow',
];

const GRAPH = {
  nodes: [
    { id: 'brief', kind: 'text', text: 'Autumn sale, 30% off' },
    { id: 'p1', kind: 'prompt', output: 'code', targetLanguage: 'tsx', prompt: 'Landing section for the brief', model: 'local/coder' },
    { id: 'o1', kind: 'output', label: 'Landing section' },
  ],
  edges: [{ from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }],
};

const PNG_1PX =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

let srv: McpServer;
let alice: { id: string; key: string };
let aliceToken: string;

before(async () => {
  srv = await startMcpServer({ config: { readRpm: 1000, transformRpm: 1000 } });
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  alice = { id: a.id, key: (await createKey(srv.db.sql, a.id)).key };
  await link(srv.db.sql, srv.iss.issuer, 'alice', a.id);
  aliceToken = await srv.iss.sign({ sub: 'alice' });
});

for (const [era, connect] of [['SDK 1.x, 2025-11-25', connectV1], ['SDK 2.x, 2026-07-28', connectV2]] as const) {
  describe(`${era}: every tool against its REST twin`, () => {
    let client: AnyClient;
    before(async () => {
      client = await connect(srv.mcpUrl, aliceToken);
    });
    after(() => client.close());

    test('tools/list: the nine core tools and the additive ones, with input and output schemas and honest annotations', async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), TOOLS);
      // docs/mcp.md lists every tool and counts them right.
      const mcpDoc = fs.readFileSync(new URL('../docs/mcp.md', import.meta.url), 'utf8');
      for (const name of TOOLS) assert.match(mcpDoc, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `docs/mcp.md lists ${name}`);
      assert.match(mcpDoc, /all fifteen tools/);
      assert.equal(TOOLS.length, 15);
      for (const t of tools) {
        assert.equal(t.inputSchema.type, 'object', t.name);
        assert.equal(t.outputSchema?.type, 'object', t.name);
        assert.ok(t.description.length > 40, t.name);
        for (const hint of ['readOnlyHint', 'destructiveHint', 'openWorldHint']) assert.equal(typeof t.annotations?.[hint], 'boolean', `${t.name}.${hint}`);
      }
      const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
      for (const name of ['get_usage', 'list_models', 'get_generation', 'list_workflows', 'get_workflow_run', 'list_generations', 'get_daily_usage', 'get_workflow']) assert.equal(byName[name].annotations.readOnlyHint, true, name);
      for (const name of ['generate_image', 'generate_code', 'transform_image', 'run_workflow', 'save_workflow']) assert.equal(byName[name].annotations.readOnlyHint, false, name);
      assert.equal(byName.save_workflow.annotations.destructiveHint, true, 'a replace overwrites the stored graph');
      // The graph's format is in the schema an agent reads: node kinds, their fields, the save limits.
      const graph = byName.save_workflow.inputSchema.properties.graph;
      assert.deepEqual(byName.save_workflow.inputSchema.required, ['name', 'graph']);
      assert.equal(graph.properties.nodes.maxItems, 200);
      assert.deepEqual(graph.properties.nodes.items.oneOf.map((n: any) => n.properties.kind.const), ['text', 'image', 'prompt', 'output']);
      assert.deepEqual(byName.get_workflow.inputSchema.required, ['id']);
      assert.equal(byName.generate_image.annotations.openWorldHint, true);
      for (const name of ['cancel_generation', 'cancel_workflow_run']) {
        assert.equal(byName[name].annotations.readOnlyHint, false, name);
        assert.equal(byName[name].annotations.destructiveHint, true, name);
      }
      assert.equal(byName.run_workflow.annotations.destructiveHint, true, 'a completed run overwrites the saved output nodes');
      // Input schemas come from the REST valibot schemas.
      assert.deepEqual(byName.generate_image.inputSchema.required, ['prompt']);
      assert.ok(!('type' in byName.generate_image.inputSchema.properties));
      assert.ok('aspectRatio' in byName.generate_image.inputSchema.properties);
      assert.ok('targetLanguage' in byName.generate_code.inputSchema.properties);
      assert.ok(byName.generate_code.inputSchema.properties.targetLanguage.enum.includes('glsl'));
      assert.deepEqual(byName.transform_image.inputSchema.required, ['source', 'op']);
      assert.deepEqual(byName.get_workflow_run.inputSchema.required, ['workflowId', 'runId']);
      assert.equal(byName.list_workflows.inputSchema.properties.limit.maximum, 100);
      assert.equal(byName.list_generations.inputSchema.properties.limit.maximum, 100);
      assert.deepEqual(byName.list_generations.inputSchema.properties.status.items.enum, ['pending', 'processing', 'completed', 'failed']);
    });

    test('get_usage and list_models equal GET /usage and GET /models', async () => {
      const usage = await ok(client, 'get_usage');
      assert.deepEqual(usage, (await api(srv.base, alice.key, '/usage')).body);
      assert.equal(usage.scope, 'personal');
      const models = await ok(client, 'list_models');
      assert.deepEqual(models, (await api(srv.base, alice.key, '/models')).body);
      const images = await ok(client, 'list_models', { filter: 'image' });
      assert.ok(images.data.length > 0 && images.data.every((m: any) => m.category === 'image'));
      const code = await ok(client, 'list_models', { filter: 'code' });
      assert.deepEqual(
        code.data.map((m: any) => m.id),
        models.data.filter((m: any) => m.category === 'text' || m.category === 'svg').map((m: any) => m.id),
      );
    });

    test('generate_image → get_generation: completes, billed to the same budget; REST cannot see it', async () => {
      const before = await ok(client, 'get_usage');
      const started = await ok(client, 'generate_image', { prompt: 'a red fox in the snow', aspectRatio: '16:9', images: [{ url: PNG_1PX }] });
      assert.deepEqual(Object.keys(started).sort(), ['id', 'status']);
      assert.equal(started.status, 'pending');
      const done = await waitGeneration(client, started.id);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.equal(done.result.type, 'image');
      assert.equal(done.result.aspectRatio, '16:9');
      assert.ok(done.result.costMicros > 0);
      assert.match(done.result.url, new RegExp(`^${srv.origin}/files/${alice.id}/generations/${started.id}\\.png\\?expires=`));
      assert.equal((await fetch(done.result.url)).status, 200);
      const after = await ok(client, 'get_usage');
      assert.equal(after.used_micros, before.used_micros + done.result.costMicros, 'the MCP generation spends the REST budget');
      const [charge] = await srv.db.sql`select origin, key_id, workspace_id, status from kiln_private.charges where generation_id = ${started.id}`;
      assert.deepEqual({ ...charge }, { origin: 'mcp', key_id: null, workspace_id: null, status: 'settled' });
      // REST sees only its own origin.
      const rest = await api(srv.base, alice.key, `/generations/${started.id}`);
      assert.equal(rest.status, 404);
      assert.equal(rest.body.error.type, 'not_found');
    });

    test('get_generation of a REST generation equals GET /generations/{id}', async () => {
      const created = await api(srv.base, alice.key, '/generations', { body: { type: 'code', prompt: 'a JSON list of three fruits', targetLanguage: 'json' } });
      assert.equal(created.status, 202);
      const done = await waitGeneration(client, created.body.id);
      assert.equal(done.status, 'completed');
      assert.equal(done.result.type, 'code');
      const rest = await api(srv.base, alice.key, `/generations/${created.body.id}`);
      assert.deepEqual(unsign(done), unsign(rest.body));
    });

    test('generate_code: GLSL and screen HTML', async () => {
      const glsl = await waitGeneration(client, (await ok(client, 'generate_code', { prompt: 'plasma waves', targetLanguage: 'glsl' })).id);
      assert.equal(glsl.status, 'completed');
      assert.match(glsl.result.code, /void mainImage/);
      assert.match(glsl.result.code, /@range/);
      const screen = await waitGeneration(client, (await ok(client, 'generate_code', { prompt: 'a pricing page', screenHtml: true })).id);
      assert.equal(screen.status, 'completed');
      assert.match(screen.result.code, /<html|<!doctype/i);
    });

    test('transform_image: converts an owned generated image; same result shape as POST /images/transforms', async () => {
      const g = await waitGeneration(client, (await ok(client, 'generate_image', { prompt: 'a lighthouse' })).id);
      const args = { source: g.result.url, op: 'convert', options: { format: 'webp', maxDimension: 256 } };
      const viaMcp = await ok(client, 'transform_image', args);
      const viaRest = await api(srv.base, alice.key, '/images/transforms', { body: args });
      assert.equal(viaRest.status, 200);
      const strip = (r: any) => ({ ...r, url: undefined, path: undefined });
      assert.deepEqual(strip(viaMcp), strip(viaRest.body));
      assert.equal(viaMcp.format, 'webp');
      assert.equal(Math.max(viaMcp.width, viaMcp.height), 256);
      assert.match(viaMcp.path, new RegExp(`^${alice.id}/`));
      assert.equal((await fetch(viaMcp.url)).status, 200);
      const seed = await ok(client, 'transform_image', { source: 'seed/logo.png', op: 'trim' });
      assert.equal(typeof seed.trimmed, 'boolean');
    });

    test('list_workflows, run_workflow, get_workflow_run equal the REST bodies', async () => {
      const wf = await saveWorkflow(srv, alice.id, GRAPH, `mcp ${client.era}`);
      const list = await ok(client, 'list_workflows', { limit: 100 });
      assert.deepEqual(list, (await api(srv.base, alice.key, '/workflows?limit=100')).body);
      assert.equal(list.data[0].id, wf, 'most recently updated first');
      assert.deepEqual(await ok(client, 'list_workflows', { limit: 1, offset: 1 }), (await api(srv.base, alice.key, '/workflows?limit=1&offset=1')).body);

      const started = await ok(client, 'run_workflow', { workflowId: wf });
      assert.equal(started.status, 'pending');
      const run = await waitRunMcp(client, wf, started.id);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.deepEqual(run.progress, { total: 1, completed: 1 });
      assert.equal(run.results[0].outputNodeId, 'o1');
      assert.equal(typeof run.results[0].code, 'string');
      // Runs started over MCP are the account's runs: REST reads them too (one workflow, one history).
      assert.deepEqual(unsign(run), unsign(await waitRun(srv, alice.key, wf, started.id)));
      const [row] = await srv.db.sql`select origin, key_id, workspace_id from kiln_private.workflow_runs where id = ${started.id}`;
      assert.deepEqual({ ...row }, { origin: 'mcp', key_id: null, workspace_id: null });
      const [charge] = await srv.db.sql`select status, account_id from kiln_private.charges where workflow_run_id = ${started.id}`;
      assert.deepEqual({ ...charge }, { status: 'settled', account_id: alice.id });
    });

    test('an agent saves a graph with save_workflow, runs it with run_workflow and reads the result; bodies equal REST\'s', async () => {
      const saved = await ok(client, 'save_workflow', { name: `agent ${client.era}`, graph: GRAPH, idempotencyKey: `agent-${client.era}` });
      assert.equal(saved.version, 1);
      assert.deepEqual(saved, (await api(srv.base, alice.key, `/workflows/${saved.id}`)).body, 'the REST body');
      // A retry of the create (same idempotencyKey) saves nothing new.
      assert.equal((await ok(client, 'save_workflow', { name: `agent ${client.era}`, graph: GRAPH, idempotencyKey: `agent-${client.era}` })).id, saved.id);

      const started = await ok(client, 'run_workflow', { workflowId: saved.id });
      const run = await ok(client, 'get_workflow_run', { workflowId: saved.id, runId: started.id, waitSeconds: 20 });
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.equal(run.results[0].outputNodeId, 'o1');
      assert.match(run.results[0].code, /Landing section/);

      // The result is written back onto the saved graph; the version stays, so the agent's next save still matches.
      const read = await ok(client, 'get_workflow', { id: saved.id });
      assert.deepEqual(read, (await api(srv.base, alice.key, `/workflows/${saved.id}`)).body);
      assert.equal(read.graph.nodes[2].result.code, run.results[0].code);
      assert.equal(read.version, 1);
      const renamed = await ok(client, 'save_workflow', { id: saved.id, name: 'renamed by the agent', graph: GRAPH, version: read.version });
      assert.equal(renamed.version, 2);
      assert.equal(renamed.graph.nodes[2].result.code, run.results[0].code, 'a save that leaves the result out keeps it');
      const stale = await toolError(client, 'save_workflow', { id: saved.id, name: 'lost', graph: GRAPH, version: 1 });
      assert.equal(stale.type, 'precondition_failed');
      // In the tool's terms: its argument is `version`, not REST's If-Match header.
      assert.equal(stale.message, 'The workflow has changed since version 1: it is now version 2. ' +
        'Read it again with get_workflow and reapply your change (passing its version), or save without version to overwrite it.');

      // A refused save lists every problem with a pointer, in structuredContent and in the text.
      const bad = await client.callTool({ name: 'save_workflow', arguments: {
        name: 'broken',
        graph: { nodes: [...GRAPH.nodes, { id: 'p2', kind: 'prompt', output: 'image', prompt: 'x', model: 'local/coder' }], edges: [...GRAPH.edges, { from: 'p1', to: 'ghost' }] },
      } });
      assert.equal(bad.isError, true);
      assert.equal(bad.structuredContent.error.type, 'invalid_request');
      assert.deepEqual(bad.structuredContent.error.details.map((d: any) => d.path), ['/graph/edges/2/to', '/graph/nodes/3/model']);
      assert.match(bad.content[0].text, /\n- \/graph\/nodes\/3\/model: node "p2": model "local\/coder" is a text model/);
      for (const [args, re] of [
        [{ name: 'x', graph: GRAPH, version: 1 }, /^version: only with id/],
        [{ id: 'nope', name: 'x', graph: GRAPH }, /^id: /],
        [{ name: 'x' }, /graph: the graph must be an object/],
      ] as const) {
        const err = await toolError(client, 'save_workflow', args);
        assert.equal(err.type, 'invalid_request');
        assert.match(err.message, re);
      }
      assert.equal((await toolError(client, 'get_workflow', { id: crypto.randomUUID() })).type, 'not_found');
    });

    test('business errors are isError results with the REST error types; protocol errors stay JSON-RPC errors', async () => {
      const empty = await toolError(client, 'generate_image', { prompt: '' });
      assert.equal(empty.type, 'invalid_request');
      assert.match(empty.message, /prompt/);
      const wrongModel = await toolError(client, 'generate_image', { prompt: 'x', model: 'local/coder' });
      assert.equal(wrongModel.type, 'invalid_request');
      assert.match(wrongModel.message, /cannot produce image/);
      const badId = await toolError(client, 'get_generation', { id: 'nope' });
      assert.equal(badId.type, 'invalid_request');
      const missing = await toolError(client, 'get_generation', { id: crypto.randomUUID() });
      assert.deepEqual({ type: missing.type, message: missing.message }, { type: 'not_found', message: 'Generation not found.' });
      assert.equal((await toolError(client, 'transform_image', { source: 'seed/logo.png', op: 'convert' })).type, 'invalid_request');
      assert.equal((await toolError(client, 'list_workflows', { limit: 0 })).type, 'invalid_request');
      await assert.rejects(client.callTool({ name: 'delete_everything', arguments: {} }), (e: any) => e.code === -32602);
    });

    test('bad arguments are worded as REST words them (`field: is required`), never a validator\'s own text', async () => {
      for (const [name, args, message] of [
        ['get_generation', {}, 'id: is required'],
        ['get_generation', { id: 7 }, 'id: must be a string'],
        ['list_workflows', { limit: 0 }, 'limit: must be at least 1'],
        ['list_workflows', { limit: 1.5 }, 'limit: must be a whole number'],
        ['transform_image', { op: 'trim' }, 'source: is required'],
        ['generate_code', { prompt: 'x', targetLanguage: 'cobol' }, null],
      ] as const) {
        const err = await toolError(client, name, args);
        assert.equal(err.type, 'invalid_request', `${name} ${JSON.stringify(args)}`);
        if (message) assert.equal(err.message, `Invalid arguments for ${name}: ${message}`);
        assert.doesNotMatch(err.message, /Invalid (key|type|length|value):|but received|must have required property|data\//, err.message);
      }
      // The same argument over REST: the same wording.
      const rest = await api(srv.base, alice.key, '/images/transforms', { body: { op: 'trim' } });
      assert.equal(rest.status, 400);
      assert.equal(rest.body.error.message, 'source: is required');
    });
  });
}

describe('ownership: another account\'s ids answer exactly like missing ones', () => {
  test('generation, workflow, run and stored image of another account', async () => {
    const bob = await createAccount(srv.db.sql);
    await link(srv.db.sql, srv.iss.issuer, 'bob', bob.id);
    const aliceClient = await connectV1(srv.mcpUrl, aliceToken);
    const bobClient = await connectV2(srv.mcpUrl, await srv.iss.sign({ sub: 'bob' }));
    try {
      const g = await waitGeneration(aliceClient, (await ok(aliceClient, 'generate_image', { prompt: 'mine' })).id);
      const wf = await saveWorkflow(srv, alice.id, GRAPH, 'alice only');
      const run = await ok(aliceClient, 'run_workflow', { workflowId: wf });

      const strip = (e: { type: string; message: string }) => ({ type: e.type, message: e.message });
      const ghost = crypto.randomUUID();
      assert.deepEqual(strip(await toolError(bobClient, 'get_generation', { id: g.id })), strip(await toolError(bobClient, 'get_generation', { id: ghost })));
      assert.deepEqual(strip(await toolError(bobClient, 'get_generation', { id: g.id })), { type: 'not_found', message: 'Generation not found.' });
      assert.deepEqual(strip(await toolError(bobClient, 'run_workflow', { workflowId: wf })), strip(await toolError(bobClient, 'run_workflow', { workflowId: ghost })));
      assert.equal((await toolError(bobClient, 'run_workflow', { workflowId: wf })).type, 'not_found');
      assert.deepEqual(
        strip(await toolError(bobClient, 'get_workflow_run', { workflowId: wf, runId: run.id })),
        strip(await toolError(bobClient, 'get_workflow_run', { workflowId: ghost, runId: ghost })),
      );
      const foreign = await toolError(bobClient, 'transform_image', { source: g.result.url, op: 'convert', options: { format: 'jpeg' } });
      assert.equal(foreign.type, 'not_found');
      assert.equal((await ok(bobClient, 'list_workflows')).data.length, 0);
      assert.deepEqual(strip(await toolError(bobClient, 'get_workflow', { id: wf })), strip(await toolError(bobClient, 'get_workflow', { id: ghost })));
      assert.deepEqual(strip(await toolError(bobClient, 'save_workflow', { id: wf, name: 'mine now', graph: GRAPH })), { type: 'not_found', message: 'Workflow not found.' });
      const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.workflow_runs where account_id = ${bob.id}`;
      assert.equal(n, 0);
    } finally {
      await aliceClient.close();
      await bobClient.close();
    }
  });
});

describe('budget, entitlement and Team workspace billing', () => {
  test('an exhausted budget and a blocked tier refuse generations and runs (insufficient_quota); nothing is queued', async () => {
    const broke = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 0 });
    const blocked = await createAccount(srv.db.sql, { tier: 'blocked' });
    for (const [sub, acct] of [['broke', broke], ['blocked', blocked]] as const) {
      await link(srv.db.sql, srv.iss.issuer, sub, acct.id);
      const client = await connectV1(srv.mcpUrl, await srv.iss.sign({ sub }));
      try {
        const e = await toolError(client, 'generate_image', { prompt: 'anything' });
        assert.equal(e.type, 'insufficient_quota', `${sub}: ${e.message}`);
        assert.equal((await toolError(client, 'generate_code', { prompt: 'anything' })).type, 'insufficient_quota');
        const wf = await saveWorkflow(srv, acct.id, GRAPH);
        assert.equal((await toolError(client, 'run_workflow', { workflowId: wf })).type, 'insufficient_quota');
        // Reads and free transforms still work.
        assert.equal((await ok(client, 'get_usage')).tier, sub === 'broke' ? 'pro' : 'blocked');
        assert.equal(typeof (await ok(client, 'transform_image', { source: 'seed/logo.png', op: 'trim' })).trimmed, 'boolean');
      } finally {
        await client.close();
      }
      const [{ g }] = await srv.db.sql`select count(*)::int as g from kiln_private.generations where account_id = ${acct.id}`;
      assert.equal(g, 0);
    }
  });

  test('an identity linked to a Team workspace bills the pool, re-checked on every call (payment_required when lapsed or left)', async () => {
    const owner = await createAccount(srv.db.sql);
    const dave = await createAccount(srv.db.sql, { tier: 'pro' });
    const [ws] = await srv.db.sql`select * from kiln.create_workspace('Studio', ${owner.id})`;
    await srv.db.sql`select kiln.add_workspace_member(${ws.id}, ${dave.id}, 'admin')`;
    await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', 5000000, true)`;
    await link(srv.db.sql, srv.iss.issuer, 'dave', dave.id, ws.id);
    const daveKey = (await createKey(srv.db.sql, dave.id, { workspaceId: ws.id })).key;
    const client = await connectV2(srv.mcpUrl, await srv.iss.sign({ sub: 'dave' }));
    try {
      const usage = await ok(client, 'get_usage');
      assert.deepEqual(usage, (await api(srv.base, daveKey, '/usage')).body, 'same body as a workspace-bound key');
      assert.equal(usage.scope, 'workspace');
      assert.equal(usage.workspace_id, ws.id);

      const g = await waitGeneration(client, (await ok(client, 'generate_image', { prompt: 'team art' })).id);
      assert.equal(g.status, 'completed');
      const [charge] = await srv.db.sql`select workspace_id, pool_id from kiln_private.charges where generation_id = ${g.id}`;
      assert.deepEqual({ ...charge }, { workspace_id: ws.id, pool_id: ws.id });
      assert.equal((await ok(client, 'get_usage')).workspace_used_micros, g.result.costMicros);
      assert.equal((await ok(client, 'get_usage')).used_micros, 0, 'the personal budget is untouched');

      await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'lapsed', null, false)`;
      const lapsed = await toolError(client, 'generate_image', { prompt: 'more' });
      assert.equal(lapsed.type, 'payment_required');
      // The workspace's workflow (an identity linked with a workspace reaches the workspace's workflows).
      const wf = await saveWorkflow(srv, dave.id, GRAPH, 'team', ws.id);
      assert.equal((await toolError(client, 'run_workflow', { workflowId: wf })).type, 'payment_required');
      assert.deepEqual(await ok(client, 'get_usage'), (await api(srv.base, daveKey, '/usage')).body);

      await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', null, false)`;
      await ok(client, 'generate_code', { prompt: 'ok again' });
      await srv.db.sql`select kiln.remove_workspace_member(${ws.id}, ${dave.id})`;
      const left = await toolError(client, 'generate_code', { prompt: 'after leaving' });
      assert.equal(left.type, 'payment_required', 'no fallback to the personal budget');
    } finally {
      await client.close();
    }
  });
});

describe('rate limits', () => {
  test('reads draw on a per-account MCP bucket; transforms on the account\'s transform bucket (shared with REST)', async () => {
    const limited = await startMcpServer({ iss: srv.iss, config: { readRpm: 3, transformRpm: 2 } });
    const a = await createAccount(limited.db.sql);
    const b = await createAccount(limited.db.sql);
    await link(limited.db.sql, srv.iss.issuer, 'alice', a.id);
    await link(limited.db.sql, srv.iss.issuer, 'bob', b.id);
    const key = (await createKey(limited.db.sql, a.id)).key;
    const ca = await connectV1(limited.mcpUrl, await srv.iss.sign({ sub: 'alice', audience: limited.mcpUrl }));
    const cb = await connectV1(limited.mcpUrl, await srv.iss.sign({ sub: 'bob', audience: limited.mcpUrl }));
    try {
      await ok(ca, 'get_usage');
      await ok(ca, 'list_models');
      await ok(ca, 'list_workflows');
      const limitedErr = await toolError(ca, 'get_generation', { id: crypto.randomUUID() });
      assert.equal(limitedErr.type, 'rate_limited');
      assert.match(limitedErr.message, /Retry after \d+ seconds?/);
      // Another account has its own bucket; the account's API key has its own read bucket.
      await ok(cb, 'get_usage');
      assert.equal((await api(limited.base, key, '/usage')).status, 200);
      // Starting generations has no rate bucket (bounded by budget and slots), as over REST.
      await ok(ca, 'generate_code', { prompt: 'still allowed' });

      await ok(ca, 'transform_image', { source: 'seed/logo.png', op: 'trim' });
      assert.equal((await api(limited.base, key, '/images/transforms', { body: { source: 'seed/logo.png', op: 'trim' } })).status, 200);
      const t = await toolError(ca, 'transform_image', { source: 'seed/logo.png', op: 'trim' });
      assert.equal(t.type, 'rate_limited', 'REST and MCP transforms share the account bucket');
      await ok(cb, 'transform_image', { source: 'seed/logo.png', op: 'trim' });
    } finally {
      await ca.close();
      await cb.close();
    }
  });
});

describe('identities and tokens', () => {
  test('an unlinked identity gets a tool error saying how to link; linking takes effect on the next call', async () => {
    const client = await connectV1(srv.mcpUrl, await srv.iss.sign({ sub: 'newcomer' }));
    try {
      assert.equal((await client.listTools()).tools.length, TOOLS.length, 'listing needs no account');
      const e = await toolError(client, 'get_usage');
      assert.equal(e.type, 'unauthorized');
      assert.match(e.message, new RegExp(`kiln identity link --user <USER_ID> --issuer ${srv.iss.issuer} --subject newcomer`));
      const acct = await createAccount(srv.db.sql);
      await link(srv.db.sql, srv.iss.issuer, 'newcomer', acct.id);
      assert.equal((await ok(client, 'get_usage')).tier, 'pro');
      await srv.db.sql`select kiln.unlink_identity(${srv.iss.issuer}, 'newcomer')`;
      assert.equal((await toolError(client, 'get_usage')).type, 'unauthorized');
    } finally {
      await client.close();
    }
  });

  test('auto-link by verified email only when enabled, and never on an unverified email', async () => {
    const acct = await createAccount(srv.db.sql, { email: `auto-${Date.now()}@example.test` });
    const verified = await srv.iss.sign({ sub: 'auto-1', claims: { email: acct.email.toUpperCase(), email_verified: true } });
    // Off by default.
    const off = await connectV1(srv.mcpUrl, verified);
    assert.equal((await toolError(off, 'get_usage')).type, 'unauthorized');
    await off.close();

    const on = await startMcpServer({ iss: srv.iss, config: { oidcAutoLinkEmail: true } });
    const [acct2] = await on.db.sql`select * from kiln.create_account(${acct.email}, 'pro', null, true)`;
    const unverified = await connectV1(on.mcpUrl, await srv.iss.sign({ sub: 'auto-2', audience: on.mcpUrl, claims: { email: acct.email, email_verified: false } }));
    assert.equal((await toolError(unverified, 'get_usage')).type, 'unauthorized');
    await unverified.close();
    const c = await connectV2(on.mcpUrl, await srv.iss.sign({ sub: 'auto-1', audience: on.mcpUrl, claims: { email: acct.email, email_verified: true } }));
    try {
      assert.equal((await ok(c, 'get_usage')).scope, 'personal');
      const [row] = await on.db.sql`select account_id, workspace_id from kiln_private.identities where issuer = ${srv.iss.issuer} and subject = 'auto-1'`;
      assert.deepEqual({ ...row }, { account_id: acct2.id, workspace_id: null });
    } finally {
      await c.close();
    }
  });

  test('MCP tokens are refused on /api/v1; API keys are refused on /mcp (401 + WWW-Authenticate)', async () => {
    const rest = await api(srv.base, aliceToken, '/usage');
    assert.equal(rest.status, 401);
    assert.equal(rest.body.error.type, 'unauthorized');
    const res = await fetch(srv.mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(res.status, 401);
    const params = extractWWWAuthenticateParams(res);
    assert.equal(params.resourceMetadataUrl?.href, `${srv.origin}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(params.error, 'invalid_token');
    assert.equal((await res.json()).error_description, 'API keys are not accepted here; use an OAuth token');
    // Anything else that is no token of the issuer's is still told so.
    const junk = await fetch(srv.mcpUrl, {
      method: 'POST',
      headers: { authorization: 'Bearer not.a.jwt', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(junk.status, 401);
    assert.equal((await junk.json()).error_description, 'malformed or unverifiable token');
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const doc = await (await fetch(srv.origin + path)).json();
      assert.deepEqual([doc.resource, doc.authorization_servers], [srv.mcpUrl, [srv.iss.issuer]]);
    }
  });

  test('the cached JWKS means no call to the issuer per request', async () => {
    const before = { ...srv.iss.hits };
    const client = await connectV2(srv.mcpUrl, aliceToken);
    try {
      for (let i = 0; i < 5; i++) await ok(client, 'get_usage');
    } finally {
      await client.close();
    }
    assert.deepEqual(srv.iss.hits, before, 'connect + 5 tool calls fetched neither discovery nor JWKS');
    assert.ok(before.jwks >= 1, 'the key set was fetched once, earlier');
    const [seen] = await srv.db.sql`select last_seen_at from kiln_private.identities where issuer = ${srv.iss.issuer} and subject = 'alice'`;
    assert.ok(seen.last_seen_at instanceof Date && Date.now() - seen.last_seen_at.getTime() < 120_000, 'last_seen_at is kept');
  });

  test('without OIDC_ISSUER (and no dev issuer) there is no MCP endpoint', async () => {
    const plain = await startServer({ config: { oidcIssuer: undefined, devIssuer: false } });
    const res = await fetch(`${plain.origin}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 404);
    assert.equal((await fetch(`${plain.origin}/.well-known/oauth-protected-resource`)).status, 404);
  });
});

describe('list_generations and get_daily_usage: the identity\'s own jobs and days, as REST renders them', () => {
  test('pages, filters and bad arguments; REST and MCP jobs apart; days equal GET /usage/daily and add up to get_usage', async () => {
    const carol = await createAccount(srv.db.sql, { tier: 'pro' });
    const carolKey = (await createKey(srv.db.sql, carol.id)).key;
    await link(srv.db.sql, srv.iss.issuer, 'carol', carol.id);
    const dave = await createAccount(srv.db.sql, { tier: 'pro' });
    await link(srv.db.sql, srv.iss.issuer, 'dave', dave.id);
    const client = await connectV2(srv.mcpUrl, await srv.iss.sign({ sub: 'carol' }));
    const daveClient = await connectV1(srv.mcpUrl, await srv.iss.sign({ sub: 'dave' }));
    try {
      const made: string[] = [];
      for (const prompt of ['one', 'two', 'three']) {
        const g = await ok(client, 'generate_code', { prompt, model: 'local/coder', waitSeconds: 30 });
        assert.equal(g.status, 'completed', JSON.stringify(g));
        made.push(g.id);
      }
      const image = await ok(client, 'generate_image', { prompt: 'four', model: 'local/sketch', waitSeconds: 30 });
      assert.equal(image.status, 'completed', JSON.stringify(image));
      made.push(image.id);
      const rest = await api(srv.base, carolKey, '/generations', { body: { type: 'code', prompt: 'over REST', model: 'local/coder' }, headers: { prefer: 'wait=30' } });
      assert.ok([200, 201, 202].includes(rest.status), JSON.stringify(rest.body));

      // Newest first, each item exactly get_generation's body; the REST job is not an MCP job.
      const all = await ok(client, 'list_generations');
      assert.deepEqual(all.data.map((g: any) => g.id), [...made].reverse());
      assert.equal(all.nextCursor, null);
      for (const g of all.data) assert.deepEqual(unsign(g), unsign(await ok(client, 'get_generation', { id: g.id })));
      const restList = (await api(srv.base, carolKey, '/generations')).body;
      assert.deepEqual(restList.data.map((g: any) => g.id), [rest.body.id], 'GET /generations lists the REST API\'s jobs only');

      // Pages of one follow nextCursor with no gaps or repeats.
      const paged: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await ok(client, 'list_generations', { limit: 1, ...(cursor ? { cursor } : {}) });
        assert.ok(page.data.length <= 1);
        paged.push(...page.data.map((g: any) => g.id));
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      assert.deepEqual(paged, [...made].reverse());

      const ids = async (args: Record<string, unknown>) => (await ok(client, 'list_generations', args)).data.map((g: any) => g.id);
      assert.deepEqual(await ids({ type: 'image' }), [image.id]);
      assert.deepEqual(await ids({ model: 'local/coder' }), made.slice(0, 3).reverse());
      assert.deepEqual(await ids({ status: ['failed', 'pending'] }), []);
      assert.deepEqual(await ids({ status: ['completed'], type: 'code' }), made.slice(0, 3).reverse());
      assert.deepEqual(await ids({ since: '2999-01-01' }), []);
      assert.deepEqual(await ids({ since: '2020-01-01T00:00:00Z' }), [...made].reverse());
      for (const [args, name] of [
        [{ limit: 0 }, 'limit'], [{ limit: 101 }, 'limit'], [{ status: ['done'] }, 'status'], [{ status: [] }, 'status'],
        [{ type: 'video' }, 'type'], [{ since: 'yesterday' }, 'since'], [{ model: '../x' }, 'model'], [{ cursor: 'not-a-cursor' }, 'cursor'],
      ] as const) {
        const e = await toolError(client, 'list_generations', args);
        assert.equal(e.type, 'invalid_request', JSON.stringify(args));
        assert.match(e.message, new RegExp(name), JSON.stringify(args));
      }
      // Another identity's list is its own: empty, even with carol's cursor.
      const firstPage = await ok(client, 'list_generations', { limit: 1 });
      assert.deepEqual((await ok(daveClient, 'list_generations')).data, []);
      assert.deepEqual((await ok(daveClient, 'list_generations', { cursor: firstPage.nextCursor })).data, []);

      // Daily usage: the REST body for the same billing scope, adding up to get_usage.
      const daily = await ok(client, 'get_daily_usage');
      assert.deepEqual(daily, (await api(srv.base, carolKey, '/usage/daily')).body);
      const usage = await ok(client, 'get_usage');
      assert.equal(daily.days.reduce((sum: number, d: any) => sum + d.spend_micros, 0), usage.used_micros);
      assert.equal(daily.days.reduce((sum: number, d: any) => sum + d.charges, 0), 5);
      const today = new Date().toISOString().slice(0, 10);
      assert.deepEqual(await ok(client, 'get_daily_usage', { from: today, to: today }), (await api(srv.base, carolKey, `/usage/daily?from=${today}&to=${today}`)).body);
      assert.equal((await toolError(client, 'get_daily_usage', { from: '2026-02-30' })).type, 'invalid_request');
      assert.equal((await toolError(client, 'get_daily_usage', { to: today })).type, 'invalid_request');
      assert.equal((await toolError(client, 'get_daily_usage', { from: '2020-01-01', to: '2026-01-01' })).type, 'invalid_request');
      assert.deepEqual((await ok(daveClient, 'get_daily_usage')).days, []);
    } finally {
      await client.close();
      await daveClient.close();
    }
  });
});
