// A run in flight across the one-lifecycle upgrade (migration 000013) finishes: a database is
// migrated to 000012, a run is started and driven part-way through the old per-output functions
// (one output settled, one running with its reservation, one waiting on its input), then the
// rest of the migrations are applied and a real worker finishes the run on the new lifecycle —
// each output charged once, the running output's reservation carried over.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { migrate as gmMigrate } from 'graphile-migrate';
import { runMigrations as runWorkerMigrations, Logger } from 'graphile-worker';
import postgres from 'postgres';
import { createContext } from '../src/context.ts';
import { migrateAndSeed } from '../src/cli/boot.ts';
import { MIGRATIONS_FOLDER } from '../src/db/migrate.ts';
import { connect } from '../src/db/pool.ts';
import { startWorker } from '../src/worker/worker.ts';
import { rowToModel } from '../src/billing/catalog.ts';
import type { ModelRow } from '../src/db/sql/enabled_models.ts';
import { startWorkflowRun } from '../src/db/sql/start_workflow_run.ts';
import { checkGraph } from '../src/workflows/check.ts';
import { planRun } from '../src/workflows/plan.ts';
import { createAccount, onCleanup, testConfig } from './_setup.ts';
import { saveWorkflow } from './_workflows.ts';

const LAST_OLD = '000012';

test('a run in flight across the upgrade to one lifecycle finishes, each output charged once', async () => {
  const adminUrl = process.env.KILN_TEST_ADMIN_URL!;
  const name = `kiln_upgrade_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  const sql = connect(url, { max: 10 });
  onCleanup(async () => {
    await sql.end({ timeout: 5 });
    await admin.unsafe(`drop database if exists ${name} with (force)`).catch(() => {});
    await admin.end();
  });

  // The schema as of migration 000012.
  const old = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-old-migrations-'));
  onCleanup(async () => fs.rmSync(old, { recursive: true, force: true }));
  fs.mkdirSync(path.join(old, 'committed'));
  for (const f of fs.readdirSync(path.join(MIGRATIONS_FOLDER, 'committed'))) {
    if (f.slice(0, 6) <= LAST_OLD) fs.copyFileSync(path.join(MIGRATIONS_FOLDER, 'committed', f), path.join(old, 'committed', f));
  }
  await runWorkerMigrations({ connectionString: url, logger: new Logger(() => () => {}) });
  await gmMigrate({ connectionString: url, migrationsFolder: old, manageGraphileMigrateSchema: true, logger: new Logger(() => () => {}) } as any);

  const ctx = createContext(testConfig(), sql);
  const a = await createAccount(sql, { tier: 'pro' });
  const p = (id: string) => ({ id, kind: 'prompt', output: 'code', model: 'local/coder', prompt: `step ${id}` });
  const o = (id: string) => ({ id, kind: 'output' });
  const wf = await saveWorkflow({ db: { sql, url }, ctx } as any, a.id, {
    nodes: [p('A'), o('oA'), p('B'), o('oB'), p('C'), o('oC')],
    edges: [{ from: 'A', to: 'oA' }, { from: 'oA', to: 'B' }, { from: 'B', to: 'oB' }, { from: 'C', to: 'oC' }],
  });
  // Started as the code of that schema did: kiln.snapshot_workflow took no workspace then (issue 28
  // added it), so the snapshot is read with the old signature; the plan and the start are today's.
  const [w] = await sql`select graph, models from kiln.snapshot_workflow(${a.id}::uuid, ${wf}::uuid)`;
  const checked = checkGraph(ctx.config, (w!.models as ModelRow[]).map((m) => rowToModel(m, ctx.config.defaultMarkup)), a.id, w!.graph);
  assert.ok(checked.ok);
  const [started] = await startWorkflowRun(sql, {
    accountId: a.id, keyId: null, workspaceId: null, origin: 'api', workflowId: wf, snapshot: w!.graph, outputs: planRun(checked.value),
    windowSeconds: ctx.config.runWindowSeconds, maxAttempts: ctx.config.generationMaxAttempts,
  });
  const run = started!.id;

  // Old lifecycle: oA settles (which queues oB), oC is running with its reservation, oB waits for its job.
  const jobOf = async (out: string) => {
    const [j] = await sql`select id from graphile_worker._private_jobs where key = ${`workflow:${run}:o:${out}`}`;
    return j.id as string;
  };
  for (const out of ['oA', 'oC']) {
    const [{ s }] = await sql`select kiln.start_workflow_output(${run}::uuid, ${out}, 'old-pool', ${await jobOf(out)}::bigint, 30, 1000) as s`;
    assert.equal(s.outcome, 'run');
    const [{ r }] = await sql`select kiln.reserve_workflow_output(${run}::uuid, ${out}, 5000) as r`;
    assert.equal(r.ok, true);
  }
  await sql`select kiln.complete_workflow_output(${run}::uuid, 'oA', '{"type":"code","code":"from the old worker"}'::jsonb, 1234, null)`;
  const before = await sql`select output_node_id, status from kiln_private.workflow_run_outputs where run_id = ${run} order by output_node_id`;
  assert.deepEqual(before.map((r) => [r.output_node_id, r.status]), [['oA', 'completed'], ['oB', 'queued'], ['oC', 'running']]);
  const [chargeC] = await sql`select id from kiln_private.charges where workflow_run_id = ${run} and node_id = 'oC'`;

  // The upgrade, then a worker of the new code.
  await migrateAndSeed(url, { includeCurrent: true });
  const [{ n: oldJobs }] = await sql`
    select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'workflow__run_node' and j.locked_at is null and j.attempts < j.max_attempts`;
  assert.equal(oldJobs, 0, 'the old task\'s jobs are gone');
  const shutdown = new AbortController();
  const worker = await startWorker(createContext(testConfig(), sql, shutdown.signal), url);
  onCleanup(async () => {
    shutdown.abort();
    await worker.stop();
  });

  let body: any;
  for (let i = 0; ; i++) {
    [{ body }] = await sql`select kiln.get_workflow_run(${a.id}::uuid, ${wf}::uuid, ${run}::uuid) as body`;
    if (body.status === 'completed' || body.status === 'failed') break;
    if (i > 400) throw new Error(`run did not finish: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(body.status, 'completed', JSON.stringify(body));
  const results = new Map(body.results.map((r: any) => [r.outputNodeId, r]));
  assert.equal((results.get('oA') as any).code, 'from the old worker');
  assert.equal((results.get('oB') as any).status, 'completed');
  assert.equal((results.get('oC') as any).status, 'completed');

  // One charge per output, each settled once; oC kept the reservation it had before the upgrade.
  const ledger = await sql`select node_id, id, status from kiln_private.charges where workflow_run_id = ${run} order by node_id`;
  assert.deepEqual(ledger.map((c) => [c.node_id, c.status]), [['oA', 'settled'], ['oB', 'settled'], ['oC', 'settled']]);
  assert.equal(ledger.find((c) => c.node_id === 'oC')!.id, chargeC!.id);
  // Every output is a generation now, with its run and output node.
  const gens = await sql`select output_node_id, status, origin from kiln_private.generations where run_id = ${run} order by output_node_id`;
  assert.deepEqual(gens.map((g) => [g.output_node_id, g.status, g.origin]), [['oA', 'completed', 'workflow'], ['oB', 'completed', 'workflow'], ['oC', 'completed', 'workflow']]);
});
