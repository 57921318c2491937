// A principal acts only within its own rights (issue 37): reading, rotating and revoking a key need
// every scope of it (403 forbidden, nothing changed, no secret shown); another account's key of the
// same billing scope is 404; a rotation ends every older secret but the one it replaces; GET /keys
// shows liveSecrets / graceEndsAt; a non-admin's admin-scoped credential is told the true reason;
// a workspace's webhook endpoint is changed only by its maker or an owner or admin.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateSessionSecret } from '../src/auth/secrets.ts';
import { api, createAccount, createKey, startServer } from './_setup.ts';

const srv = await startServer({ config: { webhookAllowPrivate: true } });
const sql = srv.db.sql;

async function admin() {
  const a = await createAccount(sql);
  await sql`select kiln.set_account_admin(${a.id}, true)`;
  return a;
}

/** A console session of the account (optionally acting in a workspace): its cookie header. */
async function session(accountId: string, workspaceId: string | null = null) {
  const { secret, hash, displayPrefix } = generateSessionSecret();
  const [{ id }] = await sql`select kiln.create_session(${accountId}::uuid, ${hash}::bytea, ${displayPrefix}::text, 3600, 86400, 'test') as id`;
  if (workspaceId) await sql`update kiln_private.api_keys set workspace_id = ${workspaceId}::uuid where id = ${id}::uuid`;
  return { cookie: `kiln_session=${secret}`, origin: srv.origin };
}

async function asSession(s: { cookie: string; origin: string }, path: string, init: { method?: string; body?: unknown } = {}) {
  return api(srv.base, null, path, { ...init, headers: { cookie: s.cookie, origin: s.origin } });
}

async function keyRow(id: string) {
  const [k] = await sql`select key_hash, revoked_at, (select count(*)::int from kiln_private.api_key_grace g where g.key_id = k.id) as grace
    from kiln_private.api_keys k where id = ${id}::uuid`;
  return k;
}

async function auditCount(keyId: string, action: string) {
  const [{ n }] = await sql`select count(*)::int as n from kiln_private.audit_log where target_id = ${keyId} and action = ${action}`;
  return n as number;
}

test('issue 37: a read,keys key can neither read, rotate nor revoke its account\'s admin key; nothing changes and no secret is shown', async () => {
  const a = await admin();
  const adminKey = await createKey(sql, a.id, { scopes: ['read', 'write', 'keys', 'admin'] });
  const weak = await createKey(sql, a.id, { scopes: ['read', 'keys'] });
  assert.equal((await api(srv.base, adminKey.key, '/admin/accounts?q=exa')).status, 200, 'the admin key works');
  const before = await keyRow(adminKey.id);

  for (const [method, path, body] of [
    ['POST', `/keys/${adminKey.id}/rotate`, { graceSeconds: 600 }],
    ['POST', `/keys/${adminKey.id}/rotate`, { graceSeconds: 0 }],
    ['DELETE', `/keys/${adminKey.id}`, undefined],
    ['GET', `/keys/${adminKey.id}`, undefined],
  ] as const) {
    const r = await api(srv.base, weak.key, path, { method, body });
    assert.equal(r.status, 403, `${method} ${path}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.type, 'forbidden');
    assert.match(r.body.error.message, /admin, write/);
    assert.ok(!JSON.stringify(r.body).includes('kiln_live_'), 'no secret in the answer');
    assert.equal(r.body.key, undefined);
  }
  const after = await keyRow(adminKey.id);
  assert.deepEqual(after, before, 'the key row and its grace are untouched');
  assert.equal(await auditCount(adminKey.id, 'key.rotated'), 0);
  assert.equal(await auditCount(adminKey.id, 'key.revoked'), 0);
  assert.equal((await api(srv.base, adminKey.key, '/admin/accounts?q=exa')).status, 200, 'the victim\'s secret still works');

  // The list shows the stronger key (people need to see which keys exist), never a secret.
  const list = await api(srv.base, weak.key, '/keys');
  assert.equal(list.status, 200);
  const entry = list.body.data.find((k: any) => k.id === adminKey.id);
  assert.deepEqual(entry.scopes, ['read', 'write', 'keys', 'admin']);
  assert.equal(entry.liveSecrets, 1);
  assert.ok(!JSON.stringify(list.body).includes(adminKey.key) && !JSON.stringify(list.body).includes(weak.key));
  assert.ok(!Object.keys(entry).some((f) => /hash|secret$|^key$/i.test(f)), Object.keys(entry).join(','));

  // Within its rights it still works: itself, and a key whose scopes it holds.
  const own = await api(srv.base, weak.key, `/keys/${weak.id}`);
  assert.equal(own.status, 200);
  assert.deepEqual(own.body, { ...list.body.data.find((k: any) => k.id === weak.id), lastUsedAt: own.body.lastUsedAt });
  const readOnly = await createKey(sql, a.id, { scopes: ['read'] });
  const rot = await api(srv.base, weak.key, `/keys/${readOnly.id}/rotate`, { body: { graceSeconds: 0 } });
  assert.equal(rot.status, 201);
  assert.equal((await api(srv.base, weak.key, `/keys/${readOnly.id}`, { method: 'DELETE' })).status, 200);
  // A read,write key is stronger too (write).
  const rw = await createKey(sql, a.id, { scopes: ['read', 'write'] });
  const denied = await api(srv.base, weak.key, `/keys/${rw.id}`, { method: 'DELETE' });
  assert.equal(denied.status, 403);
  assert.match(denied.body.error.message, /\(write\)/);
  assert.equal((await keyRow(rw.id)).revoked_at, null);
});

test('a refused rotation of a revoked stronger key says 403, not 409 (its state is not told)', async () => {
  const a = await createAccount(sql);
  const strong = await createKey(sql, a.id, { scopes: ['read', 'write', 'keys'] });
  const weak = await createKey(sql, a.id, { scopes: ['keys'] });
  await sql`select kiln.revoke_api_key(${strong.id}::uuid)`;
  const r = await api(srv.base, weak.key, `/keys/${strong.id}/rotate`, { body: {} });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.type, 'forbidden');
});

test('sessions count with their own scopes: an admin\'s session manages the admin key; a non-admin\'s does not', async () => {
  const a = await admin();
  const adminKey = await createKey(sql, a.id, { scopes: ['read', 'write', 'keys', 'admin'] });
  const s = await session(a.id);
  const got = await asSession(s, `/keys/${adminKey.id}`);
  assert.equal(got.status, 200);
  assert.equal(got.body.id, adminKey.id);
  const rot = await asSession(s, `/keys/${adminKey.id}/rotate`, { body: { graceSeconds: 0 } });
  assert.equal(rot.status, 201);
  assert.equal((await api(srv.base, rot.body.key, '/admin/accounts?q=exa')).status, 200);

  // A non-admin's session carries admin in name only: a key given admin by the operator is beyond it.
  const u = await createAccount(sql);
  const opKey = await createKey(sql, u.id, { scopes: ['read', 'admin'] });
  const plain = await createKey(sql, u.id, { scopes: ['read', 'write', 'keys'] });
  const us = await session(u.id);
  const refused = await asSession(us, `/keys/${opKey.id}/rotate`, { body: {} });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.type, 'forbidden');
  assert.match(refused.body.error.message, /\(admin\)/);
  const ok = await asSession(us, `/keys/${plain.id}/rotate`, { body: {} });
  assert.equal(ok.status, 201);
});

test('same workspace, another account\'s key: 404 for a plain member; 403 for a weaker workspace admin', async () => {
  const own = await createAccount(sql);
  const adm = await createAccount(sql);
  const mem = await createAccount(sql);
  const [ws] = await sql`select * from kiln.create_workspace('Rights', ${own.id})`;
  await sql`select kiln.add_workspace_member(${ws.id}, ${adm.id}, 'admin')`;
  await sql`select kiln.add_workspace_member(${ws.id}, ${mem.id}, 'member')`;
  await sql`select kiln.set_workspace_plan(${ws.id}, 'active', 10000000, true)`;
  const ownerKey = await createKey(sql, own.id, { scopes: ['read', 'write', 'keys'], workspaceId: ws.id });
  const admKey = await createKey(sql, adm.id, { scopes: ['read', 'keys'], workspaceId: ws.id });
  const memSession = await session(mem.id, ws.id);
  const missing = await asSession(memSession, '/keys/00000000-0000-4000-8000-000000000000');
  for (const [method, path, body] of [
    ['GET', `/keys/${ownerKey.id}`, undefined],
    ['POST', `/keys/${ownerKey.id}/rotate`, {}],
    ['DELETE', `/keys/${ownerKey.id}`, undefined],
  ] as const) {
    const r = await asSession(memSession, path, { method, body });
    assert.equal(r.status, 404, `member ${method} ${path}`);
    assert.deepEqual(r.body, missing.body, 'exactly like a missing key');
    const w = await api(srv.base, admKey.key, path, { method, body });
    assert.equal(w.status, 403, `weaker admin ${method} ${path}`);
    assert.equal(w.body.error.type, 'forbidden');
  }
  const list = await asSession(memSession, '/keys');
  assert.ok(!list.body.data.some((k: any) => k.id === ownerKey.id), 'a member lists only their own');
  assert.equal((await api(srv.base, ownerKey.key, '/usage')).status, 200, 'the owner\'s key still works');
  assert.equal(await auditCount(ownerKey.id, 'key.rotated') + await auditCount(ownerKey.id, 'key.revoked'), 0);
  // Another account's key in another scope is 404 too (unchanged).
  const other = await createKey(sql, (await createAccount(sql)).id, { scopes: ['read'] });
  assert.equal((await api(srv.base, admKey.key, `/keys/${other.id}`)).status, 404);
});

test('rotation chain: grace 600 then grace 0 leaves only the newest secret; both rotations are audited', async () => {
  const a = await createAccount(sql);
  const mgr = await createKey(sql, a.id, { scopes: ['read', 'write', 'keys'] });
  const first = (await api(srv.base, mgr.key, '/keys', { body: { name: 'chain', scopes: ['read'] } })).body;
  assert.equal(first.liveSecrets, 1);
  assert.equal(first.graceEndsAt, null);
  const second = await api(srv.base, mgr.key, `/keys/${first.id}/rotate`, { body: { graceSeconds: 600 } });
  assert.equal(second.status, 201);
  assert.equal(second.body.liveSecrets, 2);
  const ends = Date.parse(second.body.graceEndsAt);
  assert.ok(Math.abs(ends - (Date.now() + 600_000)) < 5000, second.body.graceEndsAt);
  const got = await api(srv.base, mgr.key, `/keys/${first.id}`);
  assert.equal(got.body.liveSecrets, 2);
  assert.equal(got.body.graceEndsAt, second.body.graceEndsAt);
  assert.equal((await api(srv.base, first.key, '/usage')).status, 200, 'the first works in its grace');

  const third = await api(srv.base, mgr.key, `/keys/${first.id}/rotate`, { body: { graceSeconds: 0 } });
  assert.equal(third.status, 201);
  assert.equal(third.body.liveSecrets, 1);
  assert.equal(third.body.graceEndsAt, null);
  assert.equal((await api(srv.base, first.key, '/usage')).status, 401, 'the first secret ended');
  assert.equal((await api(srv.base, second.body.key, '/usage')).status, 401, 'the second secret ended');
  assert.equal((await api(srv.base, third.body.key, '/usage')).status, 200);
  const listed = (await api(srv.base, mgr.key, '/keys')).body.data.find((k: any) => k.id === first.id);
  assert.equal(listed.liveSecrets, 1);
  assert.equal(listed.graceEndsAt, null);

  const audit = await api(srv.base, mgr.key, '/audit?action=key.rotated');
  const mine = audit.body.data.filter((e: any) => e.target.id === first.id);
  assert.equal(mine.length, 2, 'both rotations are in the audit log');
  assert.deepEqual(mine.map((e: any) => e.actor), [{ type: 'key', id: mgr.id }, { type: 'key', id: mgr.id }]);

  const revoked = await api(srv.base, mgr.key, `/keys/${first.id}`, { method: 'DELETE' });
  assert.equal(revoked.body.liveSecrets, 0);
  assert.equal(revoked.body.graceEndsAt, null);
});

test('rotation chain: three rotations with grace 600 each leave exactly the newest and the one it replaced', async () => {
  const a = await createAccount(sql);
  const mgr = await createKey(sql, a.id, { scopes: ['read', 'write', 'keys'] });
  const made = (await api(srv.base, mgr.key, '/keys', { body: { name: 'chain3', scopes: ['read'] } })).body;
  const secrets = [made.key as string];
  for (let i = 0; i < 3; i++) {
    const r = await api(srv.base, mgr.key, `/keys/${made.id}/rotate`, { body: { graceSeconds: 600 } });
    assert.equal(r.status, 201);
    assert.equal(r.body.liveSecrets, 2, `after rotation ${i + 1}`);
    secrets.push(r.body.key);
  }
  const statuses = [];
  for (const s of secrets) statuses.push((await api(srv.base, s, '/usage')).status);
  assert.deepEqual(statuses, [401, 401, 200, 200]);
  const [{ n }] = await sql`select count(*)::int as n from kiln_private.api_key_grace where key_id = ${made.id}::uuid`;
  assert.equal(n, 1, 'one older secret kept');
  const entry = (await api(srv.base, mgr.key, '/keys')).body.data.find((k: any) => k.id === made.id);
  assert.equal(entry.liveSecrets, 2);
  assert.ok(Math.abs(Date.parse(entry.graceEndsAt) - (Date.now() + 600_000)) < 5000, entry.graceEndsAt);
});

test('an expired key lists 0 live secrets, and its grace does not count', async () => {
  const a = await createAccount(sql);
  const mgr = await createKey(sql, a.id, { scopes: ['read', 'keys'] });
  const made = (await api(srv.base, mgr.key, '/keys', { body: { name: 'soon', scopes: ['read'], expiresAt: new Date(Date.now() + 60_000).toISOString() } })).body;
  await api(srv.base, mgr.key, `/keys/${made.id}/rotate`, { body: { graceSeconds: 600 } });
  await sql`update kiln_private.api_keys set expires_at = now() - interval '1 second' where id = ${made.id}::uuid`;
  const got = await api(srv.base, mgr.key, `/keys/${made.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual([got.body.liveSecrets, got.body.graceEndsAt], [0, null]);
});

test('the admin routes tell the true reason: a non-admin\'s admin-scoped key or session is "not an admin"', async () => {
  const u = await createAccount(sql);
  const userAdminKey = await createKey(sql, u.id, { scopes: ['read', 'admin'] });
  const r = await api(srv.base, userAdminKey.key, '/admin/accounts?q=exa');
  assert.equal(r.status, 403);
  assert.equal(r.body.error.message, 'This account is not an admin: the admin scope counts only for admins.');
  assert.doesNotMatch(r.body.error.message, /lacks/);
  const s = await session(u.id);
  const viaSession = await asSession(s, '/admin/health');
  assert.equal(viaSession.status, 403);
  assert.match(viaSession.body.error.message, /not an admin/);
  // An admin's key without the scope still lacks the scope; a non-admin's key without it too.
  const a = await admin();
  const noScope = await createKey(sql, a.id, { scopes: ['read'] });
  const n = await api(srv.base, noScope.key, '/admin/accounts?q=exa');
  assert.equal(n.status, 403);
  assert.equal(n.body.error.message, 'This API key lacks the "admin" scope.');
  const plain = await createKey(sql, u.id, { scopes: ['read'] });
  assert.match((await api(srv.base, plain.key, '/admin/health')).body.error.message, /lacks the "admin" scope/);
  // The write path's own check says the same.
  await assert.rejects(sql`select kiln.admin_revoke_account_keys(${u.id}::uuid, ${u.id}::uuid)`,
    (e: any) => e.code === 'KF001' && /not an admin/.test(e.message));
});

test('webhooks: a plain member cannot change, delete or take the secret of another\'s workspace endpoint; its maker and admins can', async () => {
  const own = await createAccount(sql);
  const adm = await createAccount(sql);
  const mem = await createAccount(sql);
  const [ws] = await sql`select * from kiln.create_workspace('Hooks', ${own.id})`;
  await sql`select kiln.add_workspace_member(${ws.id}, ${adm.id}, 'admin')`;
  await sql`select kiln.add_workspace_member(${ws.id}, ${mem.id}, 'member')`;
  await sql`select kiln.set_workspace_plan(${ws.id}, 'active', 10000000, true)`;
  const ownerKey = await createKey(sql, own.id, { scopes: ['read', 'write'], workspaceId: ws.id });
  const hook = await api(srv.base, ownerKey.key, '/webhooks', { body: { url: 'http://127.0.0.1:9/owner' } });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  const [before] = await sql`select url, secret_enc, old_secret_enc from kiln_private.webhook_endpoints where id = ${hook.body.id}::uuid`;
  const memSession = await session(mem.id, ws.id);

  assert.equal((await asSession(memSession, `/webhooks/${hook.body.id}`)).status, 200, 'members still read the scope\'s endpoints');
  for (const [method, path, body] of [
    ['PATCH', `/webhooks/${hook.body.id}`, { url: 'http://127.0.0.1:9/thief' }],
    ['POST', `/webhooks/${hook.body.id}/rotate-secret`, undefined],
    ['DELETE', `/webhooks/${hook.body.id}`, undefined],
  ] as const) {
    const r = await asSession(memSession, path, { method, body });
    assert.equal(r.status, 403, `${method} ${path}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.type, 'forbidden');
    assert.ok(!JSON.stringify(r.body).includes('whsec_'), 'no secret');
  }
  const [after] = await sql`select url, secret_enc, old_secret_enc from kiln_private.webhook_endpoints where id = ${hook.body.id}::uuid`;
  assert.deepEqual(after, before, 'the endpoint is unchanged');
  const [{ n }] = await sql`select count(*)::int as n from kiln_private.audit_log where target_id = ${hook.body.id} and action <> 'webhook.created'`;
  assert.equal(n, 0, 'no change was audited');

  // The member's own endpoint is theirs to manage; a workspace admin manages the owner's.
  const mine = await asSession(memSession, '/webhooks', { body: { url: 'http://127.0.0.1:9/member' } });
  assert.equal(mine.status, 201);
  assert.equal((await asSession(memSession, `/webhooks/${mine.body.id}/rotate-secret`, { method: 'POST' })).status, 200);
  const admSession = await session(adm.id, ws.id);
  const rot = await asSession(admSession, `/webhooks/${hook.body.id}/rotate-secret`, { method: 'POST' });
  assert.equal(rot.status, 200);
  assert.match(rot.body.secret, /^whsec_/);
  // Another scope's endpoint stays a 404 (never a 403 that tells it exists).
  const stranger = await createKey(sql, (await createAccount(sql)).id, { scopes: ['read', 'write'] });
  assert.equal((await api(srv.base, stranger.key, `/webhooks/${hook.body.id}`, { method: 'DELETE' })).status, 404);
});
