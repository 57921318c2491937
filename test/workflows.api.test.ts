// Saving workflows over REST on the real server, worker and Postgres (issue 28): create, get,
// replace with a fresh and a stale If-Match, delete; isolation between accounts and workspaces;
// runs keep their snapshot across an edit and finish across a delete; every validation rule with
// `error.details`; idempotent create; workflow.saved / workflow.deleted on GET /events and to a
// webhook.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { startTestWorker } from './_generations.ts';
import { openSse } from './_live.ts';
import { errorReply, startOpenAIPeer, type OpenAIPeer, type PeerRequest } from './_openai-peer.ts';
import { api, createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';
import { startReceiver, verify } from './_webhooks.ts';
import { chatAfter, peerModels, userText, waitRun } from './_workflows.ts';

let srv: TestServer;
let peer: OpenAIPeer;
/** Prompts the peer was asked, by their STEP<…> marker. */
const seen = new Map<string, PeerRequest[]>();
/** Reply delay per step (ms). */
const delay: Record<string, number> = {};

before(async () => {
  peer = await startOpenAIPeer();
  onCleanup(() => peer.close());
  peer.script((req) => {
    const step = /STEP<([^>]+)>/.exec(userText(req))?.[1] ?? 'unknown';
    seen.set(step, [...(seen.get(step) ?? []), req]);
    if (step.startsWith('fail-')) return errorReply(400, 'invalid_request_error', 'content_policy', 'the upstream refused this prompt');
    return chatAfter(delay[step] ?? 5, `result-of-${step}`);
  });
  srv = await startServer({ config: { webhookAllowPrivate: true } });
  await peerModels(srv.db.sql, peer);
  await startTestWorker(srv);
});

async function account() {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  return { id: a.id, key };
}

const text = (id: string, t = `text of ${id}`) => ({ id, kind: 'text', text: t });
const prompt = (id: string, step: string, extra: object = {}) => ({ id, kind: 'prompt', output: 'code', model: 'peer/coder', prompt: `STEP<${step}>; make ${id}`, ...extra });
const out = (id: string, extra: object = {}) => ({ id, kind: 'output', ...extra });
const e = (from: string, to: string) => ({ from, to });
const graphOf = (step: string) => ({ nodes: [text('brief'), prompt('p1', step), out('o1', { label: 'Result' })], edges: [e('brief', 'p1'), e('p1', 'o1')] });

const post = (key: string, body: unknown, headers: Record<string, string> = {}) => api(srv.base, key, '/workflows', { method: 'POST', body, headers });
const put = (key: string, id: string, body: unknown, headers: Record<string, string> = {}) => api(srv.base, key, `/workflows/${id}`, { method: 'PUT', body, headers });
const get = (key: string, id: string) => api(srv.base, key, `/workflows/${id}`);
const del = (key: string, id: string, headers: Record<string, string> = {}) => api(srv.base, key, `/workflows/${id}`, { method: 'DELETE', headers });
const list = async (key: string) => ((await api(srv.base, key, '/workflows?limit=100')).body.data as Array<{ id: string }>).map((w) => w.id);

async function created(key: string, name: string, graph: unknown) {
  const res = await post(key, { name, graph });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; version: number; graph: any; name: string };
}

test('create, get, replace with a fresh and with a stale If-Match, then delete', async () => {
  const a = await account();
  const graph = { ...graphOf('crud-1'), nodes: [...graphOf('crud-1').nodes.map((n) => (n.id === 'p1' ? { ...n, position: { x: 120, y: 40 } } : n))] };
  const res = await post(a.key, { name: 'Launch', graph });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const w = res.body;
  assert.deepEqual(Object.keys(w).sort(), ['createdAt', 'graph', 'id', 'name', 'updatedAt', 'version']);
  assert.equal(w.name, 'Launch');
  assert.equal(w.version, 1);
  assert.deepEqual(w.graph, graph, 'the graph is stored as sent, unknown properties (canvas positions) included');
  assert.match(w.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(res.headers.get('etag'), '"1"');
  assert.equal(res.headers.get('location'), `${srv.base}/workflows/${w.id}`);

  const got = await get(a.key, w.id);
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, w);
  assert.equal(got.headers.get('etag'), '"1"');
  assert.equal(got.headers.get('cache-control'), 'no-store');
  assert.equal((await api(srv.base, a.key, `/workflows/${w.id.toUpperCase()}`)).status, 200, 'ids are case-insensitive');
  const head = await fetch(`${srv.base}/workflows/${w.id}`, { method: 'HEAD', headers: { authorization: `Bearer ${a.key}` } });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('etag'), '"1"');
  assert.ok((await list(a.key)).includes(w.id));

  // A fresh If-Match saves: version 2.
  const v2 = await put(a.key, w.id, { name: 'Launch v2', graph: graphOf('crud-2') }, { 'if-match': '"1"' });
  assert.equal(v2.status, 200, JSON.stringify(v2.body));
  assert.equal(v2.body.version, 2);
  assert.equal(v2.body.name, 'Launch v2');
  assert.equal(v2.body.createdAt, w.createdAt);
  assert.ok(v2.body.updatedAt > w.updatedAt);
  assert.equal(v2.headers.get('etag'), '"2"');

  // A stale one is refused, and nothing is written.
  const stale = await put(a.key, w.id, { name: 'Lost edit', graph: graphOf('crud-lost') }, { 'if-match': '"1"' });
  assert.equal(stale.status, 412);
  assert.equal(stale.body.error.type, 'precondition_failed');
  assert.match(stale.body.error.message, /changed since that version: it is now version 2/);
  assert.deepEqual((await get(a.key, w.id)).body, v2.body);
  // A weak tag never matches; a list matches any of its versions; "*" and no header: the last write wins.
  assert.equal((await put(a.key, w.id, { name: 'x', graph: graphOf('crud-x') }, { 'if-match': 'W/"2"' })).status, 412);
  const listed = await put(a.key, w.id, { name: 'Launch v3', graph: graphOf('crud-3') }, { 'if-match': '"7", "2"' });
  assert.equal(listed.body.version, 3);
  assert.equal((await put(a.key, w.id, { name: 'Launch v4', graph: graphOf('crud-4') }, { 'if-match': '*' })).body.version, 4);
  const last = await put(a.key, w.id, { name: 'Launch v5', graph: graphOf('crud-5') });
  assert.equal(last.body.version, 5);
  for (const bad of ['3', '"3" "4"', 'W/', '""x']) {
    const r = await put(a.key, w.id, { name: 'x', graph: graphOf('crud-x') }, { 'if-match': bad });
    assert.equal(r.status, 400, bad);
    assert.match(r.body.error.message, /^If-Match: /);
  }

  // Delete: a stale If-Match is refused; then the workflow is gone from every door.
  assert.equal((await del(a.key, w.id, { 'if-match': '"4"' })).status, 412);
  const gone = await del(a.key, w.id, { 'if-match': '"5"' });
  assert.equal(gone.status, 204);
  assert.equal(gone.body, '');
  for (const r of [await get(a.key, w.id), await put(a.key, w.id, { name: 'x', graph: graphOf('crud-x') }), await del(a.key, w.id),
    await api(srv.base, a.key, `/workflows/${w.id}/runs`, { method: 'POST' })]) {
    assert.equal(r.status, 404, JSON.stringify(r.body));
    assert.equal(r.body.error.type, 'not_found');
  }
  assert.ok(!(await list(a.key)).includes(w.id));

  // Scopes, ids and bodies.
  const readOnly = (await createKey(srv.db.sql, a.id, { scopes: ['read'] })).key;
  const other = await created(a.key, 'Other', graphOf('crud-other'));
  assert.equal((await get(readOnly, other.id)).status, 200);
  for (const r of [await post(readOnly, { name: 'n', graph: graphOf('x') }), await put(readOnly, other.id, { name: 'n', graph: graphOf('x') }), await del(readOnly, other.id)]) {
    assert.equal(r.status, 403);
    assert.equal(r.body.error.type, 'insufficient_scope');
  }
  assert.equal((await get(a.key, 'not-a-uuid')).status, 400);
  assert.equal((await get(a.key, '00000000-0000-4000-8000-000000000000')).status, 404);
  assert.equal((await api(srv.base, a.key, '/workflows', { method: 'POST', body: '{"name":', headers: { 'content-type': 'application/json' } })).status, 400);
  assert.equal((await api(srv.base, a.key, '/workflows', { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } })).status, 415);
  assert.equal((await api(srv.base, null, '/workflows', { method: 'POST', body: { name: 'n', graph: graphOf('x') } })).status, 401);
});

test('isolation: another account\'s or another scope\'s workflow is 404; a workspace\'s workflows are shared by its members; a workspace key still reaches its account\'s personal ones', async () => {
  const owner = await account();
  const stranger = await account();
  const member = await account();
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Team', ${owner.id}::uuid)`;
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}::uuid, 'active', 5000000, true)`;
  await srv.db.sql`select kiln.add_workspace_member(${ws.id}::uuid, ${member.id}::uuid, 'admin')`;
  const ownerWs = (await createKey(srv.db.sql, owner.id, { workspaceId: ws.id })).key;
  const memberWs = (await createKey(srv.db.sql, member.id, { workspaceId: ws.id })).key;

  const personal = await created(owner.key, 'Personal', graphOf('iso-personal'));
  const shared = await created(ownerWs, 'Shared', graphOf('iso-shared'));

  // Another account sees nothing of either.
  for (const id of [personal.id, shared.id]) {
    for (const r of [await get(stranger.key, id), await put(stranger.key, id, { name: 'x', graph: graphOf('x') }), await del(stranger.key, id),
      await api(srv.base, stranger.key, `/workflows/${id}/runs`, { method: 'POST' }), await api(srv.base, stranger.key, `/workflows/${id}/runs`)]) {
      assert.equal(r.status, 404, JSON.stringify(r.body));
      assert.equal(r.body.error.type, 'not_found');
    }
  }
  assert.deepEqual(await list(stranger.key), []);

  // The owner's personal key and its workspace key are two scopes; the workspace key still
  // reaches its own account's personal workflows, as every key of the account did before
  // workflows had scopes (v1 answers do not change), and saves into the workspace.
  assert.deepEqual(await list(owner.key), [personal.id]);
  assert.deepEqual(await list(ownerWs), [shared.id, personal.id]);
  assert.equal((await get(owner.key, shared.id)).status, 404);
  assert.equal((await get(ownerWs, personal.id)).status, 200);
  const personalRun = await api(srv.base, ownerWs, `/workflows/${personal.id}/runs`, { method: 'POST' });
  assert.equal(personalRun.status, 202, JSON.stringify(personalRun.body));
  assert.equal((await waitRun(srv, ownerWs, personal.id, personalRun.body.id)).status, 'completed');

  // Members of the workspace share its workflows: read, edit, run (billed to the pool); never
  // another member's personal ones.
  assert.deepEqual(await list(memberWs), [shared.id]);
  assert.equal((await get(memberWs, personal.id)).status, 404);
  assert.equal((await put(memberWs, personal.id, { name: 'x', graph: graphOf('x') })).status, 404);
  assert.equal((await get(memberWs, shared.id)).status, 200);
  const edited = await put(memberWs, shared.id, { name: 'Shared v2', graph: graphOf('iso-shared') }, { 'if-match': '"1"' });
  assert.equal(edited.status, 200, JSON.stringify(edited.body));
  const run = await api(srv.base, memberWs, `/workflows/${shared.id}/runs`, { method: 'POST' });
  assert.equal(run.status, 202, JSON.stringify(run.body));
  assert.equal((await waitRun(srv, memberWs, shared.id, run.body.id)).status, 'completed');
  const [c] = await srv.db.sql`select pool_id from kiln_private.charges where workflow_run_id = ${run.body.id}`;
  assert.equal(c.pool_id, ws.id);
  assert.deepEqual((await api(srv.base, memberWs, `/workflows/${shared.id}/runs`)).body.data.map((r: any) => r.id), [run.body.id]);

  // A member who left reaches none of it, and cannot save into it.
  await srv.db.sql`select kiln.remove_workspace_member(${ws.id}::uuid, ${member.id}::uuid)`;
  assert.equal((await get(memberWs, shared.id)).status, 404);
  assert.deepEqual(await list(memberWs), []);
  const refused = await post(memberWs, { name: 'x', graph: graphOf('x') });
  assert.equal(refused.status, 403, JSON.stringify(refused.body));
  assert.equal((await get(ownerWs, shared.id)).body.name, 'Shared v2');
});

test('a run started before an edit keeps its snapshot; a write-back does not change the version; a delete lets a run finish, readable by id', async () => {
  const a = await account();
  delay['snap-old'] = 400;
  const w = await created(a.key, 'Snap', { nodes: [prompt('p1', 'snap-old'), out('o1')], edges: [e('p1', 'o1')] });
  const run = (await api(srv.base, a.key, `/workflows/${w.id}/runs`, { method: 'POST' })).body.id;
  // Edited while the run is in flight: the run goes on with the graph it started from.
  const v2 = await put(a.key, w.id, { name: 'Snap', graph: { nodes: [prompt('p1', 'snap-new'), out('o1', { label: 'Edited' })], edges: [e('p1', 'o1')] } }, { 'if-match': '"1"' });
  assert.equal(v2.body.version, 2);
  const done = await waitRun(srv, a.key, w.id, run);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.results[0].code, 'result-of-snap-old');
  assert.equal(seen.get('snap-old')!.length, 1);
  assert.equal(seen.get('snap-new'), undefined, 'the edit did not run');

  // The run wrote its output back onto the edited graph: GET shows it, the version is still 2 …
  const after = await get(a.key, w.id);
  const o1 = after.body.graph.nodes.find((n: any) => n.id === 'o1');
  assert.equal(o1.result.code, 'result-of-snap-old');
  assert.equal(o1.label, 'Edited');
  assert.equal(after.body.version, 2);
  assert.equal(after.headers.get('etag'), '"2"');
  assert.ok(after.body.updatedAt > v2.body.updatedAt, 'a write-back is an update');
  // … so the client's If-Match for its own next edit still holds, and a save that leaves the
  // result out keeps it; `"result": null` removes it.
  const v3 = await put(a.key, w.id, { name: 'Snap v3', graph: { nodes: [prompt('p1', 'snap-new'), out('o1', { label: 'Kept' })], edges: [e('p1', 'o1')] } }, { 'if-match': '"2"' });
  assert.equal(v3.status, 200, JSON.stringify(v3.body));
  assert.equal(v3.body.graph.nodes[1].result.code, 'result-of-snap-old');
  const v4 = await put(a.key, w.id, { name: 'Snap v4', graph: { nodes: [prompt('p1', 'snap-new'), out('o1', { result: null })], edges: [e('p1', 'o1')] } });
  assert.equal(v4.body.graph.nodes[1].result, undefined);

  // Deleted during a run: the run finishes and stays readable by id; nothing new can start.
  delay['del-1'] = 500;
  const d = await created(a.key, 'Doomed', { nodes: [prompt('p1', 'del-1'), out('o1')], edges: [e('p1', 'o1')] });
  const r = (await api(srv.base, a.key, `/workflows/${d.id}/runs`, { method: 'POST' })).body.id;
  assert.equal((await del(a.key, d.id)).status, 204);
  const finished = await waitRun(srv, a.key, d.id, r);
  assert.equal(finished.status, 'completed');
  assert.equal(finished.results[0].code, 'result-of-del-1');
  assert.equal((await api(srv.base, a.key, `/workflows/${d.id}/runs/${r}/graph`)).status, 200);
  assert.deepEqual((await api(srv.base, a.key, `/workflows/${d.id}/runs`)).body.data.map((x: any) => x.id), [r]);
  assert.equal((await api(srv.base, a.key, `/workflows/${d.id}/runs`, { method: 'POST' })).status, 404);
  assert.equal((await get(a.key, d.id)).status, 404);
  const [row] = await srv.db.sql`select graph from kiln_private.workflows where id = ${d.id}`;
  assert.equal(row.graph.nodes[1].result, undefined, 'no write-back onto a deleted workflow');

  // A failed run of a deleted workflow stays readable, and cannot be retried (a retry is a new run).
  const f = await created(a.key, 'Failing', { nodes: [prompt('p1', 'fail-1'), out('o1')], edges: [e('p1', 'o1')] });
  const fr = (await api(srv.base, a.key, `/workflows/${f.id}/runs`, { method: 'POST' })).body.id;
  assert.equal((await waitRun(srv, a.key, f.id, fr)).status, 'failed');
  assert.equal((await del(a.key, f.id)).status, 204);
  const retry = await api(srv.base, a.key, `/workflows/${f.id}/runs/${fr}/retry`, { method: 'POST' });
  assert.equal(retry.status, 404, JSON.stringify(retry.body));
  assert.equal((await api(srv.base, a.key, `/workflows/${f.id}/runs/${fr}`)).body.status, 'failed');
});

test('every validation rule is a 400 invalid_request whose details point into the body; the message names the node or edge', async () => {
  const a = await account();
  const other = await account();
  const refused = async (body: unknown, want: Array<[string, RegExp]>, message?: RegExp) => {
    const res = await post(a.key, body);
    assert.equal(res.status, 400, JSON.stringify(body).slice(0, 200));
    assert.equal(res.body.error.type, 'invalid_request');
    const details: Array<{ path: string; message: string }> = res.body.error.details;
    assert.ok(Array.isArray(details), JSON.stringify(res.body));
    for (const [path, re] of want) {
      const hit = details.find((d) => d.path === path);
      assert.ok(hit, `no detail at ${path}: ${JSON.stringify(details)}`);
      assert.match(hit.message, re, path);
    }
    assert.equal(details.length, want.length, JSON.stringify(details));
    assert.match(res.body.error.message, message ?? want[0]![1]);
    return res.body.error;
  };
  const ok = (nodes: unknown[], edges: unknown[] = []) => ({ name: 'n', graph: { nodes, edges } });
  const p = (id: string, extra: object = {}) => ({ id, kind: 'prompt', output: 'code', prompt: 'x', ...extra });

  await refused(JSON.stringify('not an object'), [['', /the body must be a JSON object/]]);
  await refused([{ name: 'n' }], [['', /the body must be a JSON object/]]);
  await refused({ graph: graphOf('v') }, [['/name', /name: is required/]]);
  await refused({ name: '', graph: graphOf('v') }, [['/name', /1 to 200 characters/]]);
  await refused({ name: 'x'.repeat(201), graph: graphOf('v') }, [['/name', /1 to 200 characters/]]);
  await refused({ name: 7, graph: graphOf('v') }, [['/name', /must be a string/]]);
  await refused({ name: 'n' }, [['/graph', /the graph must be an object/]]);
  await refused({ name: 'n', graph: { nodes: {}, edges: 'x' } }, [['/graph/nodes', /nodes must be an array/], ['/graph/edges', /edges must be an array/]]);
  // Unique ids; edges between existing nodes; allowed kinds; no cycles.
  await refused(ok([text('a'), text('a')]), [['/graph/nodes/1/id', /node "a": duplicate id/]]);
  await refused(ok([text('a'), p('p1')], [e('a', 'p1'), e('a', 'ghost'), e('nobody', 'p1')]),
    [['/graph/edges/1/to', /edge 1 \(a → ghost\): "ghost" is not a node/], ['/graph/edges/2/from', /edge 2 \(nobody → p1\): "nobody" is not a node/]]);
  await refused(ok([p('p1'), out('o1'), p('p2'), out('o2')], [e('p1', 'o1'), e('o1', 'p2'), e('p2', 'o2'), e('o2', 'p1')]), [['/graph/edges/3', /^cycle: /]]);
  await refused(ok([p('p1'), p('p2')], [e('p1', 'p2')]), [['/graph/edges/0', /edge 0 \(p1 → p2\): a prompt node can only feed output nodes/]]);
  // Models that exist and fit their output type.
  await refused(ok([p('p1', { model: 'no/such-model' })]), [['/graph/nodes/0/model', /node "p1": model "no\/such-model" is not in the catalog/]]);
  await refused(ok([p('p1', { output: 'image', model: 'local/coder' })]), [['/graph/nodes/0/model', /node "p1": model "local\/coder" is a text model and cannot produce image output/]]);
  await refused(ok([p('p1', { output: 'gif' })]), [['/graph/nodes/0/output', /node "p1": output must be one of/]]);
  // Image node URLs the owner can read.
  await refused(ok([{ id: 'img', kind: 'image', url: `${other.id}/generations/0190a5e0-0000-7000-8000-000000000000.png` }]),
    [['/graph/nodes/0/url', /node "img": url names no image of yours in the store/]]);
  await refused(ok([{ id: 'img', kind: 'image', url: 'http://example.com/a.png' }]), [['/graph/nodes/0/url', /node "img": url must be an https:\/\/ URL/]]);
  for (const url of ['seed/logo.png', `${a.id}/generations/0190a5e0-0000-7000-8000-000000000000.png`, 'https://example.com/a.png', 'data:image/png;base64,iVBORw0KGgo=']) {
    assert.equal((await post(a.key, ok([{ id: 'img', kind: 'image', url }]))).status, 201, url);
  }
  // Limits: 200 nodes, 1,000 edges, 256 KB (past a limit nothing else is checked).
  const texts = (n: number) => Array.from({ length: n }, (_, i) => text(`t${i}`));
  assert.equal((await post(a.key, ok(texts(200)))).status, 201);
  await refused(ok(texts(201)), [['/graph/nodes', /at most 200 nodes, this one has 201/]]);
  await refused(ok([], Array.from({ length: 1001 }, () => e('a', 'b'))), [['/graph/edges', /at most 1000 edges/]]);
  await refused(ok(Array.from({ length: 6 }, (_, i) => text(`big${i}`, 'w'.repeat(45_000)))), [['/graph', /at most 256 KB of JSON/]]);
  // Every problem at once; the message names the first ones.
  const all = await refused({ name: '', graph: { nodes: [text('a'), p('p1', { model: 'nope' }), text('a'), out('o1')], edges: [e('p1', 'o1'), e('a', 'ghost')] } }, [
    ['/name', /name: /],
    ['/graph/nodes/2/id', /node "a": duplicate id/],
    ['/graph/edges/1/to', /"ghost" is not a node/],
    ['/graph/nodes/1/model', /node "p1": model "nope" is not in the catalog/],
  ], /^name: .*; node "a": duplicate id .*; edge 1 \(a → ghost\)/);
  assert.equal(all.details.length, 4);

  // A replace is checked alike and changes nothing when refused; nothing was created by the refusals.
  const w = await created(a.key, 'Valid', graphOf('val-1'));
  const bad = await put(a.key, w.id, ok([p('p1', { model: 'nope' })]));
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.body.error.details, [{ path: '/graph/nodes/0/model', message: 'node "p1": model "nope" is not in the catalog' }]);
  assert.equal((await get(a.key, w.id)).body.version, 1);
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.workflows where account_id = ${a.id}`;
  assert.equal(n, 6, 'the four images, the 200 texts and the valid one');
});

test('create honours Idempotency-Key: a retry answers the same workflow and creates nothing; another body is 422; a refusal keeps nothing', async () => {
  const a = await account();
  const body = { name: 'Once', graph: graphOf('idem-1') };
  const first = await post(a.key, body, { 'idempotency-key': 'wf-create-1' });
  assert.equal(first.status, 201);
  assert.equal(first.headers.get('idempotent-replayed'), null);
  // Another key of the account, the same body with its keys in another order: the same answer.
  const k2 = (await createKey(srv.db.sql, a.id)).key;
  const again = await post(k2, { graph: body.graph, name: body.name }, { 'idempotency-key': 'wf-create-1' });
  assert.equal(again.status, 201);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(again.body, first.body);
  assert.equal(again.headers.get('etag'), '"1"');
  assert.equal(again.headers.get('location'), first.headers.get('location'));
  const conflict = await post(a.key, { ...body, name: 'Twice' }, { 'idempotency-key': 'wf-create-1' });
  assert.equal(conflict.status, 422);
  assert.equal(conflict.body.error.type, 'idempotency_conflict');
  // Concurrent duplicates create one workflow.
  const burst = await Promise.all(Array.from({ length: 5 }, () => post(a.key, { name: 'Burst', graph: graphOf('idem-2') }, { 'idempotency-key': 'wf-burst' })));
  assert.deepEqual([...new Set(burst.map((r) => r.status))], [201]);
  assert.equal(new Set(burst.map((r) => r.body.id)).size, 1);
  // A refused create keeps nothing: the same key with a fixed body goes ahead.
  assert.equal((await post(a.key, { name: '', graph: graphOf('idem-3') }, { 'idempotency-key': 'wf-fixed' })).status, 400);
  assert.equal((await post(a.key, { name: 'Fixed', graph: graphOf('idem-3') }, { 'idempotency-key': 'wf-fixed' })).status, 201);
  assert.equal((await post(a.key, body, { 'idempotency-key': 'x'.repeat(256) })).status, 400);
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.workflows where account_id = ${a.id}`;
  assert.equal(n, 3);
  // Without a key, two requests are two workflows.
  assert.notEqual((await post(a.key, body)).body.id, (await post(a.key, body)).body.id);
});

test('workflow.saved and workflow.deleted reach GET /events and a webhook subscribed to them; a run\'s write-back is not a save', async () => {
  const a = await account();
  const rcv = await startReceiver();
  const hook = await api(srv.base, a.key, '/webhooks', { body: { url: rcv.url, events: ['workflow.saved', 'workflow.deleted'] } });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  const stream = await openSse(`${srv.base}/events`, { authorization: `Bearer ${a.key}` });
  assert.equal(stream.status, 200);

  const w = await created(a.key, 'Evented', graphOf('ev-1'));
  const v2 = (await put(a.key, w.id, { name: 'Evented v2', graph: graphOf('ev-1') })).body;
  const run = (await api(srv.base, a.key, `/workflows/${w.id}/runs`, { method: 'POST' })).body.id;
  await waitRun(srv, a.key, w.id, run);
  assert.equal((await del(a.key, w.id)).status, 204);

  const types = ['workflow.saved', 'workflow.saved', 'workflow_run.completed', 'workflow.deleted'];
  await stream.until(() => stream.events.length >= types.length);
  stream.abort();
  assert.deepEqual(stream.events.map((x) => x.event), types);
  const [saved1, saved2, , deleted] = stream.events.map((x) => JSON.parse(x.data));
  assert.deepEqual(Object.keys(saved1), ['type', 'timestamp', 'data']);
  assert.deepEqual(saved1.data, { id: w.id, name: 'Evented', version: 1, createdAt: saved1.data.createdAt, updatedAt: saved1.data.updatedAt, deletedAt: null });
  assert.deepEqual([saved2.data.version, saved2.data.name, saved2.data.updatedAt], [2, 'Evented v2', v2.updatedAt]);
  assert.equal(deleted.type, 'workflow.deleted');
  assert.deepEqual([deleted.data.id, deleted.data.version], [w.id, 2]);
  assert.match(deleted.data.deletedAt, /Z$/);

  // The webhook gets the same three messages, signed; not the run's event it did not subscribe to.
  const got = await rcv.wait(3);
  const secret = hook.body.secret;
  assert.deepEqual(got.map((d) => verify(secret, d).type), ['workflow.saved', 'workflow.saved', 'workflow.deleted']);
  assert.deepEqual(got.map((d) => d.json.data.version), [1, 2, 2]);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(rcv.got.length, 3);

  // Another scope's stream sees none of it.
  const b = await account();
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.events where scope_id = ${b.id}`;
  assert.equal(n, 0);
});
