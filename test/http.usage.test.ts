// GET /usage over HTTP: personal and workspace-bound keys, every field of the OpenAPI `Usage`.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
before(async () => {
  srv = await startServer();
});

test('a personal key sees its personal budget and null workspace fields', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id, { scopes: ['read'] });
  const res = await api(srv.base, key, '/usage');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.deepEqual(res.body, {
    ...res.body,
    tier: 'pro',
    token_budget_micros: 20_000_000,
    used_micros: 0,
    remaining_micros: 20_000_000,
    scope: 'personal',
    workspace_id: null,
    workspace_budget_micros: null,
    workspace_used_micros: null,
    workspace_remaining_micros: null,
    workspace_resets_at: null,
  });
  assert.equal(Object.keys(res.body).length, 14);
  assert.equal(res.body.key_budget_micros, null);
  assert.equal(res.body.key_used_micros, null);
  assert.equal(res.body.key_remaining_micros, null);
});

test('a workspace-bound key reports the Team pool, re-checked on every call', async () => {
  const owner = await createAccount(srv.db.sql);
  const admin = await createAccount(srv.db.sql);
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Studio', ${owner.id})`;
  await srv.db.sql`select kiln.add_workspace_member(${ws.id}, ${admin.id}, 'admin')`;
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', 5000000, true)`;
  const { key } = await createKey(srv.db.sql, admin.id, { workspaceId: ws.id });
  const res = await api(srv.base, key, '/usage');
  assert.equal(res.status, 200);
  assert.equal(res.body.scope, 'workspace');
  assert.equal(res.body.workspace_id, ws.id);
  assert.equal(res.body.workspace_budget_micros, 5_000_000);
  assert.equal(res.body.workspace_used_micros, 0);
  assert.equal(res.body.workspace_remaining_micros, 5_000_000);
  assert.ok(res.body.workspace_resets_at);
  assert.equal(res.body.token_budget_micros, 20_000_000, 'token_budget_micros is always the personal budget');

  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'lapsed', null, false)`;
  const lapsed = await api(srv.base, key, '/usage');
  assert.equal(lapsed.body.scope, 'workspace');
  assert.equal(lapsed.body.workspace_budget_micros, null);
  assert.equal(lapsed.body.workspace_used_micros, null);
});

test('only a workspace owner or admin may bind a key to it', async () => {
  const owner = await createAccount(srv.db.sql);
  const member = await createAccount(srv.db.sql);
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('W', ${owner.id})`;
  await srv.db.sql`select kiln.add_workspace_member(${ws.id}, ${member.id}, 'member')`;
  await assert.rejects(createKey(srv.db.sql, member.id, { workspaceId: ws.id }), (e: any) => e.code === 'KF001');
});
