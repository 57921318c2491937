// Workflow authoring through the typed client (`workflows.create/get/update/delete`) and the user
// CLI built on it (`kiln workflow save|get|rm`), against the real server: versions and If-Match,
// `KilnError.details` of a refused save, and the CLI's lines and exit codes.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { createKilnClient, KilnError, type KilnClient, type SaveWorkflowRequest } from 'kiln/client';
import { cli, tempDir } from './_cli.ts';
import { createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { EXAMPLES } from './_workflows.ts';

let srv: TestServer;
let key: string;
let client: KilnClient;

before(async () => {
  srv = await startServer();
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  key = (await createKey(srv.db.sql, a.id)).key;
  client = createKilnClient({ baseUrl: srv.origin, apiKey: key, retry: { maxAttempts: 1 } });
});

const graph = (prompt: string): SaveWorkflowRequest['graph'] => ({
  nodes: [
    { id: 'brief', kind: 'text', text: 'Autumn sale', position: { x: 0, y: 0 } },
    { id: 'p1', kind: 'prompt', output: 'code', prompt, model: 'local/coder' },
    { id: 'o1', kind: 'output', label: 'Landing' },
  ],
  edges: [{ from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }],
});

async function rejects(p: Promise<unknown>): Promise<KilnError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof KilnError, String(e));
    return e;
  }
  throw new Error('expected a KilnError');
}

test('client: create, get, update with a version (412 when stale), delete; a refused save carries details', async () => {
  const keys: Array<string | null> = [];
  const spy = createKilnClient({ baseUrl: `${srv.origin}/api/v1`, apiKey: key, fetch: (r) => { keys.push(r.headers.get('idempotency-key')); return fetch(r); } });
  const w = await spy.workflows.create({ name: 'Typed', graph: graph('A landing section') });
  assert.equal(w.version, 1);
  assert.match(keys[0] ?? '', /^[0-9a-f-]{36}$/, 'an automatic Idempotency-Key');
  assert.deepEqual(await client.workflows.get(w.id), w);

  const v2 = await client.workflows.update(w.id, { name: 'Typed v2', graph: graph('A hero') }, { version: 1 });
  assert.equal(v2.version, 2);
  const stale = await rejects(client.workflows.update(w.id, { name: 'lost', graph: graph('x') }, { version: 1 }));
  assert.deepEqual([stale.status, stale.type], [412, 'precondition_failed']);
  assert.equal((await client.workflows.update(w.id, { name: 'Typed v3', graph: graph('A footer') })).version, 3, 'no version: the last write wins');

  const bad = await rejects(client.workflows.create({ name: 'Bad', graph: { nodes: [{ id: 'p1', kind: 'prompt', output: 'image', prompt: 'x', model: 'local/coder' }], edges: [] } }));
  assert.deepEqual([bad.status, bad.type], [400, 'invalid_request']);
  assert.deepEqual(bad.details, [{ path: '/graph/nodes/0/model', message: 'node "p1": model "local/coder" is a text model and cannot produce image output' }]);

  assert.deepEqual([(await rejects(client.workflows.delete(w.id, { version: 2 }))).status], [412]);
  await client.workflows.delete(w.id, { version: 3 });
  const gone = await rejects(client.workflows.get(w.id));
  assert.deepEqual([gone.status, gone.type, gone.details], [404, 'not_found', []]);
  assert.ok(!(await client.workflows.list()).data.some((x) => x.id === w.id));
});

test('CLI: kiln workflow save (create, then --id replace), get, rm; a refused save lists every problem and exits 2', async () => {
  const env = { KILN_URL: srv.origin, KILN_API_KEY: key };
  const dir = tempDir();
  const file = path.join(EXAMPLES, 'landing-from-image.json');

  const created = await cli(['workflow', 'save', file], env);
  assert.equal(created.code, 0, created.stderr);
  const [line] = created.lines;
  assert.equal(line.event, 'saved');
  assert.equal(line.created, true);
  assert.equal(line.version, 1);
  assert.equal(line.name, JSON.parse(fs.readFileSync(file, 'utf8')).name, 'the file\'s name');

  // `get` prints the workflow; `save --id` takes that file back (name kept, graph edited).
  const got = await cli(['workflow', 'get', line.id], env);
  assert.equal(got.code, 0, got.stderr);
  const body = JSON.parse(got.stdout);
  assert.deepEqual(body, await client.workflows.get(line.id));
  body.graph.nodes[0].label = 'Edited in a file';
  const edited = path.join(dir, 'edited.json');
  fs.writeFileSync(edited, JSON.stringify(body));
  const replaced = await cli(['workflow', 'save', edited, '--id', line.id], env);
  assert.equal(replaced.code, 0, replaced.stderr);
  assert.deepEqual([replaced.lines[0].id, replaced.lines[0].version, replaced.lines[0].created, replaced.lines[0].name], [line.id, 2, false, line.name]);
  assert.equal((await client.workflows.get(line.id)).graph.nodes[0]!.label, 'Edited in a file');
  const renamed = await cli(['workflow', 'save', file, '--id', line.id, '--name', 'Renamed'], env);
  assert.equal(renamed.lines[0].name, 'Renamed');

  // A refused save: exit 2, the message, then one line per problem with its pointer.
  const bad = path.join(dir, 'bad.json');
  fs.writeFileSync(bad, JSON.stringify({ nodes: [{ id: 'a', kind: 'text', text: 'x' }, { id: 'a', kind: 'text', text: 'y' }], edges: [{ from: 'a', to: 'ghost' }] }));
  const refused = await cli(['workflow', 'save', bad, '--name', 'Bad'], env);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /^kiln workflow: invalid_request 400: node "a": duplicate id/);
  assert.match(refused.stderr, /\n {2}\/graph\/nodes\/1\/id: node "a": duplicate id \(nodes\[1\]\)\n {2}\/graph\/edges\/0\/to: edge 0 \(a → ghost\): "ghost" is not a node\n/);

  const removed = await cli(['workflow', 'rm', line.id], env);
  assert.equal(removed.code, 0, removed.stderr);
  assert.deepEqual(removed.lines, [{ event: 'deleted', id: line.id }]);
  const missing = await cli(['workflow', 'get', line.id], env);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /not_found 404/);
  assert.equal((await cli(['workflow', 'frobnicate'], env)).code, 2);
  assert.equal((await cli(['workflow', 'save'], env)).code, 2);
});
