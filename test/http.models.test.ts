// GET /models and the common HTTP behaviour: envelope, request ids, 401s, 404/405.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
let key: string;

before(async () => {
  srv = await startServer();
  const a = await createAccount(srv.db.sql);
  key = (await createKey(srv.db.sql, a.id, { scopes: ['read'] })).key;
});

test('GET /models lists the seeded local models with billed pricing and a 5-minute cache', async () => {
  const res = await api(srv.base, key, '/models');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('cache-control'), 'private, max-age=300');
  assert.ok(res.headers.get('x-request-id'));
  const ids = res.body.data.map((m: any) => m.id);
  assert.deepEqual(ids, ['local/sketch', 'local/coder', 'local/vector']);
  const sketch = res.body.data[0];
  assert.deepEqual(Object.keys(sketch).sort(), ['category', 'id', 'input_modalities', 'name', 'output_modalities', 'pricing', 'provider', 'supports_image_input']);
  assert.equal(sketch.category, 'image');
  assert.deepEqual(sketch.pricing, { micros_per_image: 1000 });
  assert.match(sketch.name, /development/i);
});

test('GET /models shows cost × markup', async () => {
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'acme/coder', name: 'Acme Coder', category: 'text', provider: 'openai',
    upstream: { baseUrl: 'http://127.0.0.1:9/v1', model: 'coder-1', apiKeyEnv: 'ACME_API_KEY' },
    cost: { input_micros_per_token: 3, output_micros_per_token: 15 }, maxOutputTokens: 4096, markup: 1.25,
  })})`;
  const { invalidateCatalog } = await import('../src/billing/catalog.ts');
  invalidateCatalog(srv.ctx);
  const res = await api(srv.base, key, '/models');
  const acme = res.body.data.find((m: any) => m.id === 'acme/coder');
  assert.deepEqual(acme.pricing, { input_micros_per_token: 3.75, output_micros_per_token: 18.75 });
});

test('missing, malformed, unknown and revoked keys get one identical 401', async () => {
  const a = await createAccount(srv.db.sql);
  const revoked = await createKey(srv.db.sql, a.id);
  await srv.db.sql`select kiln.revoke_api_key(${revoked.id})`;
  const variants: Array<Record<string, string>> = [
    {},
    { authorization: 'Bearer nope' },
    { authorization: 'Basic abc' },
    { authorization: `Bearer kiln_live_${'x'.repeat(40)}` },
    { authorization: `Bearer ${revoked.key}` },
    { cookie: `session=${key}` },
  ];
  const bodies = new Set<string>();
  for (const headers of variants) {
    const res = await api(srv.base, null, '/models', { headers });
    assert.equal(res.status, 401);
    assert.ok(res.headers.get('x-request-id'));
    bodies.add(JSON.stringify(res.body));
  }
  assert.equal(bodies.size, 1);
  assert.deepEqual(JSON.parse([...bodies][0]), { error: { type: 'unauthorized', message: 'Missing or invalid API key.' } });
});

test('revocation takes effect on the very next request', async () => {
  const a = await createAccount(srv.db.sql);
  const k = await createKey(srv.db.sql, a.id);
  assert.equal((await api(srv.base, k.key, '/usage')).status, 200);
  await srv.db.sql`select kiln.revoke_api_key(${k.id})`;
  assert.equal((await api(srv.base, k.key, '/usage')).status, 401);
});

test('unknown routes are 404 and wrong methods 405, both in the envelope with x-request-id', async () => {
  const nf = await api(srv.base, key, '/nope');
  assert.equal(nf.status, 404);
  assert.equal(nf.body.error.type, 'not_found');
  assert.ok(nf.headers.get('x-request-id'));
  // `/` is the console's entry (issue 21); any other unknown path outside the API is still a 404.
  const root = await fetch(`${srv.origin}/`, { redirect: 'manual' });
  assert.equal(root.status, 302);
  assert.equal(root.headers.get('location'), '/console/');
  const other = await api(srv.origin, null, '/nope');
  assert.equal(other.status, 404);
  assert.equal(other.body.error.type, 'not_found');
  const m = await api(srv.base, key, '/models', { method: 'DELETE' });
  assert.equal(m.status, 405);
  assert.equal(m.body.error.type, 'invalid_request');
  assert.equal(m.headers.get('allow'), 'GET, HEAD');
  assert.ok(m.headers.get('x-request-id'));
});

test('a sane incoming x-request-id is echoed; anything else is replaced', async () => {
  const ok = await api(srv.base, key, '/models', { headers: { 'x-request-id': 'abc-123' } });
  assert.equal(ok.headers.get('x-request-id'), 'abc-123');
  const bad = await api(srv.base, key, '/models', { headers: { 'x-request-id': 'x'.repeat(300) } });
  assert.notEqual(bad.headers.get('x-request-id'), 'x'.repeat(300));
  assert.match(bad.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/);
});
