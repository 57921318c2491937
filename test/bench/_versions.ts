// BENCH.md's `node` section: the figures of one `npm run bench` per Node version side by side
// (test/bench/node.ts runs them). Ratios and latencies are compared, each from its own run.

import { SECTION_ORDER, TARGETS } from './_report.ts';

type Figures = Record<string, any>;

export interface VersionRun {
  /** process.version of the run. */
  version: string;
  /** ISO date and time (UTC, minutes) the run started. */
  started: string;
  seconds: number;
  /** CPU cores of the machine. */
  cores: number;
  /** 1-, 5- and 15-minute load averages when the run started and when it ended. */
  loadBefore: number[];
  loadAfter: number[];
  /** test/bench/run.ts's results: section name → figures. */
  results: Record<string, Figures>;
}

interface Row {
  section: string;
  label: string;
  target: string;
  value(f: Figures): string;
}

const n = (x: number) => Math.round(x).toLocaleString('en-US');
const r2 = (x: number) => x.toFixed(2);
const ms = (x: number) => `${x} ms`;
const s = (x: number) => `${(x / 1000).toFixed(2)} s`;
const cpuOf = (r: { cpu?: { node: number } }) => (r.cpu ? String(r.cpu.node) : '—');
const pgOf = (r: { cpu?: { postgres: number | null } }) => (r.cpu?.postgres == null ? '—' : String(r.cpu.postgres));

const ROWS: Row[] = [
  { section: 'foundation', label: '`GET /models` ratio to `select 1`', target: `≥ ${TARGETS.modelsRatio}`, value: (f) => r2(f.modelsRatio) },
  { section: 'foundation', label: '`GET /usage` ratio to `select 1`', target: `≥ ${TARGETS.usageRatio}`, value: (f) => r2(f.usageRatio) },
  { section: 'foundation', label: 'bare `select 1` route, req/s (median round)', target: '—', value: (f) => n(f.select1.rps) },
  // CPU time per request is counted from /proc, not the clock: the steadier figure across runs on a busy machine.
  { section: 'foundation', label: 'server CPU µs per request: `select 1` / `GET /models` / `GET /usage`', target: '—', value: (f) => [f.select1, f.models, f.usage].map(cpuOf).join(' / ') },
  { section: 'foundation', label: 'Postgres CPU µs per request: `select 1` / `GET /models` / `GET /usage`', target: '—', value: (f) => [f.select1, f.models, f.usage].map(pgOf).join(' / ') },
  { section: 'generations', label: '`POST /generations` ratio to `select 1`', target: `≥ ${TARGETS.postRatio}`, value: (f) => r2(f.postRatio) },
  { section: 'generations', label: '`GET /generations/{id}` ratio to `select 1`', target: `≥ ${TARGETS.getGenerationRatio}`, value: (f) => r2(f.getRatio) },
  { section: 'generations', label: 'server CPU µs per request: `POST` / `GET`', target: '—', value: (f) => [f.post, f.get].map(cpuOf).join(' / ') },
  { section: 'generations', label: 'enqueue → `processing`, p50 / p99', target: `≤ ${TARGETS.enqueueP50Ms} / ${TARGETS.enqueueP99Ms} ms`, value: (f) => `${f.enqueueToProcessing.p50} / ${ms(f.enqueueToProcessing.p99)}` },
  { section: 'workflows', label: 'chain: per-edge overhead p50', target: `≤ ${TARGETS.chainEdgeP50Ms} ms`, value: (f) => ms(f.chain.edgeOverheadP50Ms) },
  { section: 'workflows', label: 'fan-out / fan-in wall time', target: `≤ ${s(TARGETS.fanOutWallMs)}`, value: (f) => s(f.fanOut.wallMs) },
  { section: 'workflows', label: 'independent nodes at a 500 ms peer, wall time', target: `≤ ${s(TARGETS.parallelPeerWallMs)}`, value: (f) => s(f.parallelPeer.wallMs) },
  { section: 'images', label: 'convert → jpeg / webp / avif / png', target: '—', value: (f) => `${n(f.convertMs.jpeg)} / ${n(f.convertMs.webp)} / ${n(f.convertMs.avif)} / ${n(f.convertMs.png)} ms` },
  { section: 'images', label: 'trim (100 px white frame)', target: '—', value: (f) => `${n(f.trimMs.framed)} ms` },
  {
    section: 'images',
    label: 'compress: max time vs one plain encode (webp / jpeg / avif)',
    target: `≤ ${TARGETS.compressTimeVsPlainEncode}×`,
    value: (f) => ['webp', 'jpeg', 'avif'].map((k) => (f.compressSummary[k] ? `${r2(f.compressSummary[k].maxTimeVsPlainEncode)}×` : '—')).join(' / '),
  },
  { section: 'wait', label: 'settlement → waiting response, p50 / p99', target: `≤ ${TARGETS.waitP50Ms} / ${TARGETS.waitP99Ms} ms`, value: (f) => `${f.waitLatency.p50} / ${ms(f.waitLatency.p99)}` },
  { section: 'wait', label: "settlement → stream's terminal event, p50 / p99", target: '—', value: (f) => `${f.streamLatency.p50} / ${ms(f.streamLatency.p99)}` },
  { section: 'wait', label: 'API RSS growth per open waiter / stream', target: `≤ ${TARGETS.waiterKb} KB each`, value: (f) => `${f.rssPerWaiterKb} / ${f.rssPerStreamKb} KB` },
  { section: 'wait', label: 'API JS heap + external growth per open waiter / stream', target: '—', value: (f) => `${f.heapPerWaiterKb ?? '—'} / ${f.heapPerStreamKb ?? '—'} KB` },
];

function cell(row: Row, run: VersionRun): string {
  const f = run.results[row.section];
  if (!f) return 'not run';
  try {
    return row.value(f);
  } catch {
    return '—'; // a figure this run's bench did not report
  }
}

const loads = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(' / ');

/** The `node` section, markers included. */
export function renderVersions(runs: VersionRun[]): string {
  const sections = [...new Set(ROWS.map((r) => r.section))].filter((name) => runs.some((run) => run.results[name]));
  const rows = ROWS.filter((r) => sections.includes(r.section));
  const skipped = SECTION_ORDER.filter((name) => !runs.some((run) => run.results[name]));
  const cores = runs[0]?.cores ?? 1;
  const peak = Math.max(...runs.flatMap((run) => [run.loadBefore[0]!, run.loadAfter[0]!]));
  // Past one runnable process per core the bench competes with others for CPU, unevenly over time.
  const select1Rounds = runs.flatMap((run) => (run.results.foundation?.rounds?.select1 as number[] | undefined) ?? []);
  const spread = select1Rounds.length ? ` (the \`select 1\` rounds ran between ${n(Math.min(...select1Rounds))} and ${n(Math.max(...select1Rounds))} req/s)` : '';
  const loaded = peak > cores
    ? [`**The machine was loaded** (1-minute load average up to ${peak.toFixed(2)} on ${cores} cores): other work competed for the CPU during these runs${spread}, so ratios and latencies swing far more than the usual ±0.2 and a difference between the columns is no finding by itself. CPU time per request, counted from /proc rather than the clock, is the steadier figure.`, '']
    : [];
  return [
    '<!-- bench:node -->',
    '## Node versions: the same bench on each',
    '',
    `Written by \`npm run bench:node\` (\`test/bench/node.ts\`): \`npm run bench\` once per Node version, one after the other on the same machine, each run writing its figures here only (the sections above keep \`npm run bench\`'s). Compare ratios and latencies, each from its own run; absolute req/s follow the machine's load.`,
    '',
    ...loaded,
    ...runs.map((run) => `- Node ${run.version}: started ${run.started} UTC, ${n(run.seconds)} s; load average (1 / 5 / 15 min) ${loads(run.loadBefore)} at start, ${loads(run.loadAfter)} at the end.`),
    ...(skipped.length ? ['', `Not measured in these runs (\`KILN_BENCH_ONLY\`): ${skipped.join(', ')}.`] : []),
    '',
    `| ${['section', 'figure', 'target', ...runs.map((run) => `Node ${run.version}`)].join(' | ')} |`,
    `|${['---', '---', '---', ...runs.map(() => '---')].join('|')}|`,
    ...rows.map((row) => `| ${[row.section, row.label, row.target, ...runs.map((run) => cell(row, run))].join(' | ')} |`),
    '<!-- /bench:node -->',
  ].join('\n');
}
