// Issue 30, metrics: a real `kiln serve` (real Postgres, HTTP server and worker) with
// KILN_METRICS_PORT is scraped, parsed with a Prometheus text-format parser, and its counters must
// move by exactly what was done: completed, failed and canceled generations, a rate limit, an
// exhausted budget, a lapsed plan, an MCP tool call, a webhook delivery. `promtool check metrics`
// (Debian's prometheus package) must find no problem. Fuzzed paths and model names must not add a
// single series.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { startTestIssuer, type TestIssuer } from './_issuer.ts';
import { spawnKiln, type Spawned } from './_live.ts';
import { connectV2, link } from './_mcp.ts';
import { chatReply, errorReply, startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';
import { api, createAccount, createKey, createTestDb, onCleanup, testConfig, type TestDb } from './_setup.ts';
import { createWorkflow } from '../src/workflows/authoring.ts';
import { startReceiver, type Receiver } from './_webhooks.ts';
import { startOtlpReceiver, type OtlpReceiver } from './_otlp.ts';
import { peerModels, userText } from './_workflows.ts';

const TOKEN = 'metrics-test-token';

let db: TestDb;
let peer: OpenAIPeer;
let rcv: Receiver;
let iss: TestIssuer;
let kiln: Spawned;
let base: string;
let mcpUrl: string;
let otlp: OtlpReceiver;

async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

before(async () => {
  db = await createTestDb();
  peer = await startOpenAIPeer();
  peer.script((req) => {
    const text = userText(req);
    if (text.includes('hang')) return { hang: true };
    if (text.includes('refuse')) return errorReply(400, 'invalid_request_error', 'content_policy_violation');
    return chatReply('export const x = 1;');
  });
  await peerModels(db.sql, peer);
  rcv = await startReceiver();
  // Traces on as well (the MCP tool span is checked here, where an MCP client is at hand).
  otlp = await startOtlpReceiver();
  iss = await startTestIssuer();
  onCleanup(() => iss.close());
  const port = await freePort();
  mcpUrl = `http://127.0.0.1:${port}/mcp`;
  iss.audience = mcpUrl;
  kiln = await spawnKiln('serve', db.url, {
    PORT: String(port), MCP_URL: mcpUrl, OIDC_ISSUER: iss.issuer,
    KILN_METRICS_PORT: '0', KILN_METRICS_TOKEN: TOKEN, KILN_WEBHOOK_ALLOW_PRIVATE: 'true',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  base = kiln.base;
  assert.ok(kiln.metrics, 'kiln serve printed its metrics URL');
});

after(async () => {
  await kiln?.stop();
  await peer?.close();
  await rcv?.close();
});

interface Family { name: string; type: string; metrics: Array<{ labels?: Record<string, string>; value?: string }> }

async function scrape(): Promise<{ text: string; families: Map<string, Family> }> {
  const res = await fetch(kiln.metrics!, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const families = new Map<string, Family>();
  for (const f of parsePrometheusTextFormat(text) as Family[]) families.set(f.name, f);
  return { text, families };
}

/** The value of one counter or gauge series (0 when absent). */
function value(fams: Map<string, Family>, name: string, labels: Record<string, string>): number {
  const f = fams.get(name);
  const m = f?.metrics.find((x) => Object.entries(labels).every(([k, v]) => x.labels?.[k] === v));
  return m ? Number(m.value) : 0;
}

/**
 * A histogram's `_count` sample for exactly these labels, read from the text: the parser folds
 * every series of a labelled histogram into one (it keeps neither labels nor counts).
 */
function histogramCount(text: string, name: string, labels: Record<string, string>): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).sort().join(',');
  for (const line of text.split('\n')) {
    const m = /^(\w+)_count\{([^}]*)\} (\S+)$/.exec(line);
    if (m && m[1] === name && m[2]!.split(',').sort().join(',') === want) return Number(m[3]);
  }
  return 0;
}

/** Polls until `pred` holds on a scrape. */
async function scrapeUntil(pred: (f: Map<string, Family>) => boolean, what: string, timeoutMs = 20_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const s = await scrape();
    if (pred(s.families)) return s;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function waitDone(key: string, id: string) {
  const end = Date.now() + 20_000;
  for (;;) {
    const r = await api(base, key, `/generations/${id}`);
    if (r.body.status === 'completed' || r.body.status === 'failed') return r.body;
    if (Date.now() > end) throw new Error(`generation ${id} did not settle`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('/metrics: its own listener, Bearer KILN_METRICS_TOKEN or 401, 404 elsewhere', async () => {
  assert.notEqual(new URL(kiln.metrics!).port, new URL(base).port);
  assert.equal((await fetch(kiln.metrics!)).status, 401);
  assert.equal((await fetch(kiln.metrics!, { headers: { authorization: 'Bearer wrong' } })).status, 401);
  assert.equal((await fetch(new URL('/other', kiln.metrics!))).status, 404);
  // The API port does not serve it.
  assert.equal((await fetch(new URL('/metrics', base))).status, 404);
});

test('counters move by exactly what was done', async () => {
  const acct = await createAccount(db.sql);
  const { key } = await createKey(db.sql, acct.id);
  const hook = await api(base, key, '/webhooks', { body: { url: rcv.url, events: ['generation.completed'] } });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));

  const first = await scrape();
  const before = first.families;

  // Completed, failed (the provider refuses: not retried), canceled (the provider hangs).
  const body = (prompt: string) => ({ type: 'code', model: 'peer/coder', prompt, targetLanguage: 'tsx' });
  const ok = await api(base, key, '/generations', { body: body('a button') });
  const bad = await api(base, key, '/generations', { body: body('refuse this') });
  const hung = await api(base, key, '/generations', { body: body('hang here') });
  for (const r of [ok, bad, hung]) assert.equal(r.status, 202, JSON.stringify(r.body));
  assert.equal((await waitDone(key, ok.body.id)).status, 'completed');
  assert.equal((await waitDone(key, bad.body.id)).status, 'failed');
  for (let i = 0; i < 200; i++) {
    if ((await api(base, key, `/generations/${hung.body.id}`)).body.status === 'processing') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const cancel = await api(base, key, `/generations/${hung.body.id}/cancel`, { method: 'POST' });
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body));

  // Rejections: 429 rate_limited (a key of 1 rpm), 429 insufficient_quota, 402 payment_required.
  const slow = (await createKey(db.sql, acct.id, { rpm: 1 })).key;
  assert.equal((await api(base, slow, '/usage')).status, 200);
  const limited = await api(base, slow, '/usage');
  assert.equal(limited.status, 429);
  assert.equal(limited.body.error.type, 'rate_limited');
  const poor = await createAccount(db.sql, { budgetMicros: 1 });
  const quota = await api(base, (await createKey(db.sql, poor.id)).key, '/generations', { body: body('p') });
  assert.equal(quota.status, 429);
  assert.equal(quota.body.error.type, 'insufficient_quota');
  const owner = await createAccount(db.sql);
  const [ws] = await db.sql`select * from kiln.create_workspace('Studio', ${owner.id})`;
  await db.sql`select kiln.set_workspace_plan(${ws!.id}, 'lapsed', null, false)`;
  const lapsed = await api(base, (await createKey(db.sql, owner.id, { workspaceId: ws!.id })).key, '/generations', { body: body('p') });
  assert.equal(lapsed.status, 402);
  const unauth = await api(base, 'kiln_nope', '/usage');
  assert.equal(unauth.status, 401);

  // One MCP tool call.
  await link(db.sql, iss.issuer, 'metrics-user', acct.id);
  const client = await connectV2(mcpUrl, await iss.sign({ sub: 'metrics-user' }));
  await client.callTool({ name: 'get_usage', arguments: {} });
  await client.callTool({ name: 'get_generation', arguments: { id: 'not-a-uuid' } });
  await client.close();
  await otlp.until((s) => s.some((x) => x.name === 'tools/call get_usage') && s.some((x) => x.name === 'tools/call get_generation'));
  const tool = otlp.spans.find((x) => x.name === 'tools/call get_usage')!;
  assert.equal(tool.attributes['gen_ai.tool.name'], 'get_usage');
  assert.equal(tool.attributes['mcp.method.name'], 'tools/call');
  assert.equal(tool.status.code, 0);
  const refused = otlp.spans.find((x) => x.name === 'tools/call get_generation')!;
  assert.equal(refused.status.code, 2, 'a tool error sets the span status to error');
  assert.equal(refused.attributes['error.type'], 'invalid_request');
  assert.ok(!JSON.stringify(refused).includes('not-a-uuid'), 'not the arguments');
  // The MCP request's server span is its parent.
  assert.ok(otlp.spans.some((x) => x.spanId === tool.parentSpanId && x.kind === 2 && x.attributes['http.route'] === '/mcp'));

  const after = await scrapeUntil(
    (f) => value(f, 'kiln_webhook_deliveries_total', { outcome: 'delivered' }) >= 1 && value(f, 'kiln_generations_total', { status: 'canceled' }) >= 1,
    'the webhook delivery',
  );
  const a = after.families;
  const delta = (name: string, labels: Record<string, string>) => value(a, name, labels) - value(before, name, labels);
  const countDelta = (name: string, labels: Record<string, string>) => histogramCount(after.text, name, labels) - histogramCount(first.text, name, labels);

  assert.equal(delta('kiln_generations_total', { type: 'code', model: 'peer/coder', status: 'completed' }), 1);
  assert.equal(delta('kiln_generations_total', { type: 'code', model: 'peer/coder', status: 'failed' }), 1);
  assert.equal(delta('kiln_generations_total', { type: 'code', model: 'peer/coder', status: 'canceled' }), 1);
  assert.equal(countDelta('kiln_generation_run_seconds', { type: 'code', model: 'peer/coder' }), 2, 'completed + failed runs');
  assert.equal(countDelta('kiln_generation_queue_seconds', { type: 'code' }), 3, 'three executions started');
  // peer/coder: 12 input tokens × 1 + 34 output tokens × 2 = 80 micros, markup 1.
  assert.equal(delta('kiln_spend_micros_total', { model: 'peer/coder' }), 80);
  assert.equal(delta('kiln_provider_requests_total', { provider: 'openai', outcome: 'ok' }), 1);
  assert.equal(delta('kiln_provider_requests_total', { provider: 'openai', outcome: 'rejected' }), 1);
  assert.equal(delta('kiln_provider_requests_total', { provider: 'openai', outcome: 'aborted' }), 1, 'the canceled call');
  assert.equal(delta('kiln_rejections_total', { reason: 'rate_limited' }), 1);
  assert.equal(delta('kiln_rejections_total', { reason: 'insufficient_quota' }), 1);
  assert.equal(delta('kiln_rejections_total', { reason: 'payment_required' }), 1);
  assert.equal(delta('kiln_rejections_total', { reason: 'unauthorized' }), 1);
  assert.equal(delta('kiln_rejections_total', { reason: 'invalid_request' }), 1, 'the MCP call with a bad id');
  assert.equal(delta('kiln_mcp_tool_calls_total', { tool: 'get_usage', outcome: 'ok' }), 1);
  assert.equal(delta('kiln_mcp_tool_calls_total', { tool: 'get_generation', outcome: 'error' }), 1);
  assert.equal(delta('kiln_webhook_deliveries_total', { outcome: 'delivered' }), 1);
  assert.equal(delta('kiln_http_requests_total', { method: 'POST', route: '/api/v1/generations', status: '202' }), 3);
  assert.equal(delta('kiln_http_requests_total', { method: 'POST', route: '/api/v1/generations/{id}/cancel', status: '200' }), 1);
  assert.equal(delta('kiln_http_requests_total', { method: 'GET', route: '/api/v1/usage', status: '429' }), 1);
  assert.equal(countDelta('kiln_http_request_duration_seconds', { method: 'POST', route: '/api/v1/generations' }), 5, 'three accepted, one over quota, one lapsed: each timed');

  // Gauges from the database, and the pools.
  assert.equal(value(a, 'kiln_workers_alive', {}), 1);
  assert.ok(a.has('kiln_webhook_backlog'));
  assert.ok(a.get('kiln_jobs_waiting')!.metrics.some((m) => m.labels?.task === 'generation__run'));
  assert.ok(a.get('kiln_jobs_oldest_waiting_seconds'));
  assert.equal(value(a, 'kiln_db_pool_connections', { pool: 'main', state: 'max' }), 10);
  assert.equal(value(a, 'kiln_db_pool_connections', { pool: 'worker', state: 'max' }), 10);
  assert.ok(a.has('process_cpu_seconds_total') && a.has('nodejs_heap_size_total_bytes'));
  assert.ok(!a.has('nodejs_active_handles_total'), 'gauges named *_total are left out');

  // No label value is a client's: no key, email, prompt or URL anywhere in the exposition.
  for (const secret of [key, acct.email, 'a button', 'hang here', rcv.url, TOKEN]) {
    assert.ok(!after.text.includes(secret), `the exposition does not contain ${secret}`);
  }
  // A port is digits: a sample's value may hold them by chance, so only the labels are searched.
  const labels = [...after.text.matchAll(/\{[^}]*\}/g)].map((m) => m[0]).join('\n');
  assert.ok(!labels.includes(String(rcv.port)), `no label holds the receiver's port ${rcv.port}`);

  // promtool, where installed (.ci/run installs Debian's prometheus package).
  const promtool = spawnSync('promtool', ['--version']);
  if (promtool.error) {
    process.stdout.write('# promtool not found: `promtool check metrics` skipped (apt-get install prometheus)\n');
  } else {
    const out = spawnSync('promtool', ['check', 'metrics'], { input: after.text, encoding: 'utf8' });
    assert.equal(out.status, 0, `promtool check metrics: ${out.stdout}${out.stderr}`);
    assert.equal((out.stdout + out.stderr).trim(), '', `promtool found problems: ${out.stdout}${out.stderr}`);
  }
});

test('a generation the worker fails as it starts (its account blocked meanwhile) is counted failed, with its model', async () => {
  const acct = await createAccount(db.sql);
  const { key } = await createKey(db.sql, acct.id);
  // One parallel slot, held by a call that hangs: the next generation waits for it, pending.
  await db.sql`update kiln_private.accounts set parallel_slots = 1 where id = ${acct.id}`;
  const body = (prompt: string) => ({ type: 'code', model: 'peer/coder', prompt, targetLanguage: 'tsx' });
  const hung = await api(base, key, '/generations', { body: body('hang on') });
  assert.equal(hung.status, 202, JSON.stringify(hung.body));
  for (let i = 0; i < 200; i++) {
    if ((await api(base, key, `/generations/${hung.body.id}`)).body.status === 'processing') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const waiting = await api(base, key, '/generations', { body: body('after the hang') });
  assert.equal(waiting.status, 202, JSON.stringify(waiting.body));
  const before = (await scrape()).families;
  const failed = { type: 'code', model: 'peer/coder', status: 'failed' };
  // Blocked while it waits; the cancel frees the slot, and the worker's start fails it.
  await db.sql`update kiln_private.accounts set tier = 'blocked' where id = ${acct.id}`;
  assert.equal((await api(base, key, `/generations/${hung.body.id}/cancel`, { method: 'POST' })).status, 200);
  const done = await waitDone(key, waiting.body.id);
  assert.equal(done.status, 'failed');
  assert.match(done.error, /cannot run generations/);
  const after = (await scrapeUntil((f) => value(f, 'kiln_generations_total', failed) > value(before, 'kiln_generations_total', failed), 'the failure counted')).families;
  assert.equal(value(after, 'kiln_generations_total', failed) - value(before, 'kiln_generations_total', failed), 1);
});

test('a canceled run\'s outputs are counted by the process that served the cancel: in flight as canceled, not started as failed', async () => {
  const acct = await createAccount(db.sql);
  const { key } = await createKey(db.sql, acct.id);
  // One parallel slot: whichever output takes it first hangs there (both calls hang), and the
  // other waits for it, not started.
  await db.sql`update kiln_private.accounts set parallel_slots = 1 where id = ${acct.id}`;
  const graph = {
    nodes: [
      { id: 'p1', kind: 'prompt', output: 'code', targetLanguage: 'tsx', model: 'peer/coder', prompt: 'hang in the banner' },
      { id: 'o1', kind: 'output', label: 'Banner' },
      { id: 'p2', kind: 'prompt', output: 'code', targetLanguage: 'tsx', model: 'peer/coder', prompt: 'hang in the footer' },
      { id: 'o2', kind: 'output', label: 'Footer' },
    ],
    edges: [{ from: 'p1', to: 'o1' }, { from: 'p2', to: 'o2' }],
  };
  const w = await createWorkflow(db.sql, testConfig(), { accountId: acct.id, workspaceId: null, name: 'to cancel', graph });
  const run = await api(base, key, `/workflows/${w.id}/runs`, { method: 'POST' });
  assert.equal(run.status, 202, JSON.stringify(run.body));
  for (let i = 0; ; i++) {
    const [{ n }] = await db.sql`select count(*)::int as n from kiln_private.workflow_run_outputs where run_id = ${run.body.id} and status = 'running'`;
    if (n === 1) break;
    assert.ok(i < 400, 'one output started');
  }
  // The other one has met the full slot (its generation waits, pending) or not been picked up yet.
  for (let i = 0; ; i++) {
    const [{ n }] = await db.sql`select count(*)::int as n from kiln_private.workflow_run_outputs o join kiln_private.generations g on g.id = o.generation_id
      where o.run_id = ${run.body.id} and o.status = 'queued' and g.status = 'pending'`;
    if (n === 1) break;
    assert.ok(i < 400, 'the other output waits');
    await new Promise((r) => setTimeout(r, 50));
  }
  const before = (await scrape()).families;
  const canceled = await api(base, key, `/workflows/${w.id}/runs/${run.body.id}/cancel`, { method: 'POST' });
  assert.equal(canceled.status, 200, JSON.stringify(canceled.body));
  assert.deepEqual(Object.keys(canceled.body).includes('settled'), false, 'the run body clients read is unchanged');
  const after = (await scrape()).families;
  const delta = (status: string) => value(after, 'kiln_generations_total', { type: 'code', model: 'peer/coder', status }) -
    value(before, 'kiln_generations_total', { type: 'code', model: 'peer/coder', status });
  assert.equal(delta('canceled'), 1, 'the output in flight');
  assert.equal(delta('failed'), 1, 'the output not started');
  const [{ ended }] = await db.sql`select count(*)::int as ended from kiln_private.generations where run_id = ${run.body.id} and status = 'failed'`;
  assert.equal(ended, 2, 'both generations ended');
});

test('outputs a failing run abandons are counted failed by the worker that failed it; a retry counts the outputs it cancels in flight', async () => {
  const acct = await createAccount(db.sql);
  const { key } = await createKey(db.sql, acct.id);
  const code = (status: string) => ({ type: 'code', model: 'peer/coder', status });
  // One slot, and both calls refused: whichever output runs first fails the run, and the other,
  // not started, is abandoned by that same statement (in SQL, under the worker's call).
  await db.sql`update kiln_private.accounts set parallel_slots = 1 where id = ${acct.id}`;
  const prompt = (id: string, text: string) => ({ id, kind: 'prompt', output: 'code', targetLanguage: 'tsx', model: 'peer/coder', prompt: text });
  const graph = (a: string, b: string) => ({
    nodes: [prompt('p1', a), { id: 'o1', kind: 'output', label: 'One' }, prompt('p2', b), { id: 'o2', kind: 'output', label: 'Two' }],
    edges: [{ from: 'p1', to: 'o1' }, { from: 'p2', to: 'o2' }],
  });
  const before = (await scrape()).families;
  const w = await createWorkflow(db.sql, testConfig(), { accountId: acct.id, workspaceId: null, name: 'refused twice', graph: graph('refuse one', 'refuse two') });
  const run = await api(base, key, `/workflows/${w.id}/runs`, { method: 'POST' });
  assert.equal(run.status, 202, JSON.stringify(run.body));
  const delta = (after: Map<string, Family>, status: string) =>
    value(after, 'kiln_generations_total', code(status)) - value(before, 'kiln_generations_total', code(status));
  const after = (await scrapeUntil((f) => delta(f, 'failed') >= 2, 'both outputs counted failed')).families;
  const [{ failed, abandoned }] = await db.sql`select count(*) filter (where status = 'failed')::int as failed, count(*) filter (where status = 'abandoned')::int as abandoned
    from kiln_private.workflow_run_outputs where run_id = ${run.body.id}`;
  assert.deepEqual({ failed, abandoned }, { failed: 1, abandoned: 1 }, 'one output failed, the other was abandoned');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(delta((await scrape()).families, 'failed'), 2, 'each counted once');
  assert.equal(delta(after, 'completed') + delta(after, 'canceled'), 0);

  // Two slots: one output hangs in flight while the other is refused, so the run fails with an
  // output still running. Its retry cancels that output first (it would run twice): counted
  // canceled by the process that served the retry, before it answers.
  await db.sql`update kiln_private.accounts set parallel_slots = 2 where id = ${acct.id}`;
  const w2 = await createWorkflow(db.sql, testConfig(), { accountId: acct.id, workspaceId: null, name: 'hang and refuse', graph: graph('hang here', 'refuse here') });
  const run2 = await api(base, key, `/workflows/${w2.id}/runs`, { method: 'POST' });
  assert.equal(run2.status, 202, JSON.stringify(run2.body));
  for (let i = 0; ; i++) {
    const [{ status, running }] = await db.sql`select r.status, (select count(*)::int from kiln_private.workflow_run_outputs o where o.run_id = r.id and o.status = 'running') as running
      from kiln_private.workflow_runs r where r.id = ${run2.body.id}`;
    if (status === 'failed' && running === 1) break;
    assert.ok(i < 400, `the run failed with one output in flight (${status}, ${running} running)`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const mid = (await scrape()).families;
  const retry = await api(base, key, `/workflows/${w2.id}/runs/${run2.body.id}/retry`, { method: 'POST' });
  assert.equal(retry.status, 202, JSON.stringify(retry.body));
  const end = (await scrape()).families;
  assert.equal(value(end, 'kiln_generations_total', code('canceled')) - value(mid, 'kiln_generations_total', code('canceled')), 1, 'the output the retry canceled');
  // The retry's own run hangs too: cancel it, so nothing is left in flight. Its refused output
  // may have failed it first (409): then the output still in flight is canceled directly.
  const cancel = await api(base, key, `/workflows/${w2.id}/runs/${retry.body.id}/cancel`, { method: 'POST' });
  assert.ok(cancel.status === 200 || cancel.status === 409, JSON.stringify(cancel.body));
  if (cancel.status === 409) {
    await db.sql.begin(async (tx) => {
      await tx`select 1 from kiln_private.workflow_runs where id = ${retry.body.id} for update`;
      await tx`select kiln_private.cancel_generation(id) from kiln_private.generations where run_id = ${retry.body.id} and status not in ('completed', 'failed')`;
    });
  }
});

test('the Grafana dashboard and the alert rules name only metrics a process exports; promtool check rules passes', async () => {
  const { families } = await scrape();
  const root = path.resolve(import.meta.dirname, '..');
  const dashboard = JSON.parse(fs.readFileSync(path.join(root, 'docs/grafana/kiln.json'), 'utf8'));
  const exprs: string[] = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr));
  const alerts = fs.readFileSync(path.join(root, 'docs/prometheus/alerts.yml'), 'utf8');
  const names = new Set([...exprs.join('\n').matchAll(/\b((?:kiln|process|nodejs)_\w+)/g), ...alerts.matchAll(/\b(kiln_\w+)/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, '')));
  assert.ok(names.size >= 15);
  for (const n of names) assert.ok(families.has(n), `${n} is exported`);
  if (spawnSync('promtool', ['--version']).error) {
    process.stdout.write('# promtool not found: `promtool check rules` skipped (apt-get install prometheus)\n');
    return;
  }
  const out = spawnSync('promtool', ['check', 'rules', path.join(root, 'docs/prometheus/alerts.yml')], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stdout + out.stderr);
  assert.match(out.stdout, /SUCCESS: 5 rules found/);
});

test('fuzzed paths and model names add no series', async () => {
  const acct = await createAccount(db.sql);
  const { key } = await createKey(db.sql, acct.id);
  const rand = () => Math.random().toString(36).slice(2, 10);
  const round = async () => {
    for (let i = 0; i < 15; i++) {
      await api(base, key, `/${rand()}/${rand()}`);
      await api(base, key, `/generations/${rand()}`);
      await api(base, key, '/generations', { body: { type: 'code', model: `evil/${rand()}`, prompt: rand() } });
      await fetch(new URL(`/${rand()}?x=${rand()}`, base));
    }
  };
  await round();
  const first = await scrape();
  const series = (text: string) => text.split('\n').filter((l) => l.startsWith('kiln_') && !l.startsWith('kiln_db_pool') && !/^kiln_(jobs|webhook_backlog|workers)/.test(l)).map((l) => l.replace(/ [^ ]+$/, ''));
  await round();
  const second = await scrape();
  assert.deepEqual(series(second.text).sort(), series(first.text).sort(), 'the second round of random input added no series');
  const routes = new Set(second.families.get('kiln_http_requests_total')!.metrics.map((m) => m.labels!.route));
  assert.ok(routes.has('unmatched'));
  for (const r of routes) assert.ok(r === 'unmatched' || /^\/[a-z0-9/{}_.*-]*$/i.test(r), `route label ${r} is a template`);
  assert.ok(!second.text.includes('evil/'), 'an unknown model creates no series');
});
