// GET /me: who the request's API key or console session is (account, email, scopes, workspace,
// admin flag), checked with Ajv against the served OpenAPI document; `read` scope; the same 401
// as every route without a valid credential.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { generateSessionSecret } from '../src/auth/secrets.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
let validateMe: (body: unknown) => void;

before(async () => {
  srv = await startServer();
  const doc = (await api(srv.base, null, '/openapi.json')).body;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addSchema({ $id: 'kiln:openapi', components: doc.components });
  const schema = doc.paths['/me'].get.responses['200'].content['application/json'].schema;
  assert.equal(schema.$ref, '#/components/schemas/Me');
  const validate = ajv.compile({ $ref: `kiln:openapi${schema.$ref}` });
  validateMe = (body) => assert.ok(validate(body), JSON.stringify(validate.errors));
});

async function me(credential: { key?: string; cookie?: string } | null) {
  const headers: Record<string, string> = {};
  if (credential?.cookie) headers.cookie = credential.cookie;
  return api(srv.base, credential?.key ?? null, '/me', { headers });
}

test('an API key: its account, email, scopes and workspace (null), not an admin; the body is the document\'s Me', async () => {
  const a = await createAccount(srv.db.sql);
  const { key } = await createKey(srv.db.sql, a.id, { scopes: ['read', 'write'] });
  const res = await me({ key });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.deepEqual(res.body, { accountId: a.id, email: a.email, credential: 'key', scopes: ['read', 'write'], workspaceId: null, admin: false });
  validateMe(res.body);
  assert.throws(() => validateMe({ ...res.body, scopes: 'read' }), 'the check can fail');

  // A write key implies read; the typed client mirrors the route.
  const writer = await createKey(srv.db.sql, a.id, { scopes: ['write'] });
  assert.deepEqual((await me({ key: writer.key })).body.scopes, ['write']);
  const { createKilnClient } = await import('../src/client/index.ts');
  assert.deepEqual(await createKilnClient({ baseUrl: srv.origin, apiKey: key }).me(), res.body);
});

test('a workspace-bound key names its workspace; the admin flag and the admin scope as they apply now', async () => {
  const owner = await createAccount(srv.db.sql);
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Me', ${owner.id})`;
  const bound = await createKey(srv.db.sql, owner.id, { workspaceId: ws!.id });
  const res = await me({ key: bound.key });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.workspaceId, ws!.id);
  validateMe(res.body);

  const admin = await createAccount(srv.db.sql);
  await srv.db.sql`select kiln.set_account_admin(${admin.id}, true)`;
  const withScope = await createKey(srv.db.sql, admin.id, { scopes: ['read', 'admin'] });
  const withoutScope = await createKey(srv.db.sql, admin.id, { scopes: ['read'] });
  assert.deepEqual([(await me({ key: withScope.key })).body.admin, (await me({ key: withScope.key })).body.scopes], [true, ['read', 'admin']]);
  assert.deepEqual([(await me({ key: withoutScope.key })).body.admin, (await me({ key: withoutScope.key })).body.scopes], [true, ['read']]);
  // No longer an admin: the flag and the key's admin scope go at once.
  await srv.db.sql`select kiln.set_account_admin(${admin.id}, false)`;
  const after = (await me({ key: withScope.key })).body;
  assert.deepEqual([after.admin, after.scopes], [false, ['read']]);
  validateMe(after);
});

test('a console session: credential session, its scopes and workspace', async () => {
  const a = await createAccount(srv.db.sql);
  const { secret, hash, displayPrefix } = generateSessionSecret();
  await srv.db.sql`select kiln.create_session(${a.id}, ${hash}, ${displayPrefix}, 3600, 86400, 'test')`;
  const res = await me({ cookie: `kiln_session=${secret}` });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body, { accountId: a.id, email: a.email, credential: 'session', scopes: ['read', 'write', 'keys'], workspaceId: null, admin: false });
  validateMe(res.body);
});

test('no credential, an unknown or revoked key: the same 401; a key without read: 403', async () => {
  const a = await createAccount(srv.db.sql);
  const revoked = await createKey(srv.db.sql, a.id);
  await srv.db.sql`update kiln_private.api_keys set revoked_at = now() where id = ${revoked.id}`;
  const answers = [await me(null), await me({ key: 'kiln_live_' + 'x'.repeat(40) }), await me({ key: revoked.key }), await me({ cookie: 'kiln_session=kiln_sess_nope' })];
  for (const r of answers) {
    assert.equal(r.status, 401);
    assert.equal(r.headers.get('www-authenticate'), 'Bearer');
  }
  assert.equal(new Set(answers.map((r) => JSON.stringify(r.body))).size, 1, 'identical 401s');
  const keysOnly = await createKey(srv.db.sql, a.id, { scopes: ['keys'] });
  const refused = await me({ key: keysOnly.key });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.type, 'insufficient_scope');
});
