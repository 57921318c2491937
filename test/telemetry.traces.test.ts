// Issue 30, traces: `kiln api` and `kiln worker` as separate processes export to a loopback OTLP
// receiver (the API over http/protobuf, the worker over http/json). A POST /generations carrying a
// W3C traceparent yields, in that trace, the API's server span and database spans and the worker's
// job, database and provider spans; OTEL_SERVICE_NAME and OTEL_EXPORTER_OTLP_HEADERS are honoured;
// no attribute holds the API key or the prompt; the API's log lines carry the trace.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { spawnKiln, type Spawned } from './_live.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './_otlp.ts';
import { chatReply, startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';
import { api, createAccount, createKey, createTestDb, type TestDb } from './_setup.ts';
import { peerModels } from './_workflows.ts';
import { startReceiver, type Receiver } from './_webhooks.ts';
import { createWorkflow } from '../src/workflows/authoring.ts';
import { testConfig } from './_setup.ts';

let db: TestDb;
let peer: OpenAIPeer;
let otlp: OtlpReceiver;
let hooks: Receiver;
let apiProc: Spawned;
let workerProc: Spawned;
const apiLogs: any[] = [];

before(async () => {
  db = await createTestDb();
  peer = await startOpenAIPeer();
  peer.script(() => chatReply('export const x = 1;'));
  await peerModels(db.sql, peer);
  otlp = await startOtlpReceiver();
  hooks = await startReceiver();
  const otel = {
    KILN_WEBHOOK_ALLOW_PRIVATE: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=t0ken' };
  [apiProc, workerProc] = await Promise.all([
    spawnKiln('api', db.url, { ...otel, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_SERVICE_NAME: 'kiln-api-test', KILN_LOG: 'info' }, {
      stderr: (l) => { try { apiLogs.push(JSON.parse(l)); } catch { /* not a log line */ } },
    }),
    spawnKiln('worker', db.url, { ...otel, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'kiln-worker-test' }),
  ]);
});

after(async () => {
  await Promise.all([apiProc?.stop(), workerProc?.stop()]);
  await peer?.close();
  await hooks?.close();
});

test('one trace from the POST through the worker to the provider, across two processes', async () => {
  const acct = await createAccount(db.sql);
  const { key } = await createKey(db.sql, acct.id);
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  const prompt = `a secret prompt ${randomBytes(6).toString('hex')}`;
  const hook = await api(apiProc.base, key, '/webhooks', { body: { url: hooks.url, events: ['generation.completed'] } });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  const res = await api(apiProc.base, key, '/generations', {
    body: { type: 'code', model: 'peer/coder', prompt, targetLanguage: 'tsx' },
    headers: { traceparent: `00-${traceId}-${parentId}-01` },
  });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const requestId = res.headers.get('x-request-id');
  assert.ok(requestId);

  const inTrace = (s: ReceivedSpan[]) => s.filter((x) => x.traceId === traceId);
  const has = (pred: (x: ReceivedSpan) => boolean) => (s: ReceivedSpan[]) => inTrace(s).some(pred);
  await otlp.until((s) =>
    has((x) => x.service === 'kiln-api-test' && x.kind === 2)(s) &&
    has((x) => x.service === 'kiln-worker-test' && x.name === 'generation__run')(s) &&
    has((x) => x.service === 'kiln-worker-test' && x.name.startsWith('provider '))(s) &&
    has((x) => x.service === 'kiln-worker-test' && x.attributes['db.system.name'] === 'postgresql')(s) &&
    has((x) => x.name === 'webhook__deliver')(s));
  const spans = inTrace(otlp.spans);

  const server = spans.find((x) => x.service === 'kiln-api-test' && x.kind === 2)!;
  assert.equal(server.protocol, 'http/protobuf');
  assert.equal(server.parentSpanId, parentId, 'the incoming traceparent is the server span\'s parent');
  assert.equal(server.name, 'POST /api/v1/generations');
  assert.equal(server.attributes['http.request.method'], 'POST');
  assert.equal(server.attributes['http.route'], '/api/v1/generations');
  assert.equal(server.attributes['url.path'], '/api/v1/generations');
  assert.equal(server.attributes['http.response.status_code'], 202);

  const apiDb = spans.filter((x) => x.service === 'kiln-api-test' && x.attributes['db.system.name'] === 'postgresql');
  assert.ok(apiDb.length >= 1, 'a database span in the API');
  assert.ok(apiDb.some((x) => x.attributes['db.stored_procedure.name'] === 'kiln.start_generations'), JSON.stringify(apiDb.map((x) => x.name)));
  assert.ok(apiDb.every((x) => x.kind === 3 && x.parentSpanId !== ''));

  const job = spans.find((x) => x.name === 'generation__run')!;
  assert.equal(job.protocol, 'http/json');
  assert.equal(job.kind, 5);
  assert.equal(job.attributes['kiln.generation.id'], res.body.id);
  assert.equal(job.attributes['kiln.outcome'], 'completed');
  assert.ok(spans.some((x) => x.spanId === job.parentSpanId && x.service === 'kiln-api-test'), 'the job span\'s parent is a span of the API request');

  const provider = spans.find((x) => x.name.startsWith('provider '))!;
  assert.equal(provider.parentSpanId, job.spanId);
  assert.equal(provider.kind, 3);
  assert.equal(provider.attributes['kiln.provider'], 'openai');
  assert.equal(provider.attributes['kiln.model'], 'peer/coder');
  assert.equal(provider.attributes['server.address'], '127.0.0.1');
  assert.equal(provider.attributes['kiln.outcome'], 'ok');

  const workerDb = spans.filter((x) => x.service === 'kiln-worker-test' && x.attributes['db.system.name'] === 'postgresql');
  assert.ok(workerDb.some((x) => x.attributes['db.stored_procedure.name'] === 'kiln.complete_generation'), JSON.stringify(workerDb.map((x) => x.name)));

  // The webhook delivery of the completion joins the trace, naming the answer, never the URL.
  const delivery = spans.find((x) => x.name === 'webhook__deliver')!;
  assert.equal(delivery.attributes['kiln.outcome'], 'delivered');
  assert.equal(delivery.attributes['http.response.status_code'], 200);
  assert.ok(!JSON.stringify(delivery).includes(String(hooks.port)));

  // Nothing secret in any span of either process.
  for (const s of otlp.spans) {
    const text = JSON.stringify(s);
    assert.ok(!text.includes(key) && !text.includes(key.slice(-12)), `span ${s.name} holds no API key`);
    assert.ok(!text.includes(prompt), `span ${s.name} holds no prompt`);
  }
  assert.ok(otlp.headers.every((h) => h['x-collector-token'] === 't0ken'), 'OTEL_EXPORTER_OTLP_HEADERS sent');

  // The API's log lines during the request carry its trace, span and request id; one access line.
  const access = apiLogs.find((l) => l.msg === 'request' && l.request_id === requestId);
  assert.ok(access, 'an access log line for the request');
  assert.equal(access.trace_id, traceId);
  assert.equal(access.span_id, server.spanId);
  assert.equal(access.route, '/api/v1/generations');
  assert.equal(access.status, 202);
  assert.equal(access.method, 'POST');
  assert.equal(typeof access.duration_ms, 'number');
  assert.ok(!JSON.stringify(apiLogs).includes(prompt));
});

test('a request without traceparent starts its own trace; unknown paths are not named by their path', async () => {
  const res = await fetch(new URL('/api/v1/no/such/thing', apiProc.base));
  assert.equal(res.status, 404);
  await otlp.until((s) => s.some((x) => x.kind === 2 && x.attributes['url.path'] === '/api/v1/no/such/thing'));
  const span = otlp.spans.find((x) => x.kind === 2 && x.attributes['url.path'] === '/api/v1/no/such/thing')!;
  assert.equal(span.name, 'GET');
  assert.equal(span.parentSpanId, '');
  assert.equal(span.attributes['http.route'], undefined);
});

test('a workflow run\'s outputs, the later ones queued by the worker, join the trace of the POST that started it', async () => {
  const acct = await createAccount(db.sql);
  const { key } = await createKey(db.sql, acct.id);
  const graph = {
    nodes: [
      { id: 'brief', kind: 'text', text: 'Autumn sale' },
      { id: 'p1', kind: 'prompt', output: 'code', targetLanguage: 'tsx', model: 'peer/coder', prompt: 'A banner' },
      { id: 'o1', kind: 'output', label: 'Banner' },
      { id: 'p2', kind: 'prompt', output: 'code', targetLanguage: 'tsx', model: 'peer/coder', prompt: 'A footer like the banner' },
      { id: 'o2', kind: 'output', label: 'Footer' },
    ],
    edges: [{ from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }, { from: 'o1', to: 'p2' }, { from: 'p2', to: 'o2' }],
  };
  const w = await createWorkflow(db.sql, testConfig(), { accountId: acct.id, workspaceId: null, name: 'traced', graph });
  const traceId = randomBytes(16).toString('hex');
  const run = await api(apiProc.base, key, `/workflows/${w.id}/runs`, { method: 'POST', headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` } });
  assert.equal(run.status, 202, JSON.stringify(run.body));
  await otlp.until((s) => s.filter((x) => x.traceId === traceId && x.name === 'generation__run').length === 2);
  const jobs = otlp.spans.filter((x) => x.traceId === traceId && x.name === 'generation__run');
  assert.ok(jobs.every((j) => j.attributes['kiln.outcome'] === 'completed'));
});

test('concurrent requests each trace their own queries, under their own server span (the context travels with the request)', async () => {
  const acct = await createAccount(db.sql);
  const { key } = await createKey(db.sql, acct.id);
  const graph = {
    nodes: [{ id: 'p1', kind: 'prompt', output: 'code', targetLanguage: 'tsx', model: 'peer/coder', prompt: 'A card' }, { id: 'o1', kind: 'output', label: 'Card' }],
    edges: [{ from: 'p1', to: 'o1' }],
  };
  const tp = () => {
    const id = randomBytes(16).toString('hex');
    return { id, header: `00-${id}-${randomBytes(8).toString('hex')}-01` };
  };
  // Saves run in a transaction of their own (no batcher): each trace must hold exactly its own
  // queries. Usage reads are batched: a batch's query joins one of its requests' traces.
  const saves = Array.from({ length: 12 }, tp);
  const reads = Array.from({ length: 12 }, tp);
  const answers = await Promise.all([
    ...saves.map((t, i) => api(apiProc.base, key, '/workflows', { body: { name: `concurrent ${i}`, graph }, headers: { traceparent: t.header } })),
    ...reads.map((t) => api(apiProc.base, key, '/usage', { headers: { traceparent: t.header } })),
  ]);
  for (const a of answers) assert.ok(a.status === 201 || a.status === 200, JSON.stringify(a.body));
  const all = [...saves, ...reads].map((t) => t.id);
  await otlp.until((s) => all.every((id) => s.some((x) => x.traceId === id && x.kind === 2)));
  await new Promise((r) => setTimeout(r, 500)); // the last database spans' export
  const api_ = otlp.spans.filter((x) => x.service === 'kiln-api-test');
  const dbNames = (id: string) => api_.filter((x) => x.traceId === id && x.attributes['db.system.name'] === 'postgresql').map((x) => x.name).sort();
  for (const id of all) {
    const server = api_.filter((x) => x.traceId === id && x.kind === 2);
    assert.equal(server.length, 1, 'one server span per request');
    for (const d of api_.filter((x) => x.traceId === id && x.attributes['db.system.name'] === 'postgresql')) {
      assert.equal(d.parentSpanId, server[0]!.spanId, `${d.name} is a child of its own request's server span`);
    }
  }
  // The authorization is batched across the saves too: compare the queries each save ran alone.
  const own = (id: string) => dbNames(id).filter((n) => n !== 'SELECT kiln.authorize_requests');
  const first = own(saves[0]!.id);
  assert.ok(first.includes('SELECT kiln.create_workflow'), `a save's trace holds its queries: ${JSON.stringify(first)}`);
  for (const t of saves) assert.deepEqual(own(t.id), first, 'every save traced exactly its own queries, none of another request');
  assert.ok(saves.some((t) => dbNames(t.id).includes('SELECT kiln.authorize_requests')), 'the batched authorization joined a trace');
  const readQueries = reads.reduce((n, t) => n + dbNames(t.id).length, 0);
  assert.ok(readQueries >= 1, 'the batched reads joined a trace');
});
