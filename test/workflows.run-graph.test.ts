// GET /workflows/{id}/runs/{runId}/graph: the structure of a run's snapshot — the same after the
// workflow is edited, without prompt or text values, and nobody else's (404).

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { replaceWorkflow } from '../src/workflows/authoring.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { saveWorkflow, startRun } from './_workflows.ts';

let srv: TestServer;
let key: string;
let accountId: string;
let wf: string;

const GRAPH = {
  nodes: [
    { id: 'brief', kind: 'text', text: 'SECRET BRIEF TEXT' },
    { id: 'logo', kind: 'image', url: 'seed/logo.png' },
    { id: 'p1', kind: 'prompt', output: 'image', prompt: 'SECRET PROMPT', model: 'local/sketch', aspectRatio: '16:9' },
    { id: 'o1', kind: 'output', label: 'Hero', platform: 'instagram' },
    { id: 'p2', kind: 'prompt', output: 'code', prompt: 'another prompt', targetLanguage: 'tsx' },
    { id: 'o2', kind: 'output' },
  ],
  edges: [
    { from: 'brief', to: 'p1' }, { from: 'logo', to: 'p1' }, { from: 'p1', to: 'o1' },
    { from: 'o1', to: 'p2' }, { from: 'p2', to: 'o2' },
  ],
};

before(async () => {
  srv = await startServer();
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  accountId = a.id;
  key = (await createKey(srv.db.sql, a.id)).key;
  wf = await saveWorkflow(srv, a.id, GRAPH, 'graph test');
});

test('the graph of a run: nodes in saved order with their structure only, and the edges', async () => {
  const run = await startRun(srv, key, wf);
  const res = await api(srv.base, key, `/workflows/${wf}/runs/${run}/graph`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('cache-control'), 'private, max-age=3600');
  assert.deepEqual(res.body, {
    runId: run,
    workflowId: wf,
    nodes: [
      { id: 'brief', kind: 'text' },
      { id: 'logo', kind: 'image' },
      { id: 'p1', kind: 'prompt', output: 'image', model: 'local/sketch' },
      { id: 'o1', kind: 'output', label: 'Hero', platform: 'instagram' },
      { id: 'p2', kind: 'prompt', output: 'code' },
      { id: 'o2', kind: 'output' },
    ],
    edges: GRAPH.edges,
  });
  assert.doesNotMatch(JSON.stringify(res.body), /SECRET|seed\/logo/);

  // The snapshot, not the workflow as saved now.
  await replaceWorkflow(srv.db.sql, srv.ctx.config, {
    id: wf, name: null,
    graph: { nodes: [{ id: 'q', kind: 'prompt', output: 'code', prompt: 'x' }, { id: 'r', kind: 'output' }], edges: [{ from: 'q', to: 'r' }] },
  });
  const again = await api(srv.base, key, `/workflows/${wf}/runs/${run}/graph`);
  assert.deepEqual(again.body, res.body);
});

test('another account, an unknown run, or a run of another workflow: 404; bad ids: 400; no key: 401', async () => {
  const run = await startRun(srv, key, wf);
  const other = await createAccount(srv.db.sql, { tier: 'pro' });
  const otherKey = (await createKey(srv.db.sql, other.id)).key;
  const stranger = await api(srv.base, otherKey, `/workflows/${wf}/runs/${run}/graph`);
  assert.equal(stranger.status, 404);
  assert.equal(stranger.body.error.type, 'not_found');
  const wf2 = await saveWorkflow(srv, accountId, GRAPH, 'second');
  assert.equal((await api(srv.base, key, `/workflows/${wf2}/runs/${run}/graph`)).status, 404);
  assert.equal((await api(srv.base, key, `/workflows/${wf}/runs/00000000-0000-4000-8000-000000000000/graph`)).status, 404);
  const bad = await api(srv.base, key, `/workflows/${wf}/runs/nope/graph`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.type, 'invalid_request');
  assert.match(bad.body.error.message, /runId/);
  assert.equal((await api(srv.base, null, `/workflows/${wf}/runs/${run}/graph`)).status, 401);
});
