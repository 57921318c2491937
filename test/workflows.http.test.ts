// Workflow endpoints over real HTTP with the local provider and a real worker: GET /workflows
// paging and ordering, POST run and GET run error statuses, the shipped examples running to
// completion (video → skipped, image + code + screen + design outputs) and write-back.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import sharp from 'sharp';
import { getWorkflow, replaceWorkflow } from '../src/workflows/authoring.ts';
import { startTestWorker } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { example, runCharges, saveWorkflow, startRun, waitRun } from './_workflows.ts';

let srv: TestServer;
let accountId: string;
let key: string;
let keyId: string;
let other: { id: string; key: string };

before(async () => {
  srv = await startServer();
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  accountId = a.id;
  ({ key, id: keyId } = await createKey(srv.db.sql, a.id));
  const b = await createAccount(srv.db.sql);
  other = { id: b.id, key: (await createKey(srv.db.sql, b.id)).key };
});

// WorkflowRun's fields plus the additive `retryOf` (issue #12).
const RUN_FIELDS = ['completedAt', 'createdAt', 'error', 'id', 'progress', 'results', 'retryOf', 'status', 'workflowId'];

test('GET /workflows: the caller\'s workflows, most recently updated first, paged; bad paging is 400', async () => {
  const acct = await createAccount(srv.db.sql);
  const k = (await createKey(srv.db.sql, acct.id, { scopes: ['read'] })).key;
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push(await saveWorkflow(srv, acct.id, example('product-teaser-video'), `wf ${i}`));
  await saveWorkflow(srv, other.id, example('product-teaser-video'), 'not yours');
  // An edit moves a workflow to the front.
  await replaceWorkflow(srv.db.sql, srv.ctx.config, { id: ids[1]!, graph: example('social-campaign'), name: 'edited' });
  const order = [ids[1], ids[4], ids[3], ids[2], ids[0]];

  const all = await api(srv.base, k, '/workflows');
  assert.equal(all.status, 200, JSON.stringify(all.body));
  assert.deepEqual(Object.keys(all.body), ['data']);
  assert.deepEqual(all.body.data.map((w: any) => w.id), order);
  assert.deepEqual(Object.keys(all.body.data[0]).sort(), ['id', 'name', 'updated_at']);
  assert.equal(all.body.data[0].name, 'edited');
  assert.match(all.body.data[0].updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(all.headers.get('cache-control'), 'no-store');

  const page = await api(srv.base, k, '/workflows?limit=2&offset=1');
  assert.deepEqual(page.body.data.map((w: any) => w.id), order.slice(1, 3));
  const tail = await api(srv.base, k, '/workflows?offset=4&limit=100');
  assert.deepEqual(tail.body.data.map((w: any) => w.id), order.slice(4));
  const past = await api(srv.base, k, '/workflows?offset=50');
  assert.deepEqual(past.body, { data: [] });

  for (const q of ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'limit=', 'limit=-1', 'offset=-1', 'offset=x', 'limit=1&limit=2']) {
    const bad = await api(srv.base, k, `/workflows?${q}`);
    assert.equal(bad.status, 400, q);
    assert.equal(bad.body.error.type, 'invalid_request', q);
    assert.match(bad.body.error.message, /^(limit|offset): /, q);
  }
  assert.equal((await api(srv.base, null, '/workflows?limit=0')).status, 401, 'auth is checked before the query');
  assert.equal((await api(srv.base, 'kiln_live_' + 'x'.repeat(40), '/workflows')).status, 401);
});

test('POST /workflows/{id}/runs: 202 {id, status}; 400 bad id or graph; 403 read key; 404 unknown or unowned; 429 no budget', async () => {
  const wf = await saveWorkflow(srv, accountId, example('product-teaser-video'));
  const res = await api(srv.base, key, `/workflows/${wf}/runs`, { method: 'POST' });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ['id', 'status']);
  assert.equal(res.body.status, 'pending');
  assert.match(res.headers.get('location')!, new RegExp(`/api/v1/workflows/${wf}/runs/${res.body.id}$`));

  assert.equal((await api(srv.base, key, '/workflows/not-a-uuid/runs', { method: 'POST' })).status, 400);
  const unknown = await api(srv.base, key, `/workflows/${crypto.randomUUID()}/runs`, { method: 'POST' });
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.error.type, 'not_found');
  assert.equal((await api(srv.base, other.key, `/workflows/${wf}/runs`, { method: 'POST' })).status, 404, "another account's workflow");
  const readKey = (await createKey(srv.db.sql, accountId, { scopes: ['read'] })).key;
  const scoped = await api(srv.base, readKey, `/workflows/${wf}/runs`, { method: 'POST' });
  assert.equal(scoped.status, 403);
  assert.equal(scoped.body.error.type, 'insufficient_scope');

  // A graph stored without validation (or invalid since: a model was disabled) is a 400, and nothing is created.
  const [bad] = await srv.db.sql`select id from kiln.create_workflow(${accountId}::uuid, null, 'broken', ${srv.db.sql.json({
    nodes: [{ id: 'p1', kind: 'prompt', output: 'image', prompt: 'x', model: 'local/coder' }, { id: 'o1', kind: 'output' }],
    edges: [{ from: 'p1', to: 'o1' }, { from: 'o1', to: 'ghost' }],
  })}::jsonb)`;
  const invalid = await api(srv.base, key, `/workflows/${bad.id}/runs`, { method: 'POST' });
  assert.equal(invalid.status, 400);
  assert.match(invalid.body.error.message, /^graph: .*edge 1 \(o1 → ghost\): "ghost" is not a node/);
  assert.match(invalid.body.error.message, /node "p1": model "local\/coder" is a text model and cannot produce image output/);
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.workflow_runs where workflow_id = ${bad.id}`;
  assert.equal(n, 0);

  const broke = await createAccount(srv.db.sql, { budgetMicros: 0 });
  const brokeKey = (await createKey(srv.db.sql, broke.id)).key;
  const brokeWf = await saveWorkflow(srv, broke.id, example('product-teaser-video'));
  const quota = await api(srv.base, brokeKey, `/workflows/${brokeWf}/runs`, { method: 'POST' });
  assert.equal(quota.status, 429);
  assert.equal(quota.body.error.type, 'insufficient_quota');
  await waitRun(srv, key, wf, res.body.id);
});

test('GET /workflows/{id}/runs/{runId}: 400 for malformed ids, 404 for unknown, foreign or mismatched runs', async () => {
  const wf = await saveWorkflow(srv, accountId, example('product-teaser-video'));
  const wf2 = await saveWorkflow(srv, accountId, example('product-teaser-video'));
  const run = await startRun(srv, key, wf);
  const ok = await api(srv.base, key, `/workflows/${wf}/runs/${run}`);
  assert.equal(ok.status, 200);
  assert.deepEqual(Object.keys(ok.body).sort(), RUN_FIELDS);
  assert.equal(ok.headers.get('cache-control'), 'no-store');

  const cases: Array<[string, string, number]> = [
    [key, `/workflows/nope/runs/${run}`, 400],
    [key, `/workflows/${wf}/runs/nope`, 400],
    [key, `/workflows/${wf}/runs/${crypto.randomUUID()}`, 404],
    [key, `/workflows/${wf2}/runs/${run}`, 404],
    [key, `/workflows/${crypto.randomUUID()}/runs/${run}`, 404],
    [other.key, `/workflows/${wf}/runs/${run}`, 404],
  ];
  for (const [k, path, status] of cases) {
    const res = await api(srv.base, k, path);
    assert.equal(res.status, status, path);
    assert.equal(res.body.error.type, status === 400 ? 'invalid_request' : 'not_found', path);
  }
  assert.equal((await api(srv.base, null, `/workflows/${wf}/runs/${run}`)).status, 401);
  await waitRun(srv, key, wf, run);
});

test('the video example: outputs in dependency order, the video output skipped, image and code results', async () => {
  const wf = await saveWorkflow(srv, accountId, example('product-teaser-video'));
  const run = await startRun(srv, key, wf);
  const done = await waitRun(srv, key, wf, run);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual(Object.keys(done).sort(), RUN_FIELDS);
  assert.equal(done.error, null);
  assert.deepEqual(done.progress, { total: 3, completed: 3 });
  assert.ok(Date.parse(done.completedAt) >= Date.parse(done.createdAt));
  const by = new Map(done.results.map((r: any) => [r.outputNodeId, r]));
  assert.deepEqual(by.get('teaser-out'), { promptNodeId: 'teaser', outputNodeId: 'teaser-out', type: 'video', status: 'skipped', label: 'Teaser video', platform: 'tiktok', costMicros: 0 });
  const board: any = by.get('storyboard-out');
  assert.equal(board.status, 'completed');
  assert.equal(board.type, 'code');
  assert.match(board.code, /storyboard/i);
  assert.ok(board.costMicros > 0);
  const thumb: any = by.get('thumbnail-out');
  assert.equal(thumb.type, 'image');
  assert.equal(thumb.mediaType, 'image/png');
  assert.equal(thumb.costMicros, 1000);
  assert.equal(thumb.platform, 'tiktok');
  const img = await fetch(thumb.url);
  assert.equal(img.status, 200);
  const meta = await sharp(Buffer.from(await img.arrayBuffer())).metadata();
  assert.ok(meta.height! > meta.width!, '9:16');
  // The thumbnail reads the storyboard: it settles after it.
  assert.ok(done.results.findIndex((r: any) => r.outputNodeId === 'thumbnail-out') > done.results.findIndex((r: any) => r.outputNodeId === 'storyboard-out'));

  const ledger = await runCharges(srv.db.sql, run);
  assert.deepEqual(ledger.map((c) => [c.node_id, c.status, c.origin, c.key_id]), [
    ['storyboard-out', 'settled', 'workflow', keyId],
    ['thumbnail-out', 'settled', 'workflow', keyId],
  ]);
});

test('a completed run writes its outputs back onto the saved workflow (export shows them)', async () => {
  const wf = await saveWorkflow(srv, accountId, example('landing-from-image'));
  const before = await getWorkflow(srv.db.sql, wf);
  const run = await startRun(srv, key, wf);
  const done = await waitRun(srv, key, wf, run);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual(done.results.map((r: any) => r.outputNodeId).sort(), ['badge-out', 'hero-out', 'landing', 'section-out']);
  const by = new Map<string, any>(done.results.map((r: any) => [r.outputNodeId, r]));
  assert.equal(by.get('landing').type, 'screen');
  assert.match(by.get('landing').code, /<!doctype html>/i);
  assert.equal(by.get('badge-out').type, 'design');
  assert.match(by.get('badge-out').code, /<svg/);
  assert.match(by.get('section-out').code, /export default/);

  const after = await getWorkflow(srv.db.sql, wf);
  assert.ok(after!.updated_at > before!.updated_at);
  const nodes = new Map<string, any>(after!.graph.nodes.map((n: any) => [n.id, n]));
  assert.equal(nodes.get('landing').result.type, 'screen');
  assert.equal(nodes.get('landing').result.code, by.get('landing').code);
  assert.equal(nodes.get('landing').result.runId, run);
  assert.match(nodes.get('hero-out').result.path, new RegExp(`^${accountId}/workflows/${run}/[0-9a-f-]{36}\\.png$`));
  assert.equal(nodes.get('hero').result, undefined, 'only output nodes receive results');
  // The written-back graph is still a valid graph that runs again.
  const again = await waitRun(srv, key, wf, await startRun(srv, key, wf));
  assert.equal(again.status, 'completed');
});

test('a graph without outputs completes at once; the three endpoints are in the OpenAPI document', async () => {
  const wf = await saveWorkflow(srv, accountId, { nodes: [{ id: 'note', kind: 'text', text: 'nothing to run' }], edges: [] });
  const run = await startRun(srv, key, wf);
  const done = await waitRun(srv, key, wf, run);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.progress, { total: 0, completed: 0 });
  assert.deepEqual(done.results, []);

  const doc = (await api(srv.base, null, '/openapi.json')).body;
  assert.equal(doc.paths['/workflows'].get.operationId, 'listWorkflows');
  assert.deepEqual(doc.paths['/workflows'].get.parameters.map((p: any) => [p.name, p.in, p.schema.minimum, p.schema.maximum]), [['limit', 'query', 1, 100], ['offset', 'query', 0, undefined]]);
  assert.equal(doc.paths['/workflows/{id}/runs'].post.responses['202'].content['application/json'].schema.$ref, '#/components/schemas/RunAccepted');
  assert.equal(doc.paths['/workflows/{id}/runs/{runId}'].get.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/WorkflowRun');
  assert.deepEqual(doc.components.schemas.WorkflowRun.required.sort(), RUN_FIELDS);
  assert.deepEqual(doc.components.schemas.WorkflowRunResult.required.sort(), ['outputNodeId', 'promptNodeId', 'status', 'type']);
});

test('a missing or another account\'s workflow is the same 404 at GET, PUT, DELETE and a run', async () => {
  const wf = await saveWorkflow(srv, accountId, example('product-teaser-video'));
  const graph = example('product-teaser-video');
  const answers = new Set<string>();
  for (const [k, id] of [[key, crypto.randomUUID()], [other.key, wf]] as const) {
    for (const [method, path, body] of [
      ['GET', `/workflows/${id}`], ['DELETE', `/workflows/${id}`], ['PUT', `/workflows/${id}`, { name: 'x', graph }], ['POST', `/workflows/${id}/runs`],
    ] as const) {
      const res = await api(srv.base, k, path, { method, ...(body ? { body } : {}) });
      assert.equal(res.status, 404, `${method} ${path}: ${JSON.stringify(res.body)}`);
      answers.add(JSON.stringify(res.body));
    }
  }
  assert.deepEqual([...answers], [JSON.stringify({ error: { type: 'not_found', message: 'Workflow not found.' } })]);
  // The workflow itself is untouched.
  assert.equal((await api(srv.base, key, `/workflows/${wf}`)).status, 200);
});
