// The admin routes (/api/v1/admin/…): only an admin with the admin scope gets in (every route
// checked from the route table), each write is audited under the admin's key, revoked keys get
// 401 at once, a disabled model leaves the catalog, and `kiln user set --admin` makes an admin.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { before, test } from 'node:test';
import { promisify } from 'node:util';
import { apiRoutes } from '../src/http/routes/index.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
let admin: { id: string; email: string };
let adminKey: { id: string; key: string };
let adminNoScope: { id: string; key: string };
let userKey: { id: string; key: string };

before(async () => {
  srv = await startServer();
  admin = await createAccount(srv.db.sql, { email: `admin-${Date.now()}@ops.test` });
  await srv.db.sql`select kiln.set_account_admin(${admin.id}, true)`;
  adminKey = await createKey(srv.db.sql, admin.id, { scopes: ['read', 'write', 'keys', 'admin'] });
  adminNoScope = await createKey(srv.db.sql, admin.id, { scopes: ['read', 'write', 'keys'] });
  const user = await createAccount(srv.db.sql);
  // A non-admin's key may carry the admin scope; it counts only for admins.
  userKey = await createKey(srv.db.sql, user.id, { scopes: ['read', 'write', 'keys', 'admin'] });
});

const adminRoutes = apiRoutes.filter((r) => r.path.startsWith('/admin'));

function sample(path: string) {
  return path.replace('/models/{id}', '/models/local%2Fsketch').replace('{id}', '00000000-0000-4000-8000-000000000000');
}

const bodies: Record<string, unknown> = { PATCH: { tier: 'pro' }, POST: undefined };

test('every admin route answers 403 to a non-admin, and to an admin key without the admin scope', async () => {
  assert.ok(adminRoutes.length >= 9, `admin routes: ${adminRoutes.map((r) => r.path).join(', ')}`);
  for (const r of adminRoutes) {
    assert.equal(r.scope, 'admin', `${r.method} ${r.path} needs the admin scope`);
    assert.equal(r.tag, 'admin');
    const body = r.method === 'PATCH' ? (r.path.startsWith('/admin/models') ? { enabled: true } : bodies.PATCH) : undefined;
    for (const [who, key] of [['non-admin', userKey.key], ['admin key without the admin scope', adminNoScope.key]] as const) {
      const res = await api(srv.base, key, sample(r.path), { method: r.method, body });
      assert.equal(res.status, 403, `${who}: ${r.method} ${r.path} → ${res.status} ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error.type, 'insufficient_scope');
      // The true reason: the user is not an admin, or the admin's key lacks the scope.
      assert.equal(res.body.error.message, who === 'non-admin'
        ? 'This account is not an admin: the admin scope counts only for admins.' : 'This API key lacks the "admin" scope.');
    }
    const anon = await api(srv.base, null, sample(r.path), { method: r.method, body });
    assert.equal(anon.status, 401, `${r.method} ${r.path} without a key`);
  }
});

test('an admin lists accounts by spend, searches by email and reads an account page (never a hash)', async () => {
  const tag = `acct${Date.now()}`;
  const a = await createAccount(srv.db.sql, { email: `${tag}-big@list.test` });
  const b = await createAccount(srv.db.sql, { email: `${tag}-small@list.test` });
  await srv.db.sql`select * from kiln.reserve_budget(${a.id}, null, null, 'local/sketch', 'api', 90000)`;
  await srv.db.sql`select * from kiln.reserve_budget(${b.id}, null, null, 'local/sketch', 'api', 10)`;
  const k = await createKey(srv.db.sql, a.id);

  const first = await api(srv.base, adminKey.key, '/admin/accounts?limit=1');
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.equal(first.body.data.length, 1);
  assert.ok(first.body.nextCursor);
  const second = await api(srv.base, adminKey.key, `/admin/accounts?limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`);
  assert.equal(second.status, 200);
  assert.notEqual(second.body.data[0].id, first.body.data[0].id);

  const found = await api(srv.base, adminKey.key, `/admin/accounts?q=${tag}`);
  assert.deepEqual(found.body.data.map((r: any) => [r.email, r.usedMicros, r.keyCount]), [[a.email, 90000, 1], [b.email, 10, 0]]);
  assert.equal(found.body.nextCursor, null);

  for (const bad of ['?limit=0', '?limit=500', '?cursor=nope', '?q=ab']) {
    const r = await api(srv.base, adminKey.key, `/admin/accounts${bad}`);
    assert.equal(r.status, 400, bad);
  }

  const page = await api(srv.base, adminKey.key, `/admin/accounts/${a.id}`);
  assert.equal(page.status, 200);
  assert.equal(page.body.email, a.email);
  assert.equal(page.body.usedMicros, 90000);
  assert.deepEqual(page.body.keys.map((x: any) => x.id), [k.id]);
  const text = JSON.stringify(page.body);
  assert.ok(!/hash|kiln_live_[0-9A-Za-z]{20}/.test(text), 'no hash or secret in the page');
  assert.equal((await api(srv.base, adminKey.key, '/admin/accounts/00000000-0000-4000-8000-000000000000')).status, 404);
  assert.equal((await api(srv.base, adminKey.key, '/admin/accounts/not-a-uuid')).status, 400);
});

test('PATCH an account writes exactly one audit entry naming the admin key, its address and request id', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'legacy_free' });
  const res = await api(srv.base, adminKey.key, `/admin/accounts/${a.id}`, {
    method: 'PATCH', body: { tier: 'enterprise', budgetMicros: 5_000_000 }, headers: { 'x-request-id': 'req-admin-patch-1' },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.tier, 'enterprise');
  assert.equal(res.body.budgetMicros, 5_000_000);
  const rows = await srv.db.sql`select * from kiln_private.audit_log where target_id = ${a.id} and action = 'account.updated'`;
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.actor_type, 'key');
  assert.equal(rows[0]!.actor_id, adminKey.id);
  assert.equal(rows[0]!.request_id, 'req-admin-patch-1');
  assert.equal(rows[0]!.scope_id, a.id, 'in the account\'s own audit log');
  assert.deepEqual(rows[0]!.details, { tier: { from: 'legacy_free', to: 'enterprise' }, budgetMicros: { from: 1000000, to: 5000000 } });
  assert.equal(rows[0]!.ip, '127.0.0.1');

  // Unlimited, then a bad body: 400 and no entry.
  const unl = await api(srv.base, adminKey.key, `/admin/accounts/${a.id}`, { method: 'PATCH', body: { budgetMicros: null } });
  assert.equal(unl.body.budgetMicros, null);
  for (const body of [{}, { tier: 'gold' }, { budgetMicros: -1 }]) {
    const r = await api(srv.base, adminKey.key, `/admin/accounts/${a.id}`, { method: 'PATCH', body });
    assert.equal(r.status, 400, JSON.stringify(body));
  }
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.audit_log where target_id = ${a.id} and action = 'account.updated'`;
  assert.equal(n, 2);
  assert.equal((await api(srv.base, adminKey.key, '/admin/accounts/00000000-0000-4000-8000-000000000000', { method: 'PATCH', body: { tier: 'pro' } })).status, 404);
});

test('revoke-keys: every key of the account gets 401 at once, one key.revoked entry each by the admin', async () => {
  const a = await createAccount(srv.db.sql);
  const k1 = await createKey(srv.db.sql, a.id);
  const k2 = await createKey(srv.db.sql, a.id, { scopes: ['read'] });
  assert.equal((await api(srv.base, k1.key, '/usage')).status, 200);
  const res = await api(srv.base, adminKey.key, `/admin/accounts/${a.id}/revoke-keys`, { method: 'POST' });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.revoked, 2);
  assert.equal(res.body.account.keyCount, 0);
  assert.ok(res.body.account.keys.every((k: any) => k.revokedAt));
  for (const k of [k1, k2]) assert.equal((await api(srv.base, k.key, '/usage')).status, 401);
  const rows = await srv.db.sql`select target_id, actor_type, actor_id from kiln_private.audit_log where scope_id = ${a.id} and action = 'key.revoked' order by target_id`;
  assert.deepEqual(rows.map((r) => r.target_id).sort(), [k1.id, k2.id].sort());
  assert.ok(rows.every((r) => r.actor_type === 'key' && r.actor_id === adminKey.id));
  const again = await api(srv.base, adminKey.key, `/admin/accounts/${a.id}/revoke-keys`, { method: 'POST' });
  assert.equal(again.body.revoked, 0);
});

test('an admin who loses the flag loses the routes at once, key and all', async () => {
  const other = await createAccount(srv.db.sql);
  await srv.db.sql`select kiln.set_account_admin(${other.id}, true)`;
  const k = await createKey(srv.db.sql, other.id, { scopes: ['read', 'admin'] });
  assert.equal((await api(srv.base, k.key, '/admin/health')).status, 200);
  await srv.db.sql`select kiln.set_account_admin(${other.id}, false)`;
  assert.equal((await api(srv.base, k.key, '/admin/health')).status, 403);
});

test('models: the whole catalog with cost and price; disabling one leaves GET /models and refuses generations, audited', async () => {
  const list = await api(srv.base, adminKey.key, '/admin/models');
  assert.equal(list.status, 200);
  const sketch = list.body.data.find((m: any) => m.id === 'local/sketch');
  assert.ok(sketch && sketch.enabled && typeof sketch.markup === 'number');
  assert.equal(sketch.batchMarkup, null, 'no batch markup: batch lines bill at the markup');
  assert.equal(sketch.batchPricing, null);
  assert.ok('cost' in sketch && 'pricing' in sketch);

  const warm = await api(srv.base, userKey.key, '/models');
  assert.ok(warm.body.data.some((m: any) => m.id === 'local/sketch'));
  const off = await api(srv.base, adminKey.key, '/admin/models/local%2Fsketch', { method: 'PATCH', body: { enabled: false } });
  assert.equal(off.status, 200, JSON.stringify(off.body));
  assert.equal(off.body.enabled, false);
  const pub = await api(srv.base, userKey.key, '/models');
  assert.ok(!pub.body.data.some((m: any) => m.id === 'local/sketch'), 'GET /models drops it at once (this process)');
  const all = await api(srv.base, adminKey.key, '/admin/models');
  assert.equal(all.body.data.find((m: any) => m.id === 'local/sketch').enabled, false, 'still in the admin list');
  const gen = await api(srv.base, userKey.key, '/generations', { body: { type: 'image', prompt: 'x', model: 'local/sketch' } });
  assert.equal(gen.status, 400, JSON.stringify(gen.body));

  const same = await api(srv.base, adminKey.key, '/admin/models/local%2Fsketch', { method: 'PATCH', body: { enabled: false } });
  assert.equal(same.status, 200);
  const on = await api(srv.base, adminKey.key, '/admin/models/local%2Fsketch', { method: 'PATCH', body: { enabled: true } });
  assert.equal(on.body.enabled, true);
  const audit = await srv.db.sql`select action, actor_id from kiln_private.audit_log where target_type = 'model' and target_id = 'local/sketch' order by id`;
  assert.deepEqual(audit.map((r) => r.action), ['model.disabled', 'model.enabled'], 'no entry for the no-op');
  assert.ok(audit.every((r) => r.actor_id === adminKey.id));
  assert.equal((await api(srv.base, adminKey.key, '/admin/models/nope%2Fnothing', { method: 'PATCH', body: { enabled: true } })).status, 404);
  assert.equal((await api(srv.base, adminKey.key, '/admin/models/local%2Fsketch', { method: 'PATCH', body: { enabled: 'no' } })).status, 400);
});

test('workspaces and members; health', async () => {
  const owner = await createAccount(srv.db.sql);
  const member = await createAccount(srv.db.sql);
  const [ws] = await srv.db.sql`select * from kiln.create_workspace(${`Team ${Date.now()}`}, ${owner.id})`;
  await srv.db.sql`select kiln.add_workspace_member(${ws!.id}, ${member.id}, 'member')`;
  const list = await api(srv.base, adminKey.key, '/admin/workspaces');
  assert.equal(list.status, 200);
  const row = list.body.data.find((w: any) => w.id === ws!.id);
  assert.equal(row.memberCount, 2);
  assert.equal(row.ownerEmail, owner.email);
  const one = await api(srv.base, adminKey.key, `/admin/workspaces/${ws!.id}`);
  assert.deepEqual(one.body.members.map((m: any) => [m.email, m.role]), [[owner.email, 'owner'], [member.email, 'member']]);
  assert.equal((await api(srv.base, adminKey.key, '/admin/workspaces/00000000-0000-4000-8000-000000000000')).status, 404);

  const h = await api(srv.base, adminKey.key, '/admin/health');
  assert.equal(h.status, 200, JSON.stringify(h.body));
  assert.ok(Array.isArray(h.body.providers));
  for (const k of ['jobs', 'ready', 'running', 'scheduled']) assert.equal(typeof h.body.queue[k], 'number');
  assert.equal(typeof h.body.webhooks.pending, 'number');
});

test('the typed client reaches the admin routes', async () => {
  const { createKilnClient, KilnError } = await import('../src/client/index.ts');
  const c = createKilnClient({ baseUrl: srv.origin, apiKey: adminKey.key });
  const page = await c.admin.accounts.list({ limit: '2' });
  assert.equal(page.data.length, 2);
  const m = await c.admin.models.update('local/coder', { enabled: true });
  assert.equal(m.id, 'local/coder');
  const u = createKilnClient({ baseUrl: srv.origin, apiKey: userKey.key });
  await assert.rejects(u.admin.health(), (e: unknown) => e instanceof KilnError && e.status === 403);
});

test('kiln user set --admin true|false (audited, actor the operator)', async () => {
  const a = await createAccount(srv.db.sql);
  const bin = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');
  const run = (args: string[]) => promisify(execFile)(process.execPath, [bin, ...args], {
    env: { ...process.env, DATABASE_URL: srv.db.url, KILN_LOG: 'silent' }, timeout: 60_000,
  });
  const on = JSON.parse((await run(['user', 'set', '--user', a.id, '--admin', 'true'])).stdout);
  assert.equal(on.admin, true);
  const [row] = await srv.db.sql`select actor_type, details from kiln_private.audit_log where target_id = ${a.id} and action = 'account.updated'`;
  assert.equal(row!.actor_type, 'operator');
  assert.deepEqual(row!.details, { admin: { from: false, to: true } });
  const off = JSON.parse((await run(['user', 'set', '--user', a.id, '--admin', 'false', '--tier', 'pro'])).stdout);
  assert.equal(off.admin, false);
  assert.equal(off.tier, 'pro');
  await assert.rejects(run(['user', 'set', '--user', a.id, '--admin', 'maybe']));
  await assert.rejects(run(['user', 'set', '--user', a.id]));
});
