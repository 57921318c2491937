// BENCH.md: the figures of `npm run bench` as markdown tables, each with its target. Every section
// sits between `<!-- bench:NAME -->` markers and is replaced only by a run that measured it, so
// `KILN_BENCH_ONLY=…` runs keep the other sections (and the hand-written notes) as they were.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LoadResult } from './_env.ts';
import { renderEndUserPost } from './endusers-post.ts';

// KILN_BENCH_FILE sends a run's sections elsewhere (test/bench/node.ts: runs that only feed the
// Node versions section leave BENCH.md's other sections as they were).
export const BENCH_FILE = process.env.KILN_BENCH_FILE ? path.resolve(process.env.KILN_BENCH_FILE) : path.resolve(import.meta.dirname, '..', '..', 'BENCH.md');

export const SECTION_ORDER = ['foundation', 'generations', 'workflows', 'images', 'wait', 'webhooks', 'scale', 'telemetry', 'admin', 'streaming', 'batches', 'enduser-post', 'endusers'] as const;

/** The targets, in one place: the console report and BENCH.md both state them. */
export const TARGETS = {
  modelsRatio: 0.8,
  usageRatio: 0.6,
  postRatio: 0.5,
  getGenerationRatio: 0.8,
  enqueueP50Ms: 10,
  enqueueP99Ms: 50,
  /** kiln_private.enqueue_new_generations may name graphile-worker's private table only while this holds. */
  enqueueBypassGain: 0.1,
  chainEdgeP50Ms: 15,
  fanOutWallMs: 2000,
  parallelPeerWallMs: 800,
  compressTimeVsPlainEncode: 4,
  waitP50Ms: 5,
  waitP99Ms: 20,
  waiterKb: 20,
  scaleDailyP50Ms: 20,
  scaleListP50Ms: 20,
  /** GET /usage and POST /generations on the loaded ledger: within this share of their empty-ledger ratios. */
  scaleRatioDrift: 0.05,
  /** Telemetry: req/s with metrics and traces on within this share of off; metrics alone within telemetryMetricsCost. */
  telemetryFullCost: 0.05,
  telemetryMetricsCost: 0.01,
  /** GET /admin/accounts at 100,000 accounts and 10 million charges: every page, p99. */
  adminPageP99Ms: 50,
  /** Streaming (issue 40): peer write → SSE client read with 100 generations streaming at once. */
  streamP50Ms: 50,
  streamP99Ms: 250,
  /** Postgres writes and NOTIFYs per streaming generation-second. */
  streamWritesPerSecond: 10,
  /** API + worker CPU per generation, streamed against not streamed. */
  streamCpuCost: 0.15,
  /** Batches (issue 41): accepting a 50,000-line batch; lines per second against POST /generations; interactive p99 while one drains, against idle. */
  batchAcceptSeconds: 10,
  batchAcceptMb: 100,
  batchSpeedup: 3,
  batchLatencyFactor: 2,
  /** Spend by end user (issue 42) at 10 million charges over 100,000 end users: a month's first page, p99. */
  endUsersP99Ms: 50,
} as const;

export interface RunInfo {
  /** ISO date and time (UTC, minutes) the run started. */
  started: string;
  machine: string;
}

/** The machine line of a section: what the figures depend on. */
export function describeMachine(postgres: string): string {
  const cpus = os.cpus();
  const model = cpus[0]?.model?.replace(/\s+/g, ' ').trim() ?? 'unknown CPU';
  const load = os.loadavg()[0]!.toFixed(2);
  const seconds = process.env.KILN_BENCH_SECONDS ?? '3';
  return `${os.platform()} ${os.arch()}, ${cpus.length} cores (${model}), ${Math.round(os.totalmem() / 2 ** 30)} GiB; Node ${process.version}; ${postgres}; load average ${load} at start; ${seconds} s rounds`;
}

const n = (x: number) => Math.round(x).toLocaleString('en-US');
const met = (ok: boolean) => (ok ? 'met' : '**missed**');
const cpu = (r: LoadResult) => (r.cpu ? `${r.cpu.node} / ${r.cpu.postgres ?? '?'} / ${r.cpu.loadGenerator}` : '—');
const httpRow = (name: string, r: LoadResult, ratio: string, target: string, verdict: string) =>
  `| ${name} | ${n(r.rps)} | ${r.p50} / ${r.p99} ms | ${cpu(r)} | ${ratio} | ${target} | ${verdict} |`;
const HTTP_HEAD = [
  '| route | req/s (median round) | p50 / p99 | CPU µs per request: server / Postgres / load generator | ratio to `select 1` (median of paired rounds) | target | |',
  '|---|---|---|---|---|---|---|',
];
const rounds = (label: string, f: { rounds: number[] } | number[]) => `${label}: ${(Array.isArray(f) ? f : f.rounds).map(n).join(', ')}`;

type Figures = Record<string, any>;

function foundation(f: Figures): string[] {
  const models = f.modelsRatio as number;
  const usage = f.usageRatio as number;
  return [
    '## Foundation: HTTP routes against the `select 1` route',
    '',
    ...HTTP_HEAD,
    httpRow('bare `select 1` route', f.select1, '—', '—', ''),
    httpRow('`GET /models`', f.models, models.toFixed(2), `≥ ${TARGETS.modelsRatio}`, met(models >= TARGETS.modelsRatio)),
    httpRow('`GET /usage`', f.usage, usage.toFixed(2), `≥ ${TARGETS.usageRatio}`, met(usage >= TARGETS.usageRatio)),
    '',
    `Rounds, req/s — ${rounds('select 1', f.rounds.select1)}; ${rounds('GET /models', f.rounds.models)}; ${rounds('GET /usage', f.rounds.usage)}.`,
  ];
}

function generations(f: Figures): string[] {
  const e = f.enqueueToProcessing;
  return [
    '## Generations',
    '',
    ...HTTP_HEAD,
    httpRow('`POST /generations` (accepted)', f.post, f.postRatio.toFixed(2), `≥ ${TARGETS.postRatio}`, met(f.postRatio >= TARGETS.postRatio)),
    httpRow('`GET /generations/{id}`', f.get, f.getRatio.toFixed(2), `≥ ${TARGETS.getGenerationRatio}`, met(f.getRatio >= TARGETS.getGenerationRatio)),
    '',
    `Rounds, req/s — ${rounds('select 1', f.rounds.select1BeforeGet)}; ${rounds('GET', f.rounds.get)}; ${rounds('select 1', f.rounds.select1BeforePost)}; ${rounds('POST', f.rounds.post)}.`,
    '',
    '| enqueue → `processing` (local provider, real worker) | measured | target | |',
    '|---|---|---|---|',
    `| ${e.n} generations at ${e.ratePerSecond ?? 50}/s | p50 ${e.p50} ms, p99 ${e.p99} ms, max ${e.max} ms | p50 ≤ ${TARGETS.enqueueP50Ms} ms, p99 ≤ ${TARGETS.enqueueP99Ms} ms | p50 ${met(e.p50 <= TARGETS.enqueueP50Ms)}, p99 ${met(e.p99 <= TARGETS.enqueueP99Ms)} |`,
    ...enqueueBypass(f.enqueueBypass),
  ];
}

/** The enqueue bypass against plain graphile_worker.add_jobs: it may stay only while it gains ≥ 10 %. */
function enqueueBypass(b: Figures | undefined): string[] {
  if (!b) return [];
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
  return [
    '',
    '| `POST /generations` enqueue (queue drained before each round) | req/s (median round) | p50 / p99 | CPU µs per request: server / Postgres / load generator |',
    '|---|---|---|---|',
    `| one insert into graphile-worker's jobs table (the bypass) | ${n(b.bypass.rps)} | ${b.bypass.p50} / ${b.bypass.p99} ms | ${cpu(b.bypass)} |`,
    `| \`graphile_worker.add_jobs\` | ${n(b.addJobs.rps)} | ${b.addJobs.p50} / ${b.addJobs.p99} ms | ${cpu(b.addJobs)} |`,
    '',
    `Bypass gain (median of paired rounds): ${pct(b.gain)}; worth naming graphile-worker's private table only at ≥ ${pct(TARGETS.enqueueBypassGain)}: ${b.gain >= TARGETS.enqueueBypassGain ? 'met' : '**below**'}. Rounds, req/s — ${rounds('bypass', b.rounds.bypass)}; ${rounds('add_jobs', b.rounds.addJobs)}.`,
  ];
}

function workflows(f: Figures): string[] {
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  return [
    '## Workflows',
    '',
    'A real worker in-process (worker concurrency 16, the account\'s parallel slots raised to 32); runs started over HTTP, completion observed in SQL.',
    '',
    '| benchmark | measured | target | |',
    '|---|---|---|---|',
    `| ${f.chain.nodes}-node chain (local provider): per-edge overhead, upstream settled → downstream started | p50 ${f.chain.edgeOverheadP50Ms} ms, p90 ${f.chain.edgeOverheadP90Ms} ms, max ${f.chain.edgeOverheadMaxMs} ms (wall ${s(f.chain.wallMs)}) | p50 ≤ ${TARGETS.chainEdgeP50Ms} ms | ${met(f.chain.edgeOverheadP50Ms <= TARGETS.chainEdgeP50Ms)} |`,
    `| 1 → ${f.fanOut.nodes - 2} → 1 fan-out / fan-in (local provider), wall time | ${s(f.fanOut.wallMs)} (enqueue → completed ${s(f.fanOut.dbMs)}) | ≤ ${s(TARGETS.fanOutWallMs)} | ${met(f.fanOut.wallMs <= TARGETS.fanOutWallMs)} |`,
    `| ${f.parallelPeer.nodes} independent nodes, each ${f.parallelPeer.delayMs} ms at a loopback OpenAI-compatible peer, wall time | ${s(f.parallelPeer.wallMs)} (enqueue → completed ${s(f.parallelPeer.dbMs)}) | ≤ ${s(TARGETS.parallelPeerWallMs)} | ${met(f.parallelPeer.wallMs <= TARGETS.parallelPeerWallMs)} |`,
  ];
}

function images(f: Figures): string[] {
  const c = f.convertMs;
  const runs = f.compress as Array<Record<string, any>>;
  const summary = f.compressSummary as Record<string, { meanFullEncodes: number; meanTimeVsPlainEncode: number; maxTimeVsPlainEncode: number }>;
  const s = f.encoderSettings;
  return [
    '## Image transforms',
    '',
    `On a ${f.image}. Encoders: AVIF effort ${s.avifEffort} (compress searches at effort ${s.avifSearchEffort}), WebP effort ${s.webpEffort}, JPEG ${s.jpeg}, PNG ${s.png}.`,
    '',
    '| op | time |',
    '|---|---|',
    `| convert → jpeg / webp / avif / png | ${n(c.jpeg)} / ${n(c.webp)} / ${n(c.avif)} / ${n(c.png)} ms |`,
    `| trim (100 px white frame) / nothing to cut | ${n(f.trimMs.framed)} / ${n(f.trimMs.nothingToCut)} ms |`,
    '',
    '| compress: format (targets) | mean full encodes | mean / max time vs one plain encode at the final quality | target | |',
    '|---|---|---|---|---|',
    ...Object.entries(summary).map(([format, v]) => {
      const targets = runs.filter((r) => r.format === format).map((r) => `${Math.round(r.target / 1000)} kB`).join(', ');
      return `| ${format} (${targets}) | ${v.meanFullEncodes} | ${v.meanTimeVsPlainEncode.toFixed(2)}× / ${v.maxTimeVsPlainEncode.toFixed(2)}× | ≤ ${TARGETS.compressTimeVsPlainEncode}× | ${met(v.maxTimeVsPlainEncode <= TARGETS.compressTimeVsPlainEncode)} |`;
    }),
    '',
    `Results land at ${runs.map((r) => `${r.format} ${Math.round(r.target / 1000)} kB: ${Math.round(r.ofTarget * 100)} %`).join(', ')} of the target.`,
  ];
}

function wait(f: Figures): string[] {
  const w = f.waitLatency;
  const st = f.streamLatency;
  return [
    '## Wait and live events',
    '',
    `${n(f.waiters)} concurrent \`GET /generations/{id}\` with \`Prefer: wait=60\` on pending jobs of the local model, settled by a \`kiln worker\` process (${f.settleSeconds} s); then ${n(f.streams)} open event streams on other pending jobs, settled the same way (${f.streamSettleSeconds ?? '—'} s). Latency runs from the moment the settling transaction's NOTIFY reaches a listener in the load generator to the moment the answer (or the stream's terminal event) arrives there. RSS is read after a garbage collection.`,
    '',
    '| benchmark | measured | target | |',
    '|---|---|---|---|',
    `| settlement → waiting response | p50 ${w.p50} ms, p99 ${w.p99} ms, max ${w.max} ms | p50 ≤ ${TARGETS.waitP50Ms} ms, p99 ≤ ${TARGETS.waitP99Ms} ms | p50 ${met(w.p50 <= TARGETS.waitP50Ms)}, p99 ${met(w.p99 <= TARGETS.waitP99Ms)} |`,
    `| settlement → stream's terminal event | p50 ${st.p50} ms, p99 ${st.p99} ms, max ${st.max} ms | — | |`,
    `| \`finished_at\` (settling transaction's start) → waiting response | p50 ${f.finishedToResponse.p50} ms, p99 ${f.finishedToResponse.p99} ms | — | |`,
    `| API process RSS growth per open waiter / per open stream | ${f.rssPerWaiterKb} KB / ${f.rssPerStreamKb} KB | ≤ ${TARGETS.waiterKb} KB each | ${met(f.rssPerWaiterKb <= TARGETS.waiterKb && f.rssPerStreamKb <= TARGETS.waiterKb)} |`,
    `| API process JS heap + external growth per open waiter / per open stream | ${f.heapPerWaiterKb ?? '—'} KB / ${f.heapPerStreamKb ?? '—'} KB | — | the streams' RSS baseline comes after the waiters' phase, whose freed pages the allocator keeps: the heap figure is the steadier one |`,
  ];
}

function webhooks(f: Figures): string[] {
  const l = f.latency;
  const t = f.throughput;
  return [
    '## Webhooks',
    '',
    `Deliveries by a \`kiln worker\` process (16 slots) to a receiver on loopback answering 204. Latency: ${n(f.endpoints)} endpoints spread over the bench accounts (each generation's account has about ${Math.round(f.endpoints / 64)}), ${f.generations} generations of the local model at ${f.ratePerSecond}/s; each delivery is timed from the moment the settling transaction's NOTIFY reaches the load generator to the moment the receiver has the request. Throughput: ${n(t.deliveries)} deliveries (${t.deliveries / t.endpoints} events × ${t.endpoints} endpoints of one account) written in one transaction, until the receiver has them all.`,
    '',
    '| benchmark | measured |',
    '|---|---|',
    `| settlement → receiver, ${n(f.endpoints)} endpoints (${n(f.deliveries)} deliveries) | p50 ${l.p50} ms, p99 ${l.p99} ms, max ${l.max} ms |`,
    `| deliveries per second to a fast receiver | ${n(t.perSecond)}/s (${n(t.deliveries)} in ${t.seconds} s) |`,
  ];
}


function scale(f: Figures): string[] {
  const r = f.rows;
  // The paired drift (loaded ÷ empty req/s within each round, median) when measured; older runs
  // compared the two medians of ratios.
  const drift = (k: string) => (f.drift ? f.drift[k] : f.ratios.loaded[k] / f.ratios.empty[k] - 1);
  const signed = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
  // With the rounds recorded, the paired drift leads and its spread follows; the two ratios are
  // medians over rounds of each route against that round's select 1, so with select 1 itself
  // drifting between rounds they need not differ by the paired drift.
  const driftCell = (k: string) => {
    const rounds: number[] | undefined = f.driftRounds?.[k];
    if (!rounds?.length) return `${f.ratios.empty[k].toFixed(2)} → ${f.ratios.loaded[k].toFixed(2)} (${signed(drift(k))})`;
    return `${signed(drift(k))} (rounds ${signed(Math.min(...rounds))} to ${signed(Math.max(...rounds))}); ratios ${f.ratios.empty[k].toFixed(2)} → ${f.ratios.loaded[k].toFixed(2)}`;
  };
  const g = f.generateSeconds as Record<string, number>;
  return [
    '## Scale: the ledger at 10 million charges',
    '',
    `${n(r.charges)} charges and ${n(r.generations)} generations generated in SQL over the past year (\`KILN_BENCH_SCALE=${f.scale}\`), ${n(r.accounts)} accounts, one holding half of both; ` +
      `generated in ${g.total} s (${Object.entries(g).filter(([k]) => k !== 'total').map(([k, v]) => `${k} ${v} s`).join(', ')}). ` +
      (f.settled ? `Before measuring, a checkpoint and \`sync\` wrote out the ${n(f.settled.dirtyMb ?? 0)} MB of page cache the generation left dirty (${f.settled.seconds} s). ` : '') +
      'Latencies are sequential requests over keep-alive, measured at the client (p50 of 50 for daily usage, of 30 per list query). ' +
      (f.settled
        ? `The empty and the loaded ledger are two databases on the bench's cluster made alike (migrated, the same 64 accounts and keys, the same ${n(r.accounts - 1)} other accounts), the ledger generated into one of them; each behind a server process started for the rounds. `
        : 'The empty ledger is a twin database on the same cluster with the same accounts and keys; each behind a server process started for the rounds. ') +
      `Ratios as in the sections above, in ${f.compareRounds ?? 'five'} interleaved rounds of five loads each (the order of the two ledgers swapped every other round): \`select 1\`, then GET /usage and POST /generations on both ledgers, compared seconds apart rather than before and after the generation. The drift is the median over the rounds of loaded ÷ empty req/s within a round.`,
    '',
    '| benchmark | measured | target | |',
    '|---|---|---|---|',
    `| \`GET /usage/daily\`, a month of the heavy account (${f.daily.days} day × model rows) | p50 ${f.daily.p50} ms, p90 ${f.daily.p90} ms | p50 ≤ ${TARGETS.scaleDailyP50Ms} ms | ${met(f.daily.p50 <= TARGETS.scaleDailyP50Ms)} |`,
    `| the same month through the ledger, as \`kiln.daily_spend\` read it before the rollup | ${f.ledgerQueryMs.heavyMonth.map(n).join(' / ')} ms (SQL only) | — | before |`,
    `| the same month through \`kiln.daily_spend\` now (SQL only) | p50 ${f.viewQueryMs.heavyMonth} ms | — | after |`,
    `| every account's month by day and model: ledger before / \`kiln.daily_spend\` now (SQL only) | ${f.ledgerQueryMs.allMonth.map(n).join(' / ')} ms / p50 ${f.viewQueryMs.allMonth} ms | — | |`,
    ...f.list.map((l: any) => `| \`GET /generations?limit=20${l.query === '(none)' ? '' : `&${l.query.replace(/since=[^&]+/, 'since=<7 days ago>')}`}\` first page, heavy account (${l.items} items) | p50 ${l.p50} ms, p90 ${l.p90} ms | p50 ≤ ${TARGETS.scaleListP50Ms} ms | ${met(l.p50 <= TARGETS.scaleListP50Ms)} |`),
    `| \`GET /usage\` ratio to \`select 1\`: empty → loaded ledger | ${driftCell('usage')} | within ${TARGETS.scaleRatioDrift * 100} % | ${met(Math.abs(drift('usage')) <= TARGETS.scaleRatioDrift)} |`,
    `| \`POST /generations\` ratio to \`select 1\`: empty → loaded ledger | ${driftCell('post')} | within ${TARGETS.scaleRatioDrift * 100} % | ${met(Math.abs(drift('post')) <= TARGETS.scaleRatioDrift)} |`,
    `| CPU µs per request, server / Postgres / load generator: \`GET /usage\` empty → loaded ledger | ${cpu(f.loads.empty.usage)} → ${cpu(f.loads.loaded.usage)} | — | |`,
    `| CPU µs per request, server / Postgres / load generator: \`POST /generations\` empty → loaded ledger | ${cpu(f.loads.empty.post)} → ${cpu(f.loads.loaded.post)} | — | |`,
    ...(f.postBatch ? [`| POSTs per SQL call (batching), empty → loaded ledger | ${f.postBatch.empty} → ${f.postBatch.loaded} | — | |`] : []),
    '',
    '| table | rows | heap | indexes |',
    '|---|---|---|---|',
    ...f.sizes.map((s: any) => `| \`${s.table}\` | ${n(s.rows)} | ${n(s.heapMb)} MB | ${n(s.indexesMb)} MB: ${s.indexes.map(([i, m]: [string, number]) => `${i} ${n(m)}`).join(', ')} |`),
  ];
}

/** The soak (issue 31): two API processes and two workers, pooled behind PgBouncer against direct. */
function soak(f: Figures): string[] {
  const rows = (f.phases as any[]).map((p, i) => {
    const c = p.cpuPerRequest;
    return `| ${i + 1}. ${p.mode}${p.poolSize ? ` (PgBouncer pool ${p.poolSize})` : ''} | ${p.rps} | ${p.postRps} | ${p.p50} / ${p.p99} ms | ${p.non2xx + p.errors} | ${p.connections.max} (mean ${p.connections.mean}) | ${p.oldestJobMs.max} ms (mean ${p.oldestJobMs.mean}) | ${c.apis} / ${c.workers} / ${c.pgbouncer ?? '–'} / ${c.postgres ?? '–'} |`;
  });
  return [
    '## Soak: PgBouncer against direct connections (issue 31)',
    '',
    `Two \`kiln api\` and two \`kiln worker\` processes (\`KILN_DB_POOL_SIZE=10\`, \`KILN_WORKER_DB_POOL_SIZE=${f.workerPool ?? 4}\`), ${f.seconds} s per phase, under the same closed-loop mix per API process (16 connections cycling POST /generations, GET /generations, GET /usage, GET /generations?status=completed; 64 keys); \`KILN_BENCH_ONLY=soak npm run bench\` (\`KILN_SOAK_SECONDS\`, \`KILN_SOAK_PHASES\`). Connections: the database's rows in \`pg_stat_activity\` sampled once a second, the bench's own left out; the queue's oldest job likewise. CPU: µs per request of the API processes / workers / PgBouncer / Postgres.`,
    '',
    '| phase | req/s | POSTs/s | p50 / p99 | non-2xx | server connections (max) | oldest queued job (max) | CPU µs/req api / worker / pgbouncer / postgres |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `Pooled ÷ direct: throughput **${f.throughputRatio}** (goal ≥ 0.9), server connections **${f.connectionRatio}** (goal ≤ 0.333).`,
  ];
}


function telemetry(f: Figures): string[] {
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
  const row = (c: string, route: string, label: string, target: number | null) => {
    const r = f.loads[c][route];
    const x = f.cost[c][route];
    const cpuOff = f.cpu?.off?.[route];
    const cpuC = f.cpu?.[c]?.[route];
    const cpuCell = cpuC === undefined ? '—' : c === 'off' ? `${cpuC}` : `${cpuC} (${pct(cpuC / cpuOff - 1)})`;
    // The verdict reads the server's CPU per request: on a shared machine req/s swings far more
    // between rounds than the cost being measured.
    const cpuCost = cpuC === undefined || cpuOff === undefined ? null : cpuC / cpuOff - 1;
    const verdict = target === null || cpuCost === null ? '' : met(cpuCost <= target);
    return `| ${label} | ${c} | ${n(r.rps)} | ${r.p50} / ${r.p99} ms | ${c === 'off' ? '—' : pct(x)} | ${cpuCell} | ${f.rps[c][route].join(', ')} | ${target === null ? '—' : `CPU ≤ +${target * 100} %`} | ${verdict} |`;
  };
  const lines: string[] = [];
  for (const [route, label] of [['post', '`POST /generations`'], ['usage', '`GET /usage`']] as const) {
    lines.push(row('off', route, label, null), row('metrics', route, label, TARGETS.telemetryMetricsCost), row('metrics+traces', route, label, TARGETS.telemetryFullCost));
    if (f.loads['metrics+traces 10%']) lines.push(row('metrics+traces 10%', route, label, TARGETS.telemetryFullCost));
  }
  const floor = f.sdkFloorMicros;
  const share = (x: number) => `${(x * 100).toFixed(1)} %`;
  const floorLine = floor === undefined ? [] : [
    '',
    `The official SDK's own work for one traced request (a server span and a database span started, given the server span's attributes, ended and serialized to OTLP protobuf in batches of 512, as the BatchSpanProcessor and the exporter do, less the HTTP post), measured in the load generator's process after the rounds: **${floor} µs**, that is ${share(floor / f.cpu.off.usage)} of off's server CPU per \`GET /usage\` request and ${share(floor / f.cpu.off.post)} per \`POST /generations\` request. Where that share exceeds 5 %, tracing every request cannot meet the CPU target with the official SDK, whatever Kiln does; head sampling (the 10 % rows) divides it by ten.`,
  ];
  return [
    '## Telemetry: metrics and traces against off',
    '',
    `Bench servers on the bench database: telemetry off; metrics on (\`KILN_METRICS_PORT\`, every request counted, nobody scraping); metrics and traces on with every request sampled (a server span and a span per SQL call, exported over OTLP/HTTP protobuf in batches to a loopback collector in the load generator's process, which took ${n(f.collector.exports)} exports, ${n(f.collector.bytes / 1024)} KiB in all); and the same with one trace in ten sampled (\`OTEL_TRACES_SAMPLER=parentbased_traceidratio\`, \`0.1\`). ${f.rounds} rounds; in each, every route is loaded on the servers in turn (the order rotates each round) and each configuration's req/s is divided by off's of the same round: the req/s cost is the median of those ratios minus one. The server's CPU per request (median round, from /proc) is the steadier figure on a shared machine, and the target (the issue's: within 1 % of off with metrics, 5 % with traces) is checked on it. Logs are \`silent\` in all (the access log line is not measured). No worker runs; the accepted generations are failed between rounds.`,
    '',
    '| route | telemetry | req/s (median round) | p50 / p99 | req/s vs off (median paired) | server CPU µs/request (vs off) | req/s per round | target | |',
    '|---|---|---|---|---|---|---|---|---|',
    ...lines,
    ...floorLine,
  ];
}

const RENDER: Record<string, (f: Figures) => string[]> = { foundation, generations, workflows, images, wait, webhooks, scale, telemetry, soak, admin, streaming, batches, 'enduser-post': renderEndUserPost, endusers };

function endusers(f: Figures): string[] {
  const r = f.rows;
  const g = f.generateSeconds as Record<string, number>;
  return [
    `## End users: ${n(r.charges)} charges over ${n(r.endUsers)} end users of one account in one month`,
    '',
    `Generated in SQL, set-based (\`KILN_BENCH_ENDUSERS_SCALE=${f.scale}\`): ${n(r.charges)} charges of one account in ${f.month.from} … ${f.month.to}, each with an end user (${n(r.endUsers)} of them, skewed towards a few: user n with probability ∝ the square of a uniform draw), 5 % released, ${n(r.open)} reservations still open on the last day; ` +
      `the triggers off and the ledger's secondary indexes dropped and rebuilt, then the roll-ups from the ledger with \`kiln_private.rebuild_charge_days()\`: ${n(r.chargeDays)} \`charge_days\` rows, ${n(r.endUserDays)} \`charge_end_user_days\` rows, ${n(r.endUserMonths)} \`charge_end_user_months\` rows. ` +
      `Generated in ${g.total} s (${Object.entries(g).filter(([k]) => k !== 'total').map(([k, v]) => `${k} ${v} s`).join(', ')}). ` +
      `Each route timed at the client over HTTP (authorization, the SQL call, rendering and the signed cursor included), ${f.runs ?? 50} sequential calls after a warm-up; the plans are auto_explain's (ANALYZE, BUFFERS) of the grouped query inside the SQL function, one run.`,
    '',
    '| request | rows | p50 / p99 / max | target | | plan of the query inside (time, nodes, buffers) |',
    '|---|---|---|---|---|---|',
    ...f.cases.map((c: any) => `| \`${c.path}\` — ${c.name} | ${c.rows} | ${c.p50} / ${c.p99} / ${c.max} ms | p99 ≤ ${TARGETS.endUsersP99Ms} ms | ${met(c.p99 <= TARGETS.endUsersP99Ms)} | ${c.plans.map((p: any) => `${p.ms} ms: ${p.nodes.replace(/\|/g, '\\|')} (${p.buffers})`).join('; ') || '—'} |`),
    '',
    `Sizes: ${f.sizes.map((s: any) => `\`${s.name}\` ${n(s.mb)} MB`).join(', ')}.`,
    ...(f.post ? [
      '',
      `On this ledger, \`POST /generations\` from 32 connections with one key of the account (no worker; the queue emptied before each load), ${f.post.seconds} s rounds interleaved; the ratio is the median of the rounds' ratios:`,
      '',
      '| body | req/s | p50 / p99 ms | ratio | target | |',
      '|---|---|---|---|---|---|',
      `| without \`endUser\` | ${f.post.without.median.rps} | ${f.post.without.median.p50} / ${f.post.without.median.p99} | 1 | | |`,
      `| \`endUser\` (one of the 100,000) with a monthly cap | ${f.post.capped.median.rps} | ${f.post.capped.median.p50} / ${f.post.capped.median.p99} | ${f.post.capped.ratio} | ≥ 0.9 | ${met(f.post.capped.ratio >= 0.9)} |`,
      '',
      `Rounds (req/s): without ${f.post.without.rounds.join(', ')}; with ${f.post.capped.rounds.join(', ')}.`,
    ] : []),
  ];
}

function batches(f: Figures): string[] {
  const a = f.accept;
  const t = f.throughput;
  const l = f.latency;
  const factor = l.idle.p99 > 0 ? +(l.draining.p99 / l.idle.p99).toFixed(2) : NaN;
  return [
    '## Batches and lanes',
    '',
    `A \`kiln worker\` process (concurrency ${t.workerConcurrency}) and a zero-latency local code model; the batches' account has ${t.batchSlots} parallel slots, the interactive generations come from the 64 bench accounts. ` +
      `Throughput: ${n(t.lines)} POST /generations from ${t.connections} connections (first POST → the last one completed) from the batches' account (its key, slots and pool: the ratio) and, for reference, from the 64 bench accounts, then a ${n(t.lines)}-line batch (POST /batches → completed). ` +
      `Latency: enqueue → \`processing\` (\`kiln.generation_timings.queued_ms\`) of ${l.n} interactive generations posted at ${l.ratePerSecond}/s, on an idle queue and then while a ${n(a.lines)}-line batch drains (${n(l.drained)} of its lines ended meanwhile, ${n(l.left)} were left). ` +
      'The accepting process\'s RSS is sampled every 5 ms from /proc.',
    '',
    '| benchmark | measured | goal | |',
    '|---|---|---|---|',
    `| accept a ${n(a.lines)}-line batch (${a.megabytes} MB): time to 202 | ${a.seconds} s | ≤ ${TARGETS.batchAcceptSeconds} s | ${met(a.seconds <= TARGETS.batchAcceptSeconds)} |`,
    `| … API peak RSS growth | +${a.rssGrowthMb} MB | ≤ +${TARGETS.batchAcceptMb} MB | ${met(a.rssGrowthMb <= TARGETS.batchAcceptMb)} |`,
    `| ${n(t.lines)} lines: batch vs POST /generations (same account) | ${t.batchSeconds} s (${n(t.batchPerSecond)}/s) vs ${t.postSeconds} s (${n(t.postPerSecond)}/s): ${t.ratio}× | ≥ ${TARGETS.batchSpeedup}× | ${met(t.ratio >= TARGETS.batchSpeedup)} |`,
    `| … CPU ms per line: worker / Postgres / API | batch ${t.batchCpu.worker} / ${t.batchCpu.postgres ?? '?'} / ${t.batchCpu.api}; POST ${t.postCpu.worker} / ${t.postCpu.postgres ?? '?'} / ${t.postCpu.api} | — | |`,
    ...(t.spread ? [`| … POST /generations from the 64 bench accounts instead | ${t.spread.seconds} s (${n(t.spread.perSecond)}/s): batch ${t.spread.ratio}×; CPU ms per line ${t.spread.cpu.worker} / ${t.spread.cpu.postgres ?? '?'} / ${t.spread.cpu.api} | — | |`] : []),
    `| interactive enqueue → processing, idle | p50 ${l.idle.p50} ms, p99 ${l.idle.p99} ms, max ${l.idle.max} ms | — | |`,
    `| … while a ${n(a.lines)}-line batch drains | p50 ${l.draining.p50} ms, p99 ${l.draining.p99} ms, max ${l.draining.max} ms: p99 ${factor}× idle | p99 ≤ ${TARGETS.batchLatencyFactor}× idle | ${met(factor <= TARGETS.batchLatencyFactor)} |`,
    ...(l.control ? [`| … control: idle queue, busy loops outside Kiln on the ${l.control.busyLoopCores} cores the drain added | p50 ${l.control.p50} ms, p99 ${l.control.p99} ms, max ${l.control.max} ms: p99 ${l.idle.p99 > 0 ? +(l.control.p99 / l.idle.p99).toFixed(2) : NaN}× idle (machine busy: idle ${l.cores.idle}, draining ${l.cores.draining}, control ${l.cores.control} cores) | — | |`] : []),
  ];
}
function admin(f: Figures): string[] {
  const r = f.rows;
  const g = f.generateSeconds as Record<string, number>;
  return [
    `## Admin: the accounts page at ${n(r.accounts)} accounts and ${n(r.charges)} charges`,
    '',
    `Generated in SQL, set-based (\`KILN_BENCH_ADMIN_SCALE=${f.scale}\`): ${n(r.accounts)} accounts (period anchors spread over 30 days), ${n(r.keys)} keys, ${n(r.charges)} charges over the past year skewed towards a few accounts, ` +
      `then ${n(r.budgetPeriods)} budget periods, ${n(r.chargeDays)} daily roll-up rows and \`kiln_private.account_spend\` derived from the ledger; ${n(r.spending)} accounts spent this period. ` +
      `Generated in ${g.total} s (${Object.entries(g).filter(([k]) => k !== 'total').map(([k, v]) => `${k} ${v} s`).join(', ')}). ` +
      `\`kiln.admin_list_accounts\` (what \`GET /admin/accounts\` runs) timed at the client, ${RUNS_NOTE}; the plans are auto_explain's (ANALYZE, BUFFERS) of the statements inside the function, one run each.`,
    '',
    '| page | rows | p50 / p99 / max | target | | plan of the statements inside (time, nodes, buffers) |',
    '|---|---|---|---|---|---|',
    ...f.cases.map((c: any) => `| ${c.name} (\`${c.query}\`) | ${c.rows} | ${c.p50} / ${c.p99} / ${c.max} ms | p99 ≤ ${TARGETS.adminPageP99Ms} ms | ${met(c.p99 <= TARGETS.adminPageP99Ms)} | ${c.plans.map((p: any) => `${p.ms} ms: ${p.nodes.replace(/\|/g, '\\|')} (${p.buffers})`).join('; ') || '—'} |`),
    `| \`GET /admin/accounts?limit=50\` over HTTP (authorization included) | 50 | ${f.http.p50} / ${f.http.p99} ms | p99 ≤ ${TARGETS.adminPageP99Ms} ms | ${met(f.http.p99 <= TARGETS.adminPageP99Ms)} | |`,
    '',
    `Sizes: ${f.sizes.map((s: any) => `\`${s.name}\` ${n(s.mb)} MB`).join(', ')}.`,
  ];
}
const RUNS_NOTE = '50 sequential calls after a warm-up';

/** Streaming (issue 40): delivery latency, writes and NOTIFYs per generation-second, CPU streamed against not. */
function streaming(f: Figures): string[] {
  const d = (x: Figures) => `p50 ${x.p50} ms, p90 ${x.p90} ms, p99 ${x.p99} ms, max ${x.max} ms`;
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
  const c = (x: Figures) => `${n(x.api)} / ${n(x.worker)} / ${x.postgres === null ? '?' : n(x.postgres)} / ${n(x.loadGenerator)}`;
  const l = f.latency;
  const aw = (x: Figures) => x.api + x.worker;
  const ps = f.postgresSplit;
  const pgPerFlush = ps ? Math.round((ps.streamed.clients - ps.notStreamed.clients) / f.flushesPerGeneration) : null;
  const listenPerNotify = ps && f.listeners ? Math.round((ps.streamed.listeners - ps.notStreamed.listeners) / f.flushesPerGeneration / f.listeners) : null;
  const extraPerGen = aw(f.cpu.streamed) - aw(f.cpu.notStreamed);
  return [
    `## Streaming: ${n(f.generations)} generations streaming at once (issue 40)`,
    '',
    `A \`kiln api\` and a \`kiln worker\` process (\`KILN_WORKER_CONCURRENCY=${f.workerConcurrency}\`, the default pool; ${f.accounts} accounts with ${Math.ceil(f.generations / f.accounts) + 1} parallel slots each), a loopback OpenAI-protocol peer (test/_openai-peer.ts \`chatStream\`) writing ${f.chunks} chunks ${f.chunkMs} ms apart to each of ${f.generations} code generations (about ${((f.chunks * f.chunkMs) / 1000).toFixed(0)} s each), and ${f.generations} SSE clients on \`GET /generations/{id}/events\`, one per generation, attached right after its POST; all ${f.generations} POSTed at once. Four rounds: streamed, not streamed (the entry's \`upstream.stream: false\`: the peer answers one JSON body after the same time), not streamed, streamed; a warm-up of 20 short generations of each kind before. ` +
      `Latency: each chunk's text names its chunk (\`/*c=N*/\`), the peer records when it wrote each chunk, and a client's read of a delta counts for every chunk the delta carries, from that chunk's own write (Date.now(): the peer, the clients and a LISTEN on \`kiln_status\` share the load generator's process and clock). ` +
      `Writes: inserts and updates of \`kiln_private.generation_streams\` over the four rounds (\`pg_stat_user_tables\`, read once the counters settle; the not-streamed rounds write none); NOTIFYs: stream notices heard by the LISTEN; both over the peer's streaming seconds of the streamed rounds (first to last content chunk, summed over generations). ` +
      `CPU from /proc over each round (the POSTs to the last terminal event), per generation; Postgres's split by backend from /proc and \`pg_stat_activity\`. ` +
      `Load average at the section's start: ${f.loadAtStart.join(' / ')} (1 / 5 / 15 min). \`POST /generations\` and \`GET /generations/{id}\` ratios to \`select 1\` are measured by the Generations section above (\`KILN_BENCH_ONLY=generations\`), not again here.`,
    '',
    '| benchmark | measured | target | |',
    '|---|---|---|---|',
    `| peer write → SSE client read, ${n(l.n)} chunks of ${f.generations} generations streaming at once | ${d(l)} | p50 ≤ ${TARGETS.streamP50Ms} ms, p99 ≤ ${TARGETS.streamP99Ms} ms | p50 ${met(l.p50 <= TARGETS.streamP50Ms)}, p99 ${met(l.p99 <= TARGETS.streamP99Ms)} |`,
    `| — peer write → the flush's NOTIFY heard by a listener (worker: read, coalesce, \`kiln.stream_generations\`) | ${d(f.toNotify)} | — | |`,
    `| — NOTIFY heard → SSE client read (API: its LISTEN, fan-out, SSE write) | ${d(f.notifyToClient)} | — | |`,
    `| — the newest chunk of each delta (the one that waited least to be flushed) | ${d(f.newest)} | — | |`,
    `| — each generation's first chunk (written at once, but during the start of all ${f.generations}), peer write → NOTIFY heard | ${d(f.firstToNotify)} | — | |`,
    `| the floor: ${f.probe.generations} generations alone, a chunk every ${f.probe.chunkMs} ms (each written at once), peer write → client read (→ NOTIFY heard, NOTIFY → client) | ${d(f.floor.latency)} (p50 ${f.floor.toNotify.p50} + ${f.floor.notifyToClient.p50} ms) | — | |`,
    `| interval between two flushes of one generation; chunks per delta | ${d(f.flushInterval)}; ${f.chunksPerDelta} | — | |`,
    `| generations processing at once (peak, SQL sampled every 200 ms) / streaming at once (first to last delta, client side) | ${f.peakProcessing} / ${f.peakStreaming} (lowest of the streamed rounds) | ${f.generations} | ${met(f.peakProcessing >= f.generations && f.peakStreaming >= f.generations)} |`,
    `| Postgres writes per streaming generation-second (${n(f.writes.inserts)} inserts + ${n(f.writes.updates)} updates over ${n(f.streamSeconds)} s; the ${n(f.writes.deletes)} deletes at the ends not counted) | ${f.writesPerSecond} | ≤ ${TARGETS.streamWritesPerSecond} | ${met(f.writesPerSecond <= TARGETS.streamWritesPerSecond)} |`,
    `| stream NOTIFYs per streaming generation-second | ${f.notifiesPerSecond} | ≤ ${TARGETS.streamWritesPerSecond} | ${met(f.notifiesPerSecond <= TARGETS.streamWritesPerSecond)} |`,
    `| CPU µs per generation, API / worker / Postgres / load generator: not streamed | ${c(f.cpu.notStreamed)} | — | |`,
    `| CPU µs per generation, API / worker / Postgres / load generator: streamed | ${c(f.cpu.streamed)} | — | |`,
    ...(ps ? [`| Postgres CPU µs per generation, not streamed → streamed: the ${f.listeners} backends LISTENing on \`kiln_status\` / other client backends (where the flushes run) / background processes | ${['listeners', 'clients', 'background'].map((k) => `${n(ps.notStreamed[k])} → ${n(ps.streamed[k])}`).join(' / ')} | — | |`] : []),
    `| API + worker CPU, streamed against not streamed | ${n(aw(f.cpu.streamed))} against ${n(aw(f.cpu.notStreamed))} µs: ${pct(f.cpuCost)} | ≤ +${TARGETS.streamCpuCost * 100} % | ${met(f.cpuCost <= TARGETS.streamCpuCost)} |`,
    '',
    `Rounds: ${f.rounds.map((r: Figures, i: number) => `${i + 1}. ${r.mode}, ${r.completed} completed in ${r.seconds} s, peak ${r.peakProcessing} processing, CPU µs/generation ${c(r.cpu)}`).join('; ')}. ` +
      `Checks: ${f.completed} of ${f.rounds.length * f.generations} generations completed; ${f.textMismatches} streams whose deltas did not concatenate to the peer's text; ${f.resets} resets; ${f.notStreamedNotifies} stream NOTIFYs in the not-streamed rounds. ` +
      `The load generator's event-loop delay over the rounds: p50 ${f.loadGeneratorLag.p50} ms, p99 ${f.loadGeneratorLag.p99} ms, max ${f.loadGeneratorLag.max} ms (10 ms resolution).`,
    '',
    `Where the latency goes: the API adds little (NOTIFY → client p50 ${f.notifyToClient.p50} ms) and the pipeline's floor is ${f.floor.latency.p50} ms; the rest is the worker's coalescing, one flush per generation about every ${f.flushInterval.p50} ms (\`FLUSH_MS\` in src/generations/stream-writer.ts: at most one flush a slot of a grid every stream of the process shares). ` +
      `At ${Math.round(1000 / f.chunkMs)} evenly spaced chunks a second and at most 10 flushes a second, at least half the chunks are not the last of their flush, whose last chunk the peer wrote ${f.chunkMs} ms or more after them, so at least half wait ${f.chunkMs} ms or more plus the floor: p50 ≤ ${TARGETS.streamP50Ms} ms and ≤ ${TARGETS.streamWritesPerSecond} writes a second cannot both hold at this chunk rate, whatever the flush timing. ` +
      `The newest chunk of each delta (p50 ${f.newest.p50} ms) shows the other half.`,
    '',
    `Where the CPU goes: streaming adds ${f.flushesPerGeneration} flushes and ${f.deltasPerGeneration} deltas to each generation. Streamed − not streamed, that is ${n(f.workerPerFlush)} µs of worker CPU per flush (reading the peer's SSE, its share of one \`kiln.stream_generations\` call a grid slot)` +
      (pgPerFlush !== null ? `, ${n(pgPerFlush)} µs of Postgres per flush in the backend that runs it and ${n(listenPerNotify ?? 0)} µs per NOTIFY in each LISTENing backend` : '') +
      `, and ${n(f.apiPerDelta)} µs of API CPU per delta sent (the notice, the event, one socket write per client). The not-streamed generation costs API + worker ${n(aw(f.cpu.notStreamed))} µs in all, so +${TARGETS.streamCpuCost * 100} % leaves ${n(aw(f.cpu.notStreamed) * TARGETS.streamCpuCost)} µs for ${f.deltasPerGeneration} flushes and deltas (about ${n((aw(f.cpu.notStreamed) * TARGETS.streamCpuCost) / f.deltasPerGeneration)} µs each) against the ${n(extraPerGen)} µs measured. A worker's flushes already leave as one SQL call per grid slot; what stays is the API's share, one event and one socket write per client per flush${f.apiPerDelta * f.deltasPerGeneration > aw(f.cpu.notStreamed) * TARGETS.streamCpuCost ? `, and the API's extra alone (${n(f.apiPerDelta * f.deltasPerGeneration)} µs) is over the whole allowance` : ''}.`,
  ];
}


/** One section's markdown, markers included. */
export function renderSection(name: string, figures: Figures, run: RunInfo): string {
  const body = RENDER[name]?.(figures) ?? [`## ${name}`, '', '```json', JSON.stringify(figures, null, 2), '```'];
  const [title, ...rest] = body;
  return [`<!-- bench:${name} -->`, title, '', `Measured ${run.started} UTC on ${run.machine}.`, ...rest, `<!-- /bench:${name} -->`].join('\n');
}

const SKELETON = `# Kiln benchmarks

Written by \`npm run bench\` (\`test/bench/run.ts\`). Each section between \`<!-- bench:… -->\`
markers is replaced by the run that measured it (\`KILN_BENCH_ONLY=…\` runs only some, and the
foundation always); the rest of this file is kept as written.
`;

/** Replaces the sections this run measured in `text` (appending those it lacks) and returns it. */
export function mergeSections(text: string, sections: Record<string, string>): string {
  let out = text || SKELETON;
  for (const name of [...SECTION_ORDER, ...Object.keys(sections)]) {
    const section = sections[name];
    if (section === undefined) continue;
    const re = new RegExp(`<!-- bench:${name} -->[\\s\\S]*?<!-- /bench:${name} -->`);
    // A function replacement: section text may contain `$` sequences.
    out = re.test(out) ? out.replace(re, () => section) : `${out.trimEnd()}\n\n${section}\n`;
  }
  return out;
}

/** Writes the measured sections into BENCH.md, keeping the others. */
export function writeBench(results: Record<string, Figures>, run: RunInfo, file = BENCH_FILE): string[] {
  const sections = Object.fromEntries(Object.entries(results).map(([name, f]) => [name, renderSection(name, f, run)]));
  const before = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  fs.writeFileSync(file, mergeSections(before, sections));
  return Object.keys(sections);
}
