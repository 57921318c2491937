// Keys people manage themselves: GET/POST /keys, rotation with a grace period under the same id,
// expiry, revocation, scope escalation, other scopes' keys, last use, and per-key budgets that
// stay exact under concurrency — through the real HTTP server and Postgres.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { api, createAccount, createKey, startServer } from './_setup.ts';

const srv = await startServer();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An account with a key that may manage keys (read, write, keys). */
async function owner(opts: { budgetMicros?: number | null } = {}) {
  const a = await createAccount(srv.db.sql, { budgetMicros: opts.budgetMicros === undefined ? 100_000_000 : opts.budgetMicros });
  const { id, key } = await createKey(srv.db.sql, a.id, { scopes: ['read', 'write', 'keys'] });
  return { account: a, keyId: id, key };
}

const unknownKey = `kiln_live_${'Z'.repeat(40)}`;

test('create: 201 with the entry and the secret once; the list shows it without any secret', async () => {
  const o = await owner();
  const created = await api(srv.base, o.key, '/keys', { body: { name: 'ci', scopes: ['read'], rpm: 30, budgetMicros: 5000 } });
  assert.equal(created.status, 201);
  assert.equal(created.headers.get('cache-control'), 'no-store');
  assert.match(created.body.key, /^kiln_live_[0-9A-Za-z]{40}$/);
  assert.deepEqual(Object.keys(created.body).sort(), ['budgetMicros', 'createdAt', 'expiresAt', 'graceEndsAt', 'id', 'key', 'lastUsedAt', 'liveSecrets', 'name', 'prefix', 'requireEndUser', 'revokedAt', 'rpm', 'scopes', 'usedMicros', 'workspaceId']);
  assert.equal(created.body.requireEndUser, false);
  assert.equal(created.body.liveSecrets, 1);
  assert.equal(created.body.graceEndsAt, null);
  assert.equal(created.body.prefix, created.body.key.slice(0, 14));
  assert.deepEqual(created.body.scopes, ['read']);
  assert.equal(created.body.budgetMicros, 5000);
  // The new key works, with what it was given.
  assert.equal((await api(srv.base, created.body.key, '/usage')).status, 200);
  assert.equal((await api(srv.base, created.body.key, '/generations', { body: { type: 'code', prompt: 'x' } })).status, 403);
  const list = await api(srv.base, o.key, '/keys');
  assert.equal(list.status, 200);
  const entry = list.body.data.find((k: any) => k.id === created.body.id);
  const { key: _secret, ...withoutSecret } = created.body;
  assert.deepEqual({ ...entry, lastUsedAt: null }, { ...withoutSecret, lastUsedAt: null });
  assert.ok(!JSON.stringify(list.body).includes(created.body.key), 'no secret in the list');
  assert.ok(list.body.data.some((k: any) => k.id === o.keyId), 'the creating key is listed too');
});

test('bad bodies are 400 naming the field; a read-only key cannot manage keys (403)', async () => {
  const o = await owner();
  for (const [body, field] of [
    [{ scopes: ['read'] }, 'name'],
    [{ name: 'x', scopes: [] }, 'scopes'],
    [{ name: 'x', scopes: ['root'] }, 'scopes'],
    [{ name: 'x', scopes: ['read'], rpm: 0 }, 'rpm'],
    [{ name: 'x', scopes: ['read'], budgetMicros: -1 }, 'budgetMicros'],
    [{ name: 'x', scopes: ['read'], budgetMicros: 1.5 }, 'budgetMicros'],
    [{ name: 'x', scopes: ['read'], expiresAt: 'tomorrow' }, 'expiresAt'],
    [{ name: 'x', scopes: ['read'], expiresAt: '2001-01-01T00:00:00Z' }, 'expiresAt'],
  ] as const) {
    const r = await api(srv.base, o.key, '/keys', { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.error.type, 'invalid_request');
    assert.match(r.body.error.message, new RegExp(field), JSON.stringify(body));
  }
  const g = await api(srv.base, o.key, '/keys/not-a-uuid/rotate', { body: {} });
  assert.equal(g.status, 400);
  const rot = await api(srv.base, o.key, `/keys/${o.keyId}/rotate`, { body: { graceSeconds: 7 * 86400 + 1 } });
  assert.equal(rot.status, 400);
  const ro = await createKey(srv.db.sql, o.account.id, { scopes: ['read', 'write'] });
  const denied = await api(srv.base, ro.key, '/keys');
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.type, 'insufficient_scope');
});

test('scopes never exceed the creator\'s: write from a keys-only key, admin from a non-admin', async () => {
  const a = await createAccount(srv.db.sql);
  const { key } = await createKey(srv.db.sql, a.id, { scopes: ['keys'] });
  const w = await api(srv.base, key, '/keys', { body: { name: 'x', scopes: ['read', 'write'] } });
  assert.equal(w.status, 403);
  assert.equal(w.body.error.type, 'insufficient_scope');
  assert.match(w.body.error.message, /read, write/);
  const k2 = await api(srv.base, key, '/keys', { body: { name: 'x', scopes: ['keys'] } });
  assert.equal(k2.status, 201);
  // A key created with the admin scope (by the operator) still has no admin power for a non-admin.
  const { key: adminScoped } = await createKey(srv.db.sql, a.id, { scopes: ['read', 'write', 'keys', 'admin'] });
  const esc = await api(srv.base, adminScoped, '/keys', { body: { name: 'x', scopes: ['admin'] } });
  assert.equal(esc.status, 403);
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.api_keys where account_id = ${a.id}`;
  assert.equal(n, 3, 'refused creations left nothing');
});

test('rotate with a grace of a few seconds: both secrets work, then only the new one; the id stays', async () => {
  const o = await owner();
  const made = (await api(srv.base, o.key, '/keys', { body: { name: 'rotating', scopes: ['read'] } })).body;
  const rotated = await api(srv.base, o.key, `/keys/${made.id}/rotate`, { body: { graceSeconds: 2 } });
  assert.equal(rotated.status, 201);
  assert.equal(rotated.body.id, made.id, 'same id');
  assert.notEqual(rotated.body.key, made.key);
  assert.equal(rotated.body.name, 'rotating');
  assert.equal((await api(srv.base, made.key, '/usage')).status, 200, 'the old secret works during the grace');
  assert.equal((await api(srv.base, rotated.body.key, '/usage')).status, 200);
  await sleep(2300);
  const old = await api(srv.base, made.key, '/usage');
  const unknown = await api(srv.base, unknownKey, '/usage');
  assert.equal(old.status, 401);
  assert.deepEqual(old.body, unknown.body, 'the identical 401');
  assert.equal(old.headers.get('www-authenticate'), unknown.headers.get('www-authenticate'));
  assert.equal((await api(srv.base, rotated.body.key, '/usage')).status, 200);
  // No body: the default grace of a day.
  const again = await api(srv.base, o.key, `/keys/${made.id}/rotate`, { method: 'POST' });
  assert.equal(again.status, 201);
  assert.equal((await api(srv.base, rotated.body.key, '/usage')).status, 200);
  const [{ until }] = await srv.db.sql`select extract(epoch from max(expires_at) - now())::int as until from kiln_private.api_key_grace where key_id = ${made.id}`;
  assert.ok(until > 86_000 && until <= 86_400, String(until));
  // Grace 0: the old secret ends at once, and so does every older one.
  const now = await api(srv.base, o.key, `/keys/${made.id}/rotate`, { body: { graceSeconds: 0 } });
  assert.equal((await api(srv.base, again.body.key, '/usage')).status, 401);
  assert.equal((await api(srv.base, rotated.body.key, '/usage')).status, 401, 'the secret before it too');
  assert.equal((await api(srv.base, now.body.key, '/usage')).status, 200);
  assert.deepEqual([now.body.liveSecrets, now.body.graceEndsAt], [1, null]);
});

test('revoke ends every secret at once; a revoked key cannot be rotated (409); revoke is idempotent', async () => {
  const o = await owner();
  const made = (await api(srv.base, o.key, '/keys', { body: { name: 'x', scopes: ['read'] } })).body;
  const rotated = (await api(srv.base, o.key, `/keys/${made.id}/rotate`, { body: { graceSeconds: 3600 } })).body;
  const del = await api(srv.base, o.key, `/keys/${made.id}`, { method: 'DELETE' });
  assert.equal(del.status, 200);
  assert.ok(del.body.revokedAt);
  assert.equal((await api(srv.base, made.key, '/usage')).status, 401);
  assert.equal((await api(srv.base, rotated.key, '/usage')).status, 401);
  const r = await api(srv.base, o.key, `/keys/${made.id}/rotate`, { body: {} });
  assert.equal(r.status, 409);
  assert.equal(r.body.error.type, 'conflict');
  const del2 = await api(srv.base, o.key, `/keys/${made.id}`, { method: 'DELETE' });
  assert.equal(del2.status, 200);
  assert.equal(del2.body.revokedAt, del.body.revokedAt);
});

test('expiresAt: the key works until then, then the identical 401', async () => {
  const o = await owner();
  const at = new Date(Date.now() + 1500).toISOString();
  const made = (await api(srv.base, o.key, '/keys', { body: { name: 'short', scopes: ['read'], expiresAt: at } })).body;
  assert.equal(made.expiresAt, at.replace(/\.\d+Z$/, 'Z'));
  assert.equal((await api(srv.base, made.key, '/usage')).status, 200);
  await sleep(1700);
  const gone = await api(srv.base, made.key, '/usage');
  assert.equal(gone.status, 401);
  assert.deepEqual(gone.body, (await api(srv.base, unknownKey, '/usage')).body);
  assert.equal((await api(srv.base, o.key, `/keys/${made.id}/rotate`, { body: {} })).status, 409);
});

test('another account\'s key id is 404 on rotate, revoke and get, and never listed', async () => {
  const alice = await owner();
  const bob = await owner();
  for (const [method, path, body] of [['POST', `/keys/${bob.keyId}/rotate`, {}], ['DELETE', `/keys/${bob.keyId}`, undefined], ['GET', `/keys/${bob.keyId}`, undefined]] as const) {
    const r = await api(srv.base, alice.key, path, { method, body });
    assert.equal(r.status, 404, `${method} ${path}`);
    assert.equal(r.body.error.type, 'not_found');
  }
  const missing = await api(srv.base, alice.key, '/keys/00000000-0000-4000-8000-000000000000', { method: 'DELETE' });
  assert.deepEqual(missing.body.error.message, (await api(srv.base, alice.key, `/keys/${bob.keyId}`, { method: 'DELETE' })).body.error.message);
  const list = await api(srv.base, alice.key, '/keys');
  assert.ok(!list.body.data.some((k: any) => k.id === bob.keyId));
  assert.equal((await api(srv.base, bob.key, '/usage')).status, 200, 'bob\'s key still works');
});

test('workspace keys: an owner manages the workspace\'s keys; a plain member only their own, and cannot bind new ones', async () => {
  const own = await createAccount(srv.db.sql);
  const mem = await createAccount(srv.db.sql);
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Studio', ${own.id})`;
  await srv.db.sql`select kiln.add_workspace_member(${ws.id}, ${mem.id}, 'member')`;
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', 10000000, true)`;
  const ownerKey = await createKey(srv.db.sql, own.id, { scopes: ['read', 'write', 'keys'], workspaceId: ws.id });
  const [m] = await srv.db.sql`select * from kiln.create_api_key(${mem.id}, ${Buffer.alloc(32, 7)}, 'kiln_live_memb', ${['read', 'keys']}, null, null, 'member personal')`;
  // A member's personal key never sees the workspace's keys.
  const made = await api(srv.base, ownerKey.key, '/keys', { body: { name: 'team ci', scopes: ['read', 'write'] } });
  assert.equal(made.status, 201);
  assert.equal(made.body.workspaceId, ws.id);
  const listed = await api(srv.base, ownerKey.key, '/keys');
  assert.ok(listed.body.data.some((k: any) => k.id === made.body.id));
  assert.ok(!listed.body.data.some((k: any) => k.id === m.id), 'personal keys of members are not the workspace\'s');
});

test('lastUsedAt is recorded to the minute, without a write per request', async () => {
  const o = await owner();
  const made = (await api(srv.base, o.key, '/keys', { body: { name: 'x', scopes: ['read'] } })).body;
  assert.equal(made.lastUsedAt, null);
  const before = Date.now();
  assert.equal((await api(srv.base, made.key, '/usage')).status, 200);
  const [first] = await srv.db.sql`select last_used_at, xmin::text as x from kiln_private.api_keys where id = ${made.id}`;
  assert.ok(first.last_used_at && Math.abs(first.last_used_at.getTime() - before) < 60_000);
  for (let i = 0; i < 5; i++) assert.equal((await api(srv.base, made.key, '/usage')).status, 200);
  const [after] = await srv.db.sql`select last_used_at, xmin::text as x from kiln_private.api_keys where id = ${made.id}`;
  assert.equal(after.x, first.x, 'no row version per request within the minute');
  // A minute later (moved back in SQL), the next use writes once.
  await srv.db.sql`update kiln_private.api_keys set last_used_at = now() - interval '61 seconds' where id = ${made.id}`;
  await api(srv.base, made.key, '/usage');
  const list = await api(srv.base, o.key, '/keys');
  const entry = list.body.data.find((k: any) => k.id === made.id);
  assert.ok(Math.abs(new Date(entry.lastUsedAt).getTime() - Date.now()) < 60_000, entry.lastUsedAt);
});

test('per-key budget: K of 3K concurrent POSTs; 429 insufficient_quota after; GET /usage reports the key\'s budget', async () => {
  const K = 20;
  const o = await owner({ budgetMicros: 1_000_000_000 });
  const made = (await api(srv.base, o.key, '/keys', { body: { name: 'capped', scopes: ['read', 'write'], budgetMicros: K * 1000 } })).body;
  const results = await Promise.all(Array.from({ length: 3 * K }, () =>
    api(srv.base, made.key, '/generations', { body: { type: 'image', prompt: 'capped' } })));
  const accepted = results.filter((r) => r.status === 202).length;
  assert.equal(accepted, K, 'exactly the key\'s budget');
  for (const r of results.filter((x) => x.status !== 202)) {
    assert.equal(r.status, 429);
    assert.equal(r.body.error.type, 'insufficient_quota');
    assert.match(r.body.error.message, /key/);
  }
  const [{ gens, charges }] = await srv.db.sql`select (select count(*) from kiln_private.generations where key_id = ${made.id})::int as gens,
    (select count(*) from kiln_private.charges where key_id = ${made.id} and key_pool)::int as charges`;
  assert.deepEqual({ gens, charges }, { gens: K, charges: K });
  const u = await api(srv.base, made.key, '/usage');
  assert.equal(u.body.key_budget_micros, K * 1000);
  assert.equal(u.body.key_used_micros, K * 1000);
  assert.equal(u.body.key_remaining_micros, 0);
  assert.equal(u.body.used_micros, K * 1000, 'the pool holds the same');
  const entry = (await api(srv.base, o.key, '/keys')).body.data.find((k: any) => k.id === made.id);
  assert.equal(entry.usedMicros, K * 1000);
});

test('per-key and pool budgets together: the tighter decides, exactly, and a release returns both', async () => {
  // Pool for 8 images; key A capped at 5, key B uncapped: 15 concurrent each.
  const o = await owner({ budgetMicros: 8000 });
  const a = (await api(srv.base, o.key, '/keys', { body: { name: 'A', scopes: ['write'], budgetMicros: 5000 } })).body;
  const b = (await api(srv.base, o.key, '/keys', { body: { name: 'B', scopes: ['write'] } })).body;
  const calls = [...Array.from({ length: 15 }, () => ['A', a.key]), ...Array.from({ length: 15 }, () => ['B', b.key])];
  const results = await Promise.all(calls.map(([who, key]) =>
    api(srv.base, key!, '/generations', { body: { type: 'image', prompt: 'pool' } }).then((res) => ({ who, res }))));
  const okA = results.filter((r) => r.who === 'A' && r.res.status === 202).length;
  const okB = results.filter((r) => r.who === 'B' && r.res.status === 202).length;
  assert.ok(okA <= 5, `A got ${okA}`);
  assert.equal(okA + okB, 8, 'the pool is exact');
  const [{ held }] = await srv.db.sql`select coalesce(sum(held_micros), 0)::int as held from kiln_private.key_budget_periods where key_id = ${a.id}`;
  assert.equal(held, okA * 1000, 'the key\'s running total matches its accepted requests');
  // Releasing one of A's reservations returns it to both the pool and the key.
  // Should A have got none of the race, make room in the pool and give it one, so what follows always runs.
  let heldA = okA;
  if (heldA === 0) {
    await srv.db.sql`select kiln.release_charge(id) from kiln_private.charges where key_id = ${b.id} and status = 'reserved' limit 1`;
    assert.equal((await api(srv.base, a.key, '/generations', { body: { type: 'image', prompt: 'pool' } })).status, 202);
    heldA = 1;
  }
  const [c] = await srv.db.sql`select id from kiln_private.charges where key_id = ${a.id} and status = 'reserved' limit 1`;
  assert.ok(c, 'A holds a reservation');
  await srv.db.sql`select kiln.release_charge(${c.id})`;
  const [{ h2 }] = await srv.db.sql`select held_micros::int as h2 from kiln_private.key_budget_periods where key_id = ${a.id}`;
  assert.equal(h2, (heldA - 1) * 1000);
  await srv.db.sql`select kiln.settle_charge(id, 400) from kiln_private.charges where key_id = ${a.id} and status = 'reserved'`;
  const [kb] = await srv.db.sql`select held_micros::int as h, settled_micros::int as s from kiln_private.key_budget_periods where key_id = ${a.id}`;
  assert.deepEqual(kb, { h: 0, s: (heldA - 1) * 400 });
});
