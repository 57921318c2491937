// The typed client (`kiln/client`) against the real server: every endpoint, typed KilnErrors, and
// the retry rules — a loopback proxy in front of the server answers 503, 429 or drops the
// connection for chosen requests and forwards the rest, so the server's own answers decide the rest.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { before, test } from 'node:test';
import { apiRoot, createKilnClient, KilnError, type KilnClientOptions } from 'kiln/client';
import { createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';
import { startTestWorker } from './_generations.ts';
import { saveWorkflow } from './_workflows.ts';

const GRAPH = {
  nodes: [
    { id: 'brief', kind: 'text', text: 'Autumn sale' },
    { id: 'p1', kind: 'prompt', output: 'code', targetLanguage: 'tsx', prompt: 'Landing section', model: 'local/coder' },
    { id: 'o1', kind: 'output', label: 'Landing section' },
  ],
  edges: [{ from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }],
};
const CODE = { type: 'code', prompt: 'A pricing card', targetLanguage: 'tsx' } as const;

let srv: TestServer;
let account: { id: string; key: string; readKey: string };

before(async () => {
  // The worker starts later (the "run()" test): until then jobs stay pending, so they can be
  // canceled and counted.
  srv = await startServer();
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  account = {
    id: a.id,
    key: (await createKey(srv.db.sql, a.id)).key,
    readKey: (await createKey(srv.db.sql, a.id, { scopes: ['read'] })).key,
  };
});

/** A bound for a call that waits on the worker: a stalled one fails the test instead of hanging the suite. */
const bound = () => AbortSignal.timeout(60_000);

/** A client whose requests are recorded (method and path), against the server or `baseUrl`. */
function client(opts: Partial<KilnClientOptions> = {}) {
  const sent: string[] = [];
  const c = createKilnClient({
    baseUrl: srv.origin,
    apiKey: account.key,
    retry: { baseDelayMs: 20 },
    ...opts,
    fetch: (r) => {
      sent.push(`${r.method} ${new URL(r.url).pathname.replace('/api/v1', '')}`);
      return fetch(r);
    },
  });
  return Object.assign(c, { sent });
}

async function generationsOf(accountId: string): Promise<number> {
  const [r] = await srv.db.sql`select count(*)::int as n from kiln_private.generations where account_id = ${accountId}`;
  return r.n;
}

type Reply = 'forward' | 'drop' | { status: number; headers?: Record<string, string>; body?: unknown };
interface Hit { method: string; path: string; idempotencyKey: string | null }

/** A loopback HTTP proxy to the server: `plan` decides each request's fate from what came before. */
async function startProxy(plan: (hit: Hit, earlier: Hit[]) => Reply) {
  const hits: Hit[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const hit = { method: req.method!, path: req.url!.replace('/api/v1', ''), idempotencyKey: (req.headers['idempotency-key'] as string) ?? null };
    const reply = plan(hit, hits.slice());
    hits.push(hit);
    if (reply === 'drop') return req.socket.destroy();
    if (reply !== 'forward') {
      res.writeHead(reply.status, { 'content-type': 'application/json', 'x-request-id': 'proxy-1', ...reply.headers });
      return res.end(JSON.stringify(reply.body ?? { error: { type: 'server_error', message: 'Briefly unavailable.' } }));
    }
    const headers = { ...req.headers } as Record<string, string>;
    delete headers.host;
    delete headers.connection;
    const upstream = await fetch(srv.origin + req.url, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
    const out: Record<string, string> = {};
    upstream.headers.forEach((v, k) => { if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(k)) out[k] = v; });
    res.writeHead(upstream.status, out);
    res.end(Buffer.from(await upstream.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  onCleanup(async () => { server.closeAllConnections(); await new Promise((r) => server.close(r)); });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

const isCreate = (h: Hit) => h.method === 'POST' && h.path === '/generations';

async function rejects(p: Promise<unknown>, expect: { status: number; type: string }): Promise<KilnError> {
  const e = await p.then(() => assert.fail('expected a KilnError'), (e) => e);
  assert.ok(e instanceof KilnError, String(e));
  assert.equal(e.status, expect.status, e.message);
  assert.equal(e.type, expect.type, e.message);
  assert.ok(e.message.length > 0);
  return e;
}

test('baseUrl: the service URL, with or without /api/v1 and trailing slashes', async () => {
  assert.equal(apiRoot('http://127.0.0.1:8787'), 'http://127.0.0.1:8787/api/v1');
  assert.equal(apiRoot('http://127.0.0.1:8787/'), 'http://127.0.0.1:8787/api/v1');
  assert.equal(apiRoot('http://127.0.0.1:8787/api/v1/'), 'http://127.0.0.1:8787/api/v1');
  assert.equal(apiRoot('https://example.test/kiln/api/v1'), 'https://example.test/kiln/api/v1');
  for (const baseUrl of [srv.origin, srv.base, `${srv.base}/`]) {
    const { data } = await client({ baseUrl }).models.list();
    assert.ok(data.some((m) => m.id === 'local/coder'));
  }
});

test('generations: create (202 body, automatic Idempotency-Key), get, cancel; usage, models', async () => {
  const c = client();
  const accepted = await c.generations.create(CODE);
  assert.deepEqual(Object.keys(accepted).sort(), ['id', 'status']);
  assert.equal(accepted.status, 'pending');
  const got = await c.generations.get(accepted.id);
  assert.deepEqual({ id: got.id, status: got.status, result: got.result, error: got.error }, { id: accepted.id, status: 'pending', result: null, error: null });
  const canceled = await c.generations.cancel(accepted.id);
  assert.equal(canceled.status, 'failed');
  assert.equal(canceled.error, 'canceled');
  const usage = await c.usage.get();
  assert.equal(usage.tier, 'pro');
  assert.equal(usage.scope, 'personal');
  assert.equal(typeof usage.used_micros, 'number');
  const models = await c.models.list();
  assert.ok(models.data.every((m) => typeof m.id === 'string' && ['image', 'text', 'svg'].includes(m.category)));
  // One request per call: nothing retried.
  assert.deepEqual(c.sent, ['POST /generations', `GET /generations/${accepted.id}`, `POST /generations/${accepted.id}/cancel`, 'GET /usage', 'GET /models']);

  // The same idempotencyKey, the same job: a second call starts nothing.
  const before = await generationsOf(account.id);
  const one = await c.generations.create({ ...CODE, prompt: 'keyed' }, { idempotencyKey: 'client-test-1' });
  const two = await c.generations.create({ ...CODE, prompt: 'keyed' }, { idempotencyKey: 'client-test-1' });
  assert.equal(two.id, one.id);
  assert.equal(await generationsOf(account.id), before + 1);
});

test('generations.list / all page through GET /generations; usage.daily adds up to usage.get', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const c = client({ apiKey: (await createKey(srv.db.sql, a.id)).key });
  const made = [];
  for (let i = 0; i < 5; i++) made.push((await c.generations.create({ ...CODE, prompt: `listed ${i}` })).id);
  const first = await c.generations.list({ limit: 2 });
  assert.equal(first.data.length, 2);
  assert.equal(typeof first.nextCursor, 'string');
  const second = await c.generations.list({ limit: 2, cursor: first.nextCursor! });
  const all = [];
  for await (const g of c.generations.all({ limit: 2, status: 'pending' })) all.push(g.id);
  assert.deepEqual(all, made.reverse(), 'newest first, every page');
  assert.deepEqual([...first.data, ...second.data].map((g) => g.id), all.slice(0, 4));
  await rejects(c.generations.list({ cursor: 'nope' }), { status: 400, type: 'invalid_request' });

  const usage = await c.usage.get();
  const daily = await c.usage.daily();
  assert.equal(daily.scope, 'personal');
  assert.ok(usage.used_micros > 0);
  assert.equal(daily.days.reduce((s, d) => s + d.spend_micros, 0), usage.used_micros);
  await rejects(c.usage.daily({ from: '2026-02-30' }), { status: 400, type: 'invalid_request' });
  for (const id of made) await c.generations.cancel(id);
});

test('without crypto.randomUUID (a plain-http page is no secure context): create still sends a fresh v4 Idempotency-Key', async (t) => {
  // An own property shadows Crypto.prototype.randomUUID for this test only.
  Object.defineProperty(globalThis.crypto, 'randomUUID', { value: undefined, configurable: true });
  t.after(() => { delete (globalThis.crypto as { randomUUID?: unknown }).randomUUID; });
  assert.equal(typeof globalThis.crypto.randomUUID, 'undefined');
  const keys: Array<string | null> = [];
  const c = createKilnClient({ baseUrl: srv.origin, apiKey: account.key, fetch: (r) => { keys.push(r.headers.get('idempotency-key')); return fetch(r); } });
  const one = await c.generations.create({ ...CODE, prompt: 'no secure context' });
  const two = await c.generations.create({ ...CODE, prompt: 'no secure context' });
  assert.notEqual(two.id, one.id);
  assert.equal(keys.length, 2);
  for (const k of keys) assert.match(k ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(keys[0], keys[1]);
  await c.generations.cancel(one.id);
  await c.generations.cancel(two.id);
});

test('workflows and runs: list, start, get, list runs, cancel, retry', async () => {
  const c = client();
  const wf = await saveWorkflow(srv, account.id, GRAPH, 'client workflow');
  const list = await c.workflows.list({ limit: 5 });
  assert.equal(list.data[0].id, wf);
  assert.equal(list.data[0].name, 'client workflow');
  const started = await c.runs.start(wf);
  assert.equal(started.status, 'pending');
  const run = await c.runs.get(wf, started.id);
  assert.equal(run.id, started.id);
  assert.equal(run.workflowId, wf);
  assert.equal(run.retryOf, null);
  const runs = await c.runs.list(wf, { limit: 10 });
  assert.deepEqual(runs.data.map((r) => r.id), [started.id]);
  const canceled = await c.runs.cancel(wf, started.id);
  assert.equal(canceled.status, 'failed');
  const retried = await c.runs.retry(wf, started.id);
  assert.equal(retried.status, 'pending');
  assert.equal((await c.runs.get(wf, retried.id)).retryOf, started.id);
  retriedRun = { wf, id: retried.id };
});
let retriedRun: { wf: string; id: string };

test('typed errors: 401, 403, 404, 400, 409, 422 and 429 insufficient_quota — one request each, never retried', async () => {
  const bad = client({ apiKey: 'kiln_live_not_a_key' });
  const e401 = await rejects(bad.usage.get(), { status: 401, type: 'unauthorized' });
  assert.match(e401.requestId ?? '', /^[\w.:-]+$/);
  assert.deepEqual(bad.sent, ['GET /usage']);

  const read = client({ apiKey: account.readKey });
  await rejects(read.generations.create(CODE), { status: 403, type: 'insufficient_scope' });
  assert.deepEqual(read.sent, ['POST /generations']);

  const c = client();
  await rejects(c.generations.get(crypto.randomUUID()), { status: 404, type: 'not_found' });
  await rejects(c.generations.get('not-a-uuid'), { status: 400, type: 'invalid_request' });
  await rejects(c.generations.create({ type: 'code', prompt: '' }), { status: 400, type: 'invalid_request' });
  await c.generations.create(CODE, { idempotencyKey: 'client-test-422' });
  await rejects(c.generations.create({ ...CODE, prompt: 'another body' }, { idempotencyKey: 'client-test-422' }), { status: 422, type: 'idempotency_conflict' });
  const pending = await c.generations.create(CODE);
  await c.generations.cancel(pending.id);
  await rejects(c.generations.cancel(pending.id), { status: 409, type: 'conflict' });
  assert.equal(c.sent.length, 8);

  const poor = await createAccount(srv.db.sql, { budgetMicros: 500 });
  const p = client({ apiKey: (await createKey(srv.db.sql, poor.id)).key });
  await rejects(p.generations.create({ type: 'image', prompt: 'p' }), { status: 429, type: 'insufficient_quota' });
  assert.deepEqual(p.sent, ['POST /generations']);
  assert.equal(await generationsOf(poor.id), 0);
});

test('503 twice, then the POST lands: one generation, every attempt with the same Idempotency-Key', async () => {
  const proxy = await startProxy((hit, earlier) =>
    isCreate(hit) && earlier.filter(isCreate).length < 2 ? { status: 503, headers: { 'retry-after': '0' } } : 'forward');
  const before = await generationsOf(account.id);
  const c = client({ baseUrl: proxy.url });
  const accepted = await c.generations.create({ ...CODE, prompt: 'through 503s' });
  assert.equal(accepted.status, 'pending');
  const creates = proxy.hits.filter(isCreate);
  assert.equal(creates.length, 3);
  assert.match(creates[0].idempotencyKey ?? '', /^[0-9a-f-]{36}$/);
  assert.deepEqual(creates.map((h) => h.idempotencyKey), Array(3).fill(creates[0].idempotencyKey));
  assert.equal(await generationsOf(account.id), before + 1);

  // A second call gets a key of its own.
  await c.generations.create({ ...CODE, prompt: 'another call' });
  const next = proxy.hits.filter(isCreate).at(-1)!;
  assert.notEqual(next.idempotencyKey, creates[0].idempotencyKey);
});

test('a dropped connection after the server accepted: the retry is the replay, still one generation', async () => {
  // The first attempt reaches the server (and creates the job), then the answer is lost.
  let lost = false;
  const proxy = await startProxy(() => 'forward');
  const c = createKilnClient({
    baseUrl: proxy.url, apiKey: account.key, retry: { baseDelayMs: 20 },
    fetch: async (r) => {
      const res = await fetch(r);
      if (!lost && r.method === 'POST') { lost = true; await res.body?.cancel(); throw new TypeError('fetch failed'); }
      return res;
    },
  });
  const runsOf = async () => (await srv.db.sql`select count(*)::int as n from kiln_private.workflow_runs where workflow_id = ${retriedRun.wf}`)[0].n;
  const runsBefore = await runsOf();
  const run = await c.runs.start(retriedRun.wf);
  const starts = proxy.hits.filter((h) => h.method === 'POST');
  assert.equal(starts.length, 2);
  assert.equal(starts[0].idempotencyKey, starts[1].idempotencyKey);
  assert.equal(await runsOf(), runsBefore + 1);
  await c.runs.cancel(retriedRun.wf, run.id);

  lost = false;
  const before = await generationsOf(account.id);
  const g = await c.generations.create({ ...CODE, prompt: 'dropped once' });
  assert.ok(g.id);
  assert.equal(proxy.hits.filter(isCreate).length, 2);
  assert.equal(await generationsOf(account.id), before + 1);
});

test('network errors: reads and keyed POSTs retried; an unkeyed POST (run retry) is not, and fails as network_error', async () => {
  const proxy = await startProxy((hit, earlier) => (earlier.some((h) => h.path === hit.path) ? 'forward' : 'drop'));
  const c = client({ baseUrl: proxy.url });
  assert.equal((await c.usage.get()).tier, 'pro');
  assert.deepEqual(proxy.hits.map((h) => h.path), ['/usage', '/usage']);
  const e = await rejects(c.runs.retry(retriedRun.wf, retriedRun.id), { status: 0, type: 'network_error' });
  assert.equal(e.requestId, null);
  assert.equal(proxy.hits.filter((h) => h.path.endsWith('/retry')).length, 1);
  // Nothing listening: bounded attempts, then network_error.
  const gone = client({ baseUrl: 'http://127.0.0.1:9', retry: { maxAttempts: 3, baseDelayMs: 5 } });
  await rejects(gone.models.list(), { status: 0, type: 'network_error' });
  assert.equal(gone.sent.length, 3);
});

test('503 every time: bounded attempts, then the 503 as a KilnError with its request id', async () => {
  const proxy = await startProxy(() => ({ status: 503 }));
  const c = client({ baseUrl: proxy.url, retry: { maxAttempts: 3, baseDelayMs: 5 } });
  const e = await rejects(c.models.list(), { status: 503, type: 'server_error' });
  assert.equal(e.requestId, 'proxy-1');
  assert.equal(proxy.hits.length, 3);
});

test('429 rate_limited waits for retry-after, abortably and within a bound', async () => {
  const limited = { status: 429, headers: { 'retry-after': '1' }, body: { error: { type: 'rate_limited', message: 'Too many requests.' } } };
  const proxy = await startProxy((_hit, earlier) => (earlier.length === 0 ? limited : 'forward'));
  const c = client({ baseUrl: proxy.url });
  const t0 = Date.now();
  assert.equal((await c.usage.get()).tier, 'pro');
  assert.ok(Date.now() - t0 >= 1000, `waited ${Date.now() - t0} ms`);
  assert.equal(proxy.hits.length, 2);

  // Aborting the wait rejects at once with the signal's reason.
  const long = await startProxy(() => ({ ...limited, headers: { 'retry-after': '30' } }));
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 100);
  const t1 = Date.now();
  await assert.rejects(client({ baseUrl: long.url }).usage.get({ signal: ac.signal }), { name: 'AbortError' });
  assert.ok(Date.now() - t1 < 2000);
  assert.equal(long.hits.length, 1);

  // Longer than maxRetryAfterSeconds: thrown at once, with retryAfter for the caller.
  const e = await rejects(client({ baseUrl: long.url, retry: { maxRetryAfterSeconds: 10 } }).usage.get(), { status: 429, type: 'rate_limited' });
  assert.equal(e.retryAfter, 30);
  assert.equal(long.hits.length, 2);
});

test('insufficient_quota (429), payment_required (402) and other 4xx are never retried', async () => {
  const answers: Reply[] = [
    { status: 429, headers: { 'retry-after': '1' }, body: { error: { type: 'insufficient_quota', message: 'Budget exhausted.' } } },
    { status: 402, body: { error: { type: 'payment_required', message: 'Team plan lapsed.' } } },
    { status: 400, body: { error: { type: 'invalid_request', message: 'Bad.' } } },
  ];
  for (const answer of answers) {
    const proxy = await startProxy(() => answer);
    const a = answer as { status: number; body: any };
    await rejects(client({ baseUrl: proxy.url }).generations.create(CODE), { status: a.status, type: a.body.error.type });
    assert.equal(proxy.hits.length, 1);
  }
});

test('run(): the settled generation through Prefer: wait (a few long requests, not polling); image → transform; a run completes', async () => {
  await startTestWorker(srv);
  const c = client();
  const seen: string[] = [];
  const done = await c.generations.run(CODE, { onStatus: (g) => seen.push(g.status), signal: bound() });
  assert.equal(done.status, 'completed');
  assert.equal(done.result?.type, 'code');
  assert.equal(seen.at(-1), 'completed');
  assert.ok(c.sent.length <= 3, c.sent.join(', '));
  assert.equal(c.sent[0], 'POST /generations');

  const image = await c.generations.run({ type: 'image', prompt: 'A red square', aspectRatio: '1:1' }, { signal: bound() });
  assert.equal(image.status, 'completed');
  assert.ok(image.result?.type === 'image' && image.result.url);
  const converted = await c.transforms.create({ source: image.result.url, op: 'convert', options: { format: 'webp' } });
  assert.equal(converted.format, 'webp');
  assert.ok(converted.url && converted.bytes! > 0);

  let run = await c.runs.get(retriedRun.wf, retriedRun.id, { wait: 20 });
  for (let i = 0; run.status !== 'completed' && run.status !== 'failed' && i < 3; i++) run = await c.runs.get(retriedRun.wf, retriedRun.id, { wait: 20 });
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.equal(run.results[0].status, 'completed');
});

test('the client imports nothing from node: (browser-safe); only openapi-fetch and its own files', () => {
  const dir = path.resolve(import.meta.dirname, '..', 'src', 'client');
  const files = fs.readdirSync(dir).filter((f) => /\.[cm]?[tj]s$/.test(f));
  assert.ok(files.includes('index.ts') && files.includes('schema.ts'));
  for (const f of files) {
    // Code only: comments may show how the client is imported.
    const text = fs.readFileSync(path.join(dir, f), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
    const specifiers = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"]([^'"]+)['"]/g)].map((m) => m[1]);
    for (const s of specifiers) assert.ok(s.startsWith('./') || s === 'openapi-fetch', `${f} imports ${s}`);
    assert.doesNotMatch(text, /\bprocess\.|\bBuffer\b|__dirname/, f);
  }
  // …and openapi-fetch itself is browser code.
  const dist = fs.readFileSync(path.resolve(import.meta.dirname, '..', 'node_modules', 'openapi-fetch', 'dist', 'index.mjs'), 'utf8');
  assert.doesNotMatch(dist, /['"]node:/);
});
