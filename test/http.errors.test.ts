// Every error path renders the error envelope with x-request-id: oversized and malformed bodies,
// wrong content types, malformed URLs — and nothing internal leaks.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
let key: string;
before(async () => {
  srv = await startServer({ config: { maxBodyBytes: 4096 } });
  key = (await createKey(srv.db.sql, (await createAccount(srv.db.sql)).id)).key;
});

function assertEnvelope(res: { status: number; headers: Headers; body: any }, status: number, type: string) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error.type, type);
  assert.equal(typeof res.body.error.message, 'string');
  assert.deepEqual(Object.keys(res.body), ['error']);
  assert.ok(res.headers.get('x-request-id'));
  assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  assert.doesNotMatch(JSON.stringify(res.body), /at \w+ \(|node_modules|select |kiln_private|stack/i);
}

test('oversized bodies are 413 invalid_request, declared or streamed', async () => {
  const big = JSON.stringify({ source: 'x'.repeat(10_000), op: 'trim' });
  assertEnvelope(await api(srv.base, key, '/images/transforms', { body: big }), 413, 'invalid_request');
  // Chunked (no content-length): the cap applies while streaming.
  const res = await fetch(`${srv.base}/images/transforms`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: new ReadableStream({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode('x'.repeat(1000)));
        c.close();
      },
    }),
    duplex: 'half',
  } as any);
  assertEnvelope({ status: res.status, headers: res.headers, body: await res.json() }, 413, 'invalid_request');
  // A 4 MB upload still in flight when the cap is passed: the 413 still reaches the client.
  for (const path of ['/images/transforms', '/generations']) {
    const big = await fetch(`${srv.base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: new ReadableStream({
        start(c) {
          for (let i = 0; i < 64; i++) c.enqueue(new TextEncoder().encode('x'.repeat(65_536)));
          c.close();
        },
      }),
      duplex: 'half',
    } as any);
    assertEnvelope({ status: big.status, headers: big.headers, body: await big.json() }, 413, 'invalid_request');
  }
});

test('malformed JSON, empty bodies and wrong content types are 4xx envelopes', async () => {
  assertEnvelope(await api(srv.base, key, '/images/transforms', { body: '{"op":' }), 400, 'invalid_request');
  assertEnvelope(await api(srv.base, key, '/images/transforms', { body: '' }), 400, 'invalid_request');
  assertEnvelope(await api(srv.base, key, '/images/transforms', { body: 'null' }), 400, 'invalid_request');
  assertEnvelope(
    await api(srv.base, key, '/images/transforms', { body: 'op=trim', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
    415,
    'invalid_request',
  );
});

test('a body nested deeper than 64 levels is 400 on every JSON route, never a 500 (an Idempotency-Key fingerprint recursed past the stack; this server caps bodies at 4 KB)', async () => {
  const deep = (n: number) => `${'['.repeat(n)}1${']'.repeat(n)}`;
  for (const [path, body, headers] of [
    ['/generations', `{"type":"code","prompt":"p","extra":${deep(1_900)}}`, { 'idempotency-key': 'deep-1' }],
    ['/generations', `{"type":"code","prompt":"p","extra":${deep(65)}}`, {}],
    ['/images/transforms', `{"op":"trim","source":${deep(1_000)}}`, {}],
    ['/workflows', `{"name":"w","graph":${deep(1_900)}}`, { 'idempotency-key': 'deep-2' }],
  ] as const) {
    const res = await api(srv.base, key, path, { body, headers });
    assertEnvelope(res, 400, 'invalid_request');
    assert.equal(res.body.error.message, 'body: is nested more than 64 levels deep', path);
  }
  // 64 levels are fine as far as nesting goes (the route then judges the value itself).
  const ok = await api(srv.base, key, '/generations', { body: `{"type":"code","prompt":"p","extra":${deep(63)}}`, headers: { 'idempotency-key': 'deep-3' } });
  assert.notEqual(ok.body?.error?.message, 'body: is nested more than 64 levels deep');
  assert.ok(ok.status < 500, String(ok.status));
});

test('malformed URLs and unknown paths stay in the envelope', async () => {
  const res = await fetch(`${srv.origin}/api/v1/%E0%A4%A`, { headers: { authorization: `Bearer ${key}` } });
  const body = await res.json();
  assert.ok(res.status === 400 || res.status === 404);
  assert.ok(body.error?.type);
  assert.ok(res.headers.get('x-request-id'));
  assertEnvelope(await api(srv.base, key, '/generations/../../etc/passwd'), 404, 'not_found');
});

test('authentication happens before body parsing: a bad key with a bad body is 401', async () => {
  assertEnvelope(await api(srv.base, 'nope', '/images/transforms', { body: '{bad' }), 401, 'unauthorized');
});

test('validation failures are worded as the API words them (`name: is required`), never as the validator does', async () => {
  const keysKey = (await createKey(srv.db.sql, (await createAccount(srv.db.sql)).id, { scopes: ['read', 'write', 'keys'] })).key;
  for (const [k, path, body, message] of [
    [keysKey, '/keys', { scopes: ['read'] }, 'name: is required'],
    [keysKey, '/keys', { name: 'k' }, 'scopes: is required'],
    [keysKey, '/keys', { name: 'k', scopes: 'read' }, 'scopes: must be an array'],
    [keysKey, '/keys', { name: 'k', scopes: ['read'], rpm: 'many' }, 'rpm: must be a number'],
    [key, '/webhooks', {}, 'url: is required'],
    [key, '/webhooks', { url: 5 }, 'url: must be a string'],
    [key, '/webhooks', { url: 'https://example.com/h', description: 7 }, 'description: must be a string'],
    [key, '/images/transforms', { op: 'trim' }, 'source: is required'],
    [key, '/generations', { type: 'code' }, 'prompt: is required'],
  ] as const) {
    const res = await api(srv.base, k, path, { body });
    assertEnvelope(res, 400, 'invalid_request');
    assert.equal(res.body.error.message, message, `${path} ${JSON.stringify(body)}`);
  }
  // A message a schema gives itself is kept as it is.
  const events = await api(srv.base, key, '/webhooks', { body: { url: 'https://example.com/h', events: ['nope'] } });
  assert.match(events.body.error.message, /^events\.0: must be one of generation\.completed, /);
});
