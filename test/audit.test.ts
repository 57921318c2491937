// The audit log: every change to who may do what leaves exactly one entry, in the transaction that
// makes it, naming the actor (key, session or operator), the request id and the address; GET /audit
// pages a scope's entries; the table refuses UPDATE and DELETE except the retention purge.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { startReceiver } from './_webhooks.ts';
import { api, createAccount, createKey, startServer } from './_setup.ts';

const srv = await startServer({ config: { webhookAllowPrivate: true } });
const rcv = await startReceiver();

async function owner() {
  const a = await createAccount(srv.db.sql);
  const { id, key } = await createKey(srv.db.sql, a.id, { scopes: ['read', 'write', 'keys'] });
  return { account: a, keyId: id, key };
}

/** Entries of a scope, oldest first, as SQL sees them. */
async function entries(scope: string) {
  return srv.db.sql`select action, actor_type, actor_id, target_type, target_id, host(ip) as ip, request_id, details
                    from kiln_private.audit_log where scope_id = ${scope} order by id`;
}

const graph = (step: string) => ({
  nodes: [{ id: 'brief', kind: 'text', text: 'brief' }, { id: 'p1', kind: 'prompt', output: 'code', model: 'local/coder', prompt: `STEP ${step}` }, { id: 'o1', kind: 'output' }],
  edges: [{ from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }],
});

test('each action through the API leaves exactly one entry, naming the key, the request id and the address', async () => {
  const o = await owner();
  const scope = o.account.id;
  const base = (await entries(scope)).length;
  let n = 0;
  const call = async (path: string, init: Parameters<typeof api>[3] = {}) => {
    const rid = `audit-test-${++n}`;
    const res = await api(srv.base, o.key, path, { ...init, headers: { ...init.headers, 'x-request-id': rid } });
    assert.ok(res.status < 300, `${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return { res, rid };
  };
  const steps: Array<{ rid: string; action: string; target: string }> = [];
  const k = await call('/keys', { body: { name: 'audited', scopes: ['read'] } });
  steps.push({ rid: k.rid, action: 'key.created', target: k.res.body.id });
  const r = await call(`/keys/${k.res.body.id}/rotate`, { body: { graceSeconds: 60 } });
  steps.push({ rid: r.rid, action: 'key.rotated', target: k.res.body.id });
  const d = await call(`/keys/${k.res.body.id}`, { method: 'DELETE' });
  steps.push({ rid: d.rid, action: 'key.revoked', target: k.res.body.id });
  const w = await call('/webhooks', { body: { url: rcv.url } });
  steps.push({ rid: w.rid, action: 'webhook.created', target: w.res.body.id });
  const wu = await call(`/webhooks/${w.res.body.id}`, { method: 'PATCH', body: { description: 'ops' } });
  steps.push({ rid: wu.rid, action: 'webhook.updated', target: w.res.body.id });
  const ws = await call(`/webhooks/${w.res.body.id}/rotate-secret`, { method: 'POST' });
  steps.push({ rid: ws.rid, action: 'webhook.secret_rotated', target: w.res.body.id });
  const wd = await call(`/webhooks/${w.res.body.id}`, { method: 'DELETE' });
  steps.push({ rid: wd.rid, action: 'webhook.deleted', target: w.res.body.id });
  const f = await call('/workflows', { body: { name: 'Audited', graph: graph('1') } });
  steps.push({ rid: f.rid, action: 'workflow.saved', target: f.res.body.id });
  const fr = await call(`/workflows/${f.res.body.id}`, { method: 'PUT', body: { name: 'Audited', graph: graph('2') } });
  steps.push({ rid: fr.rid, action: 'workflow.saved', target: f.res.body.id });
  const fd = await call(`/workflows/${f.res.body.id}`, { method: 'DELETE' });
  steps.push({ rid: fd.rid, action: 'workflow.deleted', target: f.res.body.id });
  // Reads and uses change nothing that is audited.
  await call('/usage');
  await call('/keys');

  const got = (await entries(scope)).slice(base);
  assert.deepEqual(got.map((e) => [e.action, e.request_id, e.target_id]), steps.map((s) => [s.action, s.rid, s.target]), 'one entry per action, in order');
  for (const e of got) {
    assert.equal(e.actor_type, 'key');
    assert.equal(e.actor_id, o.keyId);
    assert.equal(e.ip, '127.0.0.1');
  }
  // No secret anywhere: not the key's, not the webhook's.
  const all = JSON.stringify(got);
  assert.ok(!all.includes(k.res.body.key) && !all.includes(r.res.body.key), 'no key secret');
  assert.ok(!all.includes(w.res.body.secret) && !all.includes(ws.res.body.secret), 'no webhook secret');
  assert.ok(!/kiln_live_[0-9A-Za-z]{40}|whsec_/.test(all));
});

test('GET /audit: the scope\'s entries newest first, in pages, filtered by action; other scopes never', async () => {
  const o = await owner();
  const other = await owner();
  for (let i = 0; i < 5; i++) await api(srv.base, o.key, '/keys', { body: { name: `k${i}`, scopes: ['read'] } });
  await api(srv.base, other.key, '/keys', { body: { name: 'theirs', scopes: ['read'] } });
  const first = await api(srv.base, o.key, '/audit?limit=3');
  assert.equal(first.status, 200);
  assert.equal(first.body.data.length, 3);
  assert.deepEqual(Object.keys(first.body.data[0]).sort(), ['action', 'actor', 'at', 'details', 'id', 'ip', 'requestId', 'target']);
  assert.equal(first.body.data[0].details.name, 'k4', 'newest first');
  const second = await api(srv.base, o.key, `/audit?limit=3&cursor=${first.body.nextCursor}`);
  const ids = [...first.body.data, ...second.body.data].map((e: any) => e.id);
  assert.equal(new Set(ids).size, ids.length, 'no repeats across pages');
  assert.ok(second.body.data.length >= 2);
  const filtered = await api(srv.base, o.key, '/audit?action=key.created&limit=100');
  assert.ok(filtered.body.data.every((e: any) => e.action === 'key.created'));
  assert.equal(filtered.body.data.length, 6, 'five by the API, and the fixture\'s key made by the operator');
  assert.equal(filtered.body.data.filter((e: any) => e.actor.type === 'operator').length, 1);
  assert.ok(!JSON.stringify(filtered.body).includes('theirs'), 'another scope\'s entries never show');
  for (const q of ['limit=0', 'limit=101', 'cursor=nope', 'action=DROP%20TABLE']) {
    assert.equal((await api(srv.base, o.key, `/audit?${q}`)).status, 400, q);
  }
  const ro = await createKey(srv.db.sql, o.account.id, { scopes: ['read', 'write'] });
  assert.equal((await api(srv.base, ro.key, '/audit')).status, 403);
});

test('operator changes are audited as the operator: tier and budget, membership, catalog; key expiry once', async () => {
  const a = await createAccount(srv.db.sql);
  const b = await createAccount(srv.db.sql);
  const before = (await entries(a.id)).length;
  await srv.db.sql`select kiln.update_account(${a.id}, 'enterprise', 123, true)`;
  const acct = (await entries(a.id)).slice(before);
  assert.equal(acct.length, 1);
  assert.equal(acct[0].action, 'account.updated');
  assert.equal(acct[0].actor_type, 'operator');
  assert.deepEqual(acct[0].details.tier, { from: 'pro', to: 'enterprise' });
  assert.deepEqual(acct[0].details.budgetMicros.to, 123);

  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Audit', ${a.id})`;
  await srv.db.sql`select kiln.add_workspace_member(${ws.id}, ${b.id}, 'member')`;
  await srv.db.sql`select kiln.remove_workspace_member(${ws.id}, ${b.id})`;
  const wsEntries = (await entries(ws.id)).map((e) => [e.action, e.target_id]);
  assert.deepEqual(wsEntries.filter(([x]) => String(x).startsWith('workspace.member')), [
    ['workspace.member_added', a.id], ['workspace.member_added', b.id], ['workspace.member_removed', b.id],
  ]);

  const [m] = await srv.db.sql`select id from kiln_private.models where enabled order by id limit 1`;
  const count = async () => (await srv.db.sql`select count(*)::int as n from kiln_private.audit_log where target_type = 'model' and target_id = ${m.id}`)[0].n;
  const c0 = await count();
  await srv.db.sql`update kiln_private.models set enabled = false where id = ${m.id}`;
  await srv.db.sql`update kiln_private.models set enabled = true, updated_at = now() where id = ${m.id}`;
  await srv.db.sql`update kiln_private.models set updated_at = now() where id = ${m.id}`; // no change: no entry
  assert.equal(await count(), c0 + 2);
  const [last] = await srv.db.sql`select action from kiln_private.audit_log where target_id = ${m.id} order by id desc limit 1`;
  assert.equal(last.action, 'model.enabled');

  const { id: keyId } = await createKey(srv.db.sql, a.id);
  await srv.db.sql`update kiln_private.api_keys set expires_at = now() - interval '1 second' where id = ${keyId}`;
  await srv.db.sql`select kiln.record_key_expiries()`;
  await srv.db.sql`select kiln.record_key_expiries()`;
  const expired = await srv.db.sql`select action from kiln_private.audit_log where target_id = ${keyId} and action = 'key.expired'`;
  assert.equal(expired.length, 1, 'key.expired once');
});

/** An operator command through the real binary, on this file's database. */
async function kiln(args: string[]) {
  const bin = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');
  const r = await promisify(execFile)(process.execPath, [bin, ...args], {
    env: { ...process.env, DATABASE_URL: srv.db.url, KILN_LOG: 'silent' }, timeout: 60_000,
  });
  return JSON.parse(r.stdout);
}

test('identity links are audited: kiln identity link, a re-link (workspace, another account) and unlink; an unchanged re-link leaves none', async () => {
  const a = await createAccount(srv.db.sql);
  const b = await createAccount(srv.db.sql);
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Linked', ${a.id})`;
  const issuer = 'https://issuer.audit.test';
  const subject = `s-${a.id}`;
  const target = `${issuer} ${subject}`;
  const identityEntries = async (scope: string) => (await entries(scope)).filter((e) => e.target_type === 'identity')
    .map((e) => ({ action: e.action, actor: e.actor_type, target: e.target_id, details: e.details }));

  await kiln(['identity', 'link', '--user', a.id, '--issuer', issuer, '--subject', subject, '--email', 'op@audit.test']);
  await kiln(['identity', 'link', '--user', a.id, '--issuer', issuer, '--subject', subject]); // nothing changes: no entry
  await kiln(['identity', 'link', '--user', a.id, '--issuer', issuer, '--subject', subject, '--workspace', ws.id]);
  await kiln(['identity', 'link', '--user', b.id, '--issuer', issuer, '--subject', subject]);
  const unlinked = await kiln(['identity', 'unlink', '--issuer', issuer, '--subject', subject]);
  assert.equal(unlinked.unlinked, true);

  assert.deepEqual(await identityEntries(a.id), [
    { action: 'identity.linked', actor: 'operator', target, details: { issuer, subject, workspaceId: null } },
    { action: 'identity.linked', actor: 'operator', target, details: { issuer, subject, workspaceId: ws.id, previousWorkspaceId: null } },
    { action: 'identity.unlinked', actor: 'operator', target, details: { issuer, subject, workspaceId: ws.id, relinkedTo: b.id } },
  ]);
  assert.deepEqual(await identityEntries(b.id), [
    { action: 'identity.linked', actor: 'operator', target, details: { issuer, subject, workspaceId: null, previousAccountId: a.id } },
    { action: 'identity.unlinked', actor: 'operator', target, details: { issuer, subject, workspaceId: null } },
  ]);
  // The operator reads them with `kiln audit --action`.
  const listed = await kiln(['audit', '--user', b.id, '--action', 'identity.unlinked']);
  assert.equal(listed.data.length, 1);
  assert.equal(listed.data[0].action, 'identity.unlinked');
});

test('automatic links are audited with the identity as the actor: MCP\'s link by verified email, SSO\'s provisioning', async () => {
  const email = `auto-${crypto.randomUUID()}@audit.test`;
  const [a] = await srv.db.sql`select * from kiln.create_account(${email})`;
  const issuer = 'https://idp.audit.test';
  const resolved = await srv.db.sql.begin(async (tx) => {
    const [r] = await tx`select * from kiln.resolve_identity(${issuer}, 'auto-1', ${email}, true, true)`;
    // The actor it set for its own entry does not outlive the link (nothing else in the transaction is the identity's).
    const [{ actor }] = await tx`select coalesce(current_setting('kiln.actor', true), '') as actor`;
    return { r, actor };
  });
  assert.equal(resolved.r.account_id, a.id);
  assert.equal(resolved.r.linked_now, true);
  assert.equal(resolved.actor, '');
  await srv.db.sql`select * from kiln.resolve_identity(${issuer}, 'auto-1', ${email}, true, true)`; // already linked: no entry
  const auto = (await entries(a.id)).filter((e) => e.target_type === 'identity');
  assert.deepEqual(auto.map((e) => [e.action, e.actor_type, e.actor_id, e.details]), [
    ['identity.linked', 'identity', `${issuer} auto-1`, { issuer, subject: 'auto-1', workspaceId: null }],
  ]);

  // SSO: a new user of an allowed domain is provisioned and linked, as kiln.sign_in does it for the callback.
  const newcomer = `new-${crypto.randomUUID()}@allowed.audit.test`;
  const [row] = await srv.db.sql.begin(async (tx) => {
    await tx`select set_config('kiln.actor', ${JSON.stringify({ type: 'identity', id: `${issuer} sso-1` })}, true)`;
    return tx`select * from kiln.sign_in(${issuer}, 'sso-1', ${newcomer}, true, ${['allowed.audit.test']}::text[], null)`;
  });
  assert.equal(row!.outcome, 'provisioned');
  const sso = (await entries(row!.account_id)).filter((e) => e.target_type === 'identity');
  assert.deepEqual(sso.map((e) => [e.action, e.actor_type, e.actor_id, e.details]), [
    ['identity.linked', 'identity', `${issuer} sso-1`, { issuer, subject: 'sso-1', workspaceId: null }],
  ]);
});

test('append-only: as kiln_app (the service), UPDATE, DELETE and TRUNCATE are refused whatever the session sets; the owner too, by the trigger', async () => {
  const a = await createAccount(srv.db.sql);
  const [e] = await srv.db.sql`select id from kiln_private.audit_log where scope_id = ${a.id} limit 1`;
  const writes = (sql: typeof srv.db.sql) => [
    (tx: any) => tx`update kiln_private.audit_log set action = 'x.y' where id = ${e.id}`,
    (tx: any) => tx`delete from kiln_private.audit_log where id = ${e.id}`,
    (tx: any) => tx`truncate kiln_private.audit_log`,
  ].map((q) => (purgeFlag: boolean) => sql.begin(async (tx) => {
    if (purgeFlag) await tx`select set_config('kiln.audit_purge', 'on', true)`;
    return q(tx);
  }));
  // The service's role: no table privilege at all (42501), with or without the purge's flag.
  for (const w of writes(srv.db.app)) {
    for (const flag of [false, true]) await assert.rejects(w(flag), (err: any) => err.code === '42501', `as kiln_app, flag ${flag}`);
  }
  await assert.rejects(srv.db.app.begin(async (tx) => {
    await tx`set local session_replication_role = replica`;
  }), (err: any) => err.code === '42501', 'kiln_app cannot switch the triggers off');
  // Nor through the functions: the purge takes no cutoff from its caller.
  await assert.rejects(srv.db.app`select kiln.purge_audit_log(now() + interval '1 second', 1000000)`, (err: any) => err.code === '42883');
  await assert.rejects(srv.db.app`select kiln.set_audit_retention(interval '1 second')`, (err: any) => err.code === '42501');
  // The owner is stopped by the trigger (an accident guard: the owner could drop it).
  for (const w of writes(srv.db.sql)) await assert.rejects(w(false), (err: any) => err.code === 'KF001' && /append-only/.test(err.message));
  const [{ n0 }] = await srv.db.sql`select count(*)::int as n0 from kiln_private.audit_log where id = ${e.id}`;
  assert.equal(n0, 1);
});

test('the retention purge deletes only entries past the owner\'s retention, and nothing while none is set', async () => {
  const a = await createAccount(srv.db.sql);
  const old = async (days: number) => {
    const [r] = await srv.db.sql`insert into kiln_private.audit_log (at, scope_id, actor_type, action, target_type, details)
      values (now() - make_interval(days => ${days}), ${a.id}, 'operator', 'account.updated', 'account', '{"test":"retention"}') returning id`;
    return r!.id as string;
  };
  const ids = { d40: await old(40), d20: await old(20), d1: await old(1) };
  const left = async () => (await srv.db.sql`select id from kiln_private.audit_log where scope_id = ${a.id} and details->>'test' = 'retention'`).map((r) => r.id).sort();
  try {
    await srv.db.sql`select kiln.set_audit_retention(null)`;
    const [{ n }] = await srv.db.app`select kiln.purge_audit_log() as n`;
    assert.equal(n, 0, 'kept forever while no retention is set');
    assert.deepEqual(await left(), Object.values(ids).sort());
    await srv.db.sql`select kiln.set_audit_retention(interval '30 days')`;
    const [{ n: n1 }] = await srv.db.app`select kiln.purge_audit_log(1000000) as n`;
    assert.ok(n1 >= 1);
    assert.deepEqual(await left(), [ids.d20, ids.d1].sort(), 'only what is past 30 days');
    await srv.db.sql`select kiln.set_audit_retention(interval '10 days')`;
    await srv.db.app`select kiln.purge_audit_log()`;
    assert.deepEqual(await left(), [ids.d1]);
    await assert.rejects(srv.db.sql`select kiln.set_audit_retention(interval '-1 day')`, (err: any) => err.code === 'KI001');
  } finally {
    await srv.db.sql`select kiln.set_audit_retention(null)`;
  }
});

test('entries made one after another sort in that order, within a millisecond too', async () => {
  const ids = [];
  for (let i = 0; i < 200; i++) {
    const [r] = await srv.db.sql`select kiln_private.uuid_v7_ordered() as id, clock_timestamp() as t`;
    ids.push(r.id as string);
  }
  assert.deepEqual([...ids].sort(), ids, 'uuid order is creation order');
  assert.ok(ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)), 'version 7, RFC variant');
  // A workspace and its owner's membership, written by one call in the same millisecond, list in order.
  const a = await createAccount(srv.db.sql);
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Order', ${a.id})`;
  const got = await srv.db.sql`select action from kiln_private.audit_log where scope_id = ${ws.id} order by id`;
  assert.deepEqual(got.map((e) => e.action), ['workspace.created', 'workspace.member_added']);
});
