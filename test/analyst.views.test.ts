// The analyst views in `kiln` and every example query of db/examples/analyst.sql, run against
// seeded generations and ledger rows (exactly as a psql user would run them).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { createGeneration } from '../src/generations/create.ts';
import type { Caller } from '../src/generations/service.ts';
import { createAccount, createKey, startServer, type TestServer } from './_setup.ts';

const EXAMPLES = path.resolve(import.meta.dirname, '..', 'db', 'examples', 'analyst.sql');
const VIEWS = ['daily_spend', 'daily_generations', 'generation_latency', 'generation_timings', 'batches', 'usage_by_end_user'];

let srv: TestServer;
const queries = new Map<string, string>();
let alice: string;
let aliceKey: string;
let ws: string;

/** Splits the file on `-- name:` markers; each chunk is one statement. */
function loadExamples() {
  const text = fs.readFileSync(EXAMPLES, 'utf8');
  for (const chunk of text.split(/^-- name: /m).slice(1)) {
    const name = chunk.slice(0, chunk.indexOf('\n')).trim();
    queries.set(name, chunk.slice(chunk.indexOf('\n') + 1));
  }
}

async function seed(caller: Caller, body: Record<string, unknown>, outcome: { cost?: number; fail?: boolean; queuedMs: number; processingMs: number } | null) {
  const { id } = await createGeneration(srv.ctx, caller, body);
  if (!outcome) return id;
  if (outcome.fail) await srv.db.sql`select kiln.fail_generation(${id}, 'upstream said no')`;
  else {
    await srv.db.sql`select kiln.complete_generation(${id}, ${srv.db.sql.json({ type: 'code', code: 'x', structuredOutput: null })}, ${outcome.cost ?? 0}, null)`;
  }
  // Known latencies: started and finished relative to creation.
  await srv.db.sql`
    update kiln_private.generations
      set started_at = created_at + make_interval(secs => ${outcome.queuedMs / 1000}),
          finished_at = created_at + make_interval(secs => ${(outcome.queuedMs + outcome.processingMs) / 1000})
    where id = ${id}`;
  return id;
}

before(async () => {
  loadExamples();
  srv = await startServer();
  // No worker runs in this file: outcomes are settled through the same SQL functions the worker uses.
  await srv.db.sql`delete from graphile_worker._private_jobs`;
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  alice = a.id;
  const k = await createKey(srv.db.sql, a.id);
  aliceKey = k.id;
  const owner = await createAccount(srv.db.sql);
  const [w] = await srv.db.sql`select * from kiln.create_workspace('Studio', ${owner.id})`;
  ws = w.id;
  await srv.db.sql`select kiln.set_workspace_plan(${ws}, 'active', null, true)`;
  const ownerKey = await createKey(srv.db.sql, owner.id, { workspaceId: ws });

  const api = (accountId: string, keyId: string, workspaceId: string | null = null): Caller => ({ accountId, keyId, workspaceId, origin: 'api' });
  const code = { type: 'code', prompt: 'p', targetLanguage: 'json' };
  const image = { type: 'image', prompt: 'p' };
  // alice: 3 completed code (cost 10, 20, 30), 1 failed image, 1 MCP image (1000), 1 still pending.
  // Two of them for the app's end user cust-a, one for cust-b (docs/api.md, "Attribution").
  await seed(api(alice, aliceKey), { ...code, endUser: 'cust-a', metadata: { project: 'alpha' } }, { cost: 10, queuedMs: 5, processingMs: 100 });
  await seed(api(alice, aliceKey), { ...code, endUser: 'cust-a' }, { cost: 20, queuedMs: 7, processingMs: 200 });
  await seed(api(alice, aliceKey), { ...code, endUser: 'cust-b' }, { cost: 30, queuedMs: 9, processingMs: 300 });
  await seed(api(alice, aliceKey), image, { fail: true, queuedMs: 3, processingMs: 50 });
  await seed({ accountId: alice, keyId: null, workspaceId: null, origin: 'mcp' }, image, { cost: 1000, queuedMs: 4, processingMs: 400 });
  await seed(api(alice, aliceKey), image, null);
  // owner: 2 completed images on the Team pool.
  await seed(api(owner.id, ownerKey.id, ws), image, { cost: 1000, queuedMs: 6, processingMs: 600 });
  await seed(api(owner.id, ownerKey.id, ws), image, { cost: 1000, queuedMs: 8, processingMs: 800 });
});

test('every analyst view exists in kiln and carries a comment', async () => {
  for (const v of VIEWS) {
    const [r] = await srv.db.sql`select obj_description(${`kiln.${v}`}::regclass, 'pg_class') as c`;
    assert.ok(r.c && r.c.length > 20, v);
  }
});

test('the example file has every query the README shows', () => {
  assert.deepEqual([...queries.keys()], [
    'spend-per-day', 'top-accounts-this-month', 'spend-by-key', 'top-end-users-this-month', 'spend-by-workspace', 'batch-share', 'batches-this-week', 'model-mix',
    'origin-share', 'latency-per-day', 'latency-last-7-days', 'slowest-generations', 'upstream-health',
  ]);
});

const run = (name: string) => srv.db.sql.unsafe(queries.get(name)!);

test('spend-per-day: settled spend, counts by state and open reservations', async () => {
  const rows = await run('spend-per-day');
  assert.equal(rows.length, 1);
  const r = rows[0]!;
  assert.equal(Number(r.spend_usd), (10 + 20 + 30 + 1000 + 2000) / 1e6);
  assert.equal(Number(r.charges), 8);
  assert.equal(Number(r.settled), 6);
  assert.equal(Number(r.released), 1);
  assert.equal(Number(r.still_reserved_usd), 1000 / 1e6, 'the pending image is still reserved');
});

test('top-accounts-this-month and spend-by-key split spend by account, origin and key', async () => {
  const top = await run('top-accounts-this-month');
  assert.equal(top.length, 2);
  const a = top.find((r) => r.account_id === alice)!;
  assert.equal(Number(a.spend_usd), 1060 / 1e6);
  assert.equal(Number(a.api_usd), 60 / 1e6);
  assert.equal(Number(a.mcp_usd), 1000 / 1e6);
  assert.equal(Number(top[0]!.spend_usd), 2000 / 1e6, 'ordered by spend');
  const byKey = await run('spend-by-key');
  const k = byKey.find((r) => r.key_id === aliceKey && r.origin === 'api')!;
  assert.equal(Number(k.spend_usd), 60 / 1e6);
  assert.ok(byKey.some((r) => r.key_id === null && r.origin === 'mcp'));
});

test('top-end-users-this-month: spend per end user, from the roll-up behind kiln.usage_by_end_user', async () => {
  const rows = await run('top-end-users-this-month');
  assert.deepEqual(rows.map((r) => [r.account_id, r.workspace_id, r.end_user, Number(r.spend_usd), Number(r.charges), Number(r.in_flight)]), [
    [alice, null, 'cust-a', 30 / 1e6, 2, 0],
    [alice, null, 'cust-b', 30 / 1e6, 1, 0],
  ]);
  // It is the roll-up's: what the ledger says, per end user.
  const [r] = await srv.db.sql`select sum(spend_micros)::int as spend, sum(settled_charges)::int as settled
                               from kiln_private.charge_end_user_days where pool_id = ${alice} and end_user = 'cust-a'`;
  assert.deepEqual({ ...r }, { spend: 30, settled: 2 });
  const [t] = await srv.db.sql`select end_user, metadata from kiln.generation_timings where account_id = ${alice} and cost_micros = 10`;
  assert.deepEqual({ ...t }, { end_user: 'cust-a', metadata: { project: 'alpha' } });
});

test('spend-by-workspace shows the Team pool only', async () => {
  const rows = await run('spend-by-workspace');
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.workspace_id, ws);
  assert.equal(Number(rows[0]!.spend_usd), 2000 / 1e6);
  assert.equal(Number(rows[0]!.members_spending), 1);
});

test('batch-share and batches-this-week: without batches, everything is interactive and no batch is listed', async () => {
  // With batches: test/batches.pricing.test.ts runs both against real batch lines.
  const [day] = await run('batch-share');
  assert.equal(Number(day!.batch_usd), 0);
  assert.equal(Number(day!.interactive_usd), (10 + 20 + 30 + 1000 + 2000) / 1e6);
  assert.equal(Number(day!.batch_outputs), 0);
  assert.equal(Number(day!.interactive_outputs), 6);
  assert.deepEqual([...await run('batches-this-week')], []);
});

test('model-mix and origin-share count generations by outcome', async () => {
  const mix = await run('model-mix');
  const coder = mix.find((r) => r.model_id === 'local/coder')!;
  assert.deepEqual([Number(coder.generations), Number(coder.completed), Number(coder.failed), Number(coder.avg_cost_micros)], [3, 3, 0, 20]);
  const sketch = mix.find((r) => r.model_id === 'local/sketch')!;
  assert.deepEqual([Number(sketch.generations), Number(sketch.completed), Number(sketch.failed)], [5, 3, 1]);
  assert.equal(Number(sketch.failure_pct), 25);
  const share = await run('origin-share');
  assert.deepEqual(share.map((r) => [r.origin, Number(r.generations)]), [['api', 7], ['mcp', 1]]);
  assert.equal(share.reduce((n, r) => n + Number(r.pct_of_day), 0), 100);
});

test('latency queries report queued and processing percentiles', async () => {
  const daily = await run('latency-per-day');
  const coder = daily.find((r) => r.model_id === 'local/coder')!;
  assert.equal(Number(coder.started), 3);
  assert.equal(Number(coder.queued_p50_ms), 7);
  assert.equal(Number(coder.processing_p50_ms), 200);
  const week = await run('latency-last-7-days');
  const sketch = week.find((r) => r.model_id === 'local/sketch')!;
  assert.equal(Number(sketch.completed), 3);
  assert.equal(Number(sketch.processing_p50_ms), 600);
  const slow = await run('slowest-generations');
  assert.equal(slow.length, 6);
  assert.equal(Number(slow[0]!.processing_ms), 800);
  assert.ok(slow.every((r, i) => i === 0 || Number(r.processing_ms) <= Number(slow[i - 1]!.processing_ms)));
});

test('upstream-health lists network models, the unhealthy first, with their recent error rate', async () => {
  const sql = srv.db.sql;
  for (const id of ['up/steady', 'up/flaky']) {
    await sql`select kiln.upsert_model(${sql.json({ id, name: id, category: 'text', provider: 'openai', upstream: { baseUrl: 'http://127.0.0.1:9/v1' } })})`;
  }
  await sql`select kiln.record_upstream('up/steady', true, null, 5, 30)`;
  await sql`select kiln.record_upstream('up/flaky', true, null, 5, 30)`;
  for (let i = 0; i < 5; i++) await sql`select kiln.record_upstream('up/flaky', false, 'upstream provider returned 503', 5, 30)`;
  const rows = await run('upstream-health');
  assert.deepEqual(rows.slice(0, 2).map((r) => [r.model_id, r.state, Number(r.consecutive_failures), Number(r.calls_15m), Number(r.error_rate_15m)]), [
    ['up/flaky', 'skipped', 5, 6, 0.833],
    ['up/steady', 'healthy', 0, 1, 0],
  ]);
  assert.equal(rows.some((r) => r.provider === 'local'), false);
});

test('durations are whole milliseconds and the example queries\' dollars stop at the microdollar', async () => {
  const rollback = new Error('rollback');
  await srv.db.sql.begin(async (tx) => {
    // Sub-millisecond times: queued 5.4321 ms, processing 100.6789 ms; a workflow run of 1234.5678 ms.
    const [g] = await tx`
      update kiln_private.generations
        set started_at = created_at + interval '5.4321 milliseconds',
            finished_at = created_at + interval '106.111 milliseconds'
      where id = (select id from kiln_private.generations where status = 'completed' and model_id = 'local/coder' order by created_at limit 1)
      returning id`;
    const [t] = await tx`select queued_ms::text, processing_ms::text from kiln.generation_timings where id = ${g!.id}`;
    assert.deepEqual({ ...t }, { queued_ms: '5', processing_ms: '101' });
    const latency = await tx`select * from kiln.generation_latency`;
    const durations = latency.flatMap((r) => Object.entries(r).filter(([k, v]) => k.endsWith('_ms') && v !== null).map(([k, v]) => [k, v]));
    assert.ok(durations.length >= 12, 'percentiles to check');
    for (const [k, v] of durations) assert.ok(Number.isInteger(v), `${k} = ${v}`);
    const coder = latency.find((r) => r.model_id === 'local/coder')!;
    assert.equal(coder.queued_p50_ms, 7);
    assert.equal(coder.processing_p50_ms, 200, '100.68, 200, 300 → 200');
    assert.equal(coder.processing_p95_ms, 290, 'interpolated 289.9…, rounded');

    const [w] = await tx`insert into kiln_private.workflows (account_id, name, graph) values (${alice}, 'timed', '{}') returning id`;
    await tx`
      insert into kiln_private.workflow_runs (workflow_id, account_id, origin, snapshot, status, total, deadline, window_seconds, max_attempts, created_at, completed_at)
      values (${w!.id}, ${alice}, 'api', '{}', 'completed', 0, now() + interval '1 hour', 300, 3, now(), now() + interval '1234.5678 milliseconds')`;
    const [run] = await tx`select duration_p50_ms from kiln.daily_workflow_runs where account_id = ${alice}`;
    assert.equal(run!.duration_p50_ms, 1235);

    // Dollars: six decimals, as written (postgres.js gives numerics as text).
    const [day] = await tx.unsafe(queries.get('spend-per-day')!);
    assert.equal(day!.spend_usd, '0.003060');
    assert.equal(day!.still_reserved_usd, '0.001000');
    const week = await tx.unsafe(queries.get('latency-last-7-days')!);
    for (const r of week) for (const k of ['queued_p50_ms', 'queued_p99_ms', 'processing_p50_ms', 'processing_p99_ms']) assert.ok(Number.isInteger(r[k]), `${k} = ${r[k]}`);
    throw rollback;
  }).catch((e) => { if (e !== rollback) throw e; });
});
