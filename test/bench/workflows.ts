// Benchmark: workflow runs on a real worker. A 100-node chain (per-edge overhead: upstream settled →
// downstream started), a 1 → 98 → 1 fan-out/fan-in (wall time), both with the local provider, and
// 10 independent nodes each taking 500 ms at a loopback OpenAI peer (wall time).
// Called by test/bench/run.ts (`KILN_BENCH_ONLY=workflows npm run bench` runs this section alone).

import { loadConfig } from '../../src/config.ts';
import { createContext } from '../../src/context.ts';
import { connect } from '../../src/db/pool.ts';
import { generateKey } from '../../src/auth/secrets.ts';
import { startWorker } from '../../src/worker/worker.ts';
import { createWorkflow } from '../../src/workflows/authoring.ts';
import { chatReply, startOpenAIPeer } from '../_openai-peer.ts';
import { TARGETS } from './_report.ts';
import type { BenchContext } from './run.ts';

export interface WorkflowFigures {
  chain: { nodes: number; edges: number; edgeOverheadP50Ms: number; edgeOverheadP90Ms: number; edgeOverheadMaxMs: number; wallMs: number };
  fanOut: { nodes: number; wallMs: number; dbMs: number };
  parallelPeer: { nodes: number; delayMs: number; wallMs: number; dbMs: number };
}

const CONCURRENCY = 16;

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return +sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!.toFixed(2);
}

const code = (id: string, prompt: string, model = 'local/coder') => ({ id, kind: 'prompt', output: 'code', model, targetLanguage: 'text', prompt });
const out = (id: string) => ({ id, kind: 'output' });

function chain(n: number) {
  const nodes: object[] = [];
  const edges: object[] = [];
  for (let i = 0; i < n; i++) {
    nodes.push(code(`p${i}`, `Step ${i} of the chain`), out(`o${i}`));
    edges.push({ from: `p${i}`, to: `o${i}` });
    if (i > 0) edges.push({ from: `o${i - 1}`, to: `p${i}` });
  }
  return { nodes, edges };
}

function fan(middle: number) {
  const nodes: object[] = [code('root', 'The root'), out('r'), code('sink', 'Combine everything'), out('s')];
  const edges: object[] = [{ from: 'root', to: 'r' }, { from: 'sink', to: 's' }];
  for (let i = 0; i < middle; i++) {
    nodes.push(code(`m${i}`, `Variant ${i}`), out(`om${i}`));
    edges.push({ from: 'r', to: `m${i}` }, { from: `m${i}`, to: `om${i}` }, { from: `om${i}`, to: 'sink' });
  }
  return { nodes, edges };
}

function independent(n: number, model: string) {
  const nodes: object[] = [];
  const edges: object[] = [];
  for (let i = 0; i < n; i++) {
    nodes.push(code(`p${i}`, `Independent ${i}`, model), out(`o${i}`));
    edges.push({ from: `p${i}`, to: `o${i}` });
  }
  return { nodes, edges };
}

export async function benchWorkflows(ctx: BenchContext): Promise<WorkflowFigures> {
  const config = { ...loadConfig(), logLevel: 'silent', workerConcurrency: CONCURRENCY };
  const sql = connect(ctx.dbUrl, { max: CONCURRENCY + 4 });
  const [account] = await sql`select * from kiln.create_account('bench-workflows@example.test', 'enterprise', null, true)`;
  // Enough parallel slots for every concurrent node (the tier default is 8).
  await sql`update kiln_private.accounts set parallel_slots = ${CONCURRENCY * 2} where id = ${account.id}`;
  const k = generateKey();
  await sql`select kiln.create_api_key(${account.id}, ${k.hash}, ${k.displayPrefix}, ${['read', 'write']}, null, null, null)`;
  const auth = { authorization: `Bearer ${k.key}` };
  const peer = await startOpenAIPeer();
  peer.script(() => ({ ...chatReply('peer reply'), delayMs: 500 }));
  await sql`select kiln.upsert_model(${sql.json({
    id: 'bench/peer', name: 'Bench peer', category: 'text', provider: 'openai', upstream: { baseUrl: peer.url, model: 'peer' },
    cost: { input_micros_per_token: 0.1, output_micros_per_token: 0.1 }, maxOutputTokens: 256, markup: 1,
  })})`;

  const shutdown = new AbortController();
  const worker = await startWorker(createContext(config, sql, shutdown.signal), ctx.dbUrl);

  /** Saves and runs a graph over HTTP; resolves when the run is terminal (polled in SQL). */
  const run = async (graph: object) => {
    const wf = await createWorkflow(sql, config, { accountId: account.id, workspaceId: null, name: 'bench', graph });
    const t0 = performance.now();
    const res = await fetch(`${ctx.base}/workflows/${wf.id}/runs`, { method: 'POST', headers: auth });
    if (res.status !== 202) throw new Error(`POST run → ${res.status} ${await res.text()}`);
    const { id } = (await res.json()) as { id: string };
    for (;;) {
      const [r] = await sql`select status, error, extract(epoch from completed_at - created_at) * 1000 as db_ms from kiln_private.workflow_runs where id = ${id}`;
      if (r.status === 'completed' || r.status === 'failed') {
        if (r.status === 'failed') throw new Error(`bench run failed: ${r.error}`);
        return { id, wallMs: +(performance.now() - t0).toFixed(1), dbMs: +Number(r.db_ms).toFixed(1) };
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };

  try {
    // Warm-up: connections, prepared statements, JIT; the first requests of a fresh server may 503.
    for (let i = 0; i < 20 && (await fetch(`${ctx.base}/workflows`, { headers: auth }).then((r) => r.status)) !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await run(chain(10));

    const c = await run(chain(100));
    const gaps = await sql`
      select extract(epoch from d.started_at - u.finished_at) * 1000 as ms
      from kiln_private.workflow_run_outputs d
      join kiln_private.workflow_run_outputs u on u.run_id = d.run_id and u.output_node_id = 'o' || (substr(d.output_node_id, 2)::int - 1)
      where d.run_id = ${c.id} and d.output_node_id <> 'o0'
      order by 1`;
    const g = gaps.map((r) => Number(r.ms));

    await run(fan(10));
    const f = await run(fan(98));
    const p = await run(independent(10, 'bench/peer'));

    const figures: WorkflowFigures = {
      chain: { nodes: 100, edges: g.length, edgeOverheadP50Ms: percentile(g, 0.5), edgeOverheadP90Ms: percentile(g, 0.9), edgeOverheadMaxMs: percentile(g, 1), wallMs: c.wallMs },
      fanOut: { nodes: 100, wallMs: f.wallMs, dbMs: f.dbMs },
      parallelPeer: { nodes: 10, delayMs: 500, wallMs: p.wallMs, dbMs: p.dbMs },
    };
    console.log(`\n## Workflows (worker concurrency ${CONCURRENCY}, local provider unless noted)`);
    console.log(`100-node chain     per-edge overhead p50 ${figures.chain.edgeOverheadP50Ms} ms, p90 ${figures.chain.edgeOverheadP90Ms} ms, max ${figures.chain.edgeOverheadMaxMs} ms (target p50 ≤ ${TARGETS.chainEdgeP50Ms}); wall ${c.wallMs} ms`);
    console.log(`1 → 98 → 1 fan     wall ${f.wallMs} ms (enqueue → completed ${f.dbMs} ms) (target ≤ ${TARGETS.fanOutWallMs})`);
    console.log(`10 × 500 ms peer   wall ${p.wallMs} ms (enqueue → completed ${p.dbMs} ms) (target ≤ ${TARGETS.parallelPeerWallMs})`);
    return figures;
  } finally {
    shutdown.abort();
    await worker.stop();
    await peer.close();
    await sql.end({ timeout: 5 });
  }
}
