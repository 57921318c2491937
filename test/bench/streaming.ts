// Benchmark (issue 40, docs/api.md "Streaming"): 100 code generations streaming at once from a
// loopback OpenAI-protocol peer (chat completions SSE, a chunk every 50 ms for about 10 s each)
// through a `kiln worker` process and a `kiln api` process to 100 loopback SSE clients on
// GET /generations/{id}/events. Measures, in one run:
//  1. delivery latency: the peer's write of a chunk (StreamOpts.written) → a client reading the
//     delta that carries it (each chunk names itself with a `/*c=N*/` marker; a delta may carry
//     several, each counted from its own write), with where the time goes: peer → the flush's
//     NOTIFY heard by a listener here, NOTIFY → client;
//  2. Postgres writes (inserts and updates of kiln_private.generation_streams) and stream NOTIFYs
//     per streaming generation-second;
//  3. CPU per generation (API, worker, Postgres, from /proc), streamed against the same 100
//     generations not streamed (`upstream.stream: false`: the peer answers one JSON body after
//     the same time), 100 SSE clients attached in both. Rounds run streamed, not, not, streamed
//     (a linear drift of the machine's other load cancels out).
// Called by test/bench/run.ts (`KILN_BENCH_ONLY=streaming npm run bench` runs this section alone).

import { spawn, type ChildProcess } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import readline from 'node:readline';
import postgres from 'postgres';
import { generateKey } from '../../src/auth/secrets.ts';
import { chatReply, chatStream, startOpenAIPeer, type OpenAIPeer, type PeerReply } from '../_openai-peer.ts';
import { clusterTicks, cpuTicks, TICKS_PER_SECOND } from './_env.ts';
import { TARGETS } from './_report.ts';
import type { BenchContext } from './run.ts';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'kiln.js');
const GENERATIONS = Number(process.env.KILN_BENCH_STREAMS ?? 100);
const CHUNK_MS = 50;
const CHUNKS = Number(process.env.KILN_BENCH_STREAM_CHUNKS ?? 200); // 200 × 50 ms ≈ 10 s
const ACCOUNTS = 4;
const PROBE_GENERATIONS = 5;
const PROBE_CHUNKS = 20;
const PROBE_CHUNK_MS = 250;
const PEER_KEY_ENV = 'KILN_BENCH_PEER_KEY';
const PRICE = { input_micros_per_token: 1, output_micros_per_token: 2 };
const USAGE = { prompt_tokens: 40, completion_tokens: 1200 };

/** Chunk c's text: a line of code naming its chunk (the marker the latency is read from). */
const chunkText = (c: number) => `let v${c} = ${c}; /*c=${c}*/\n`;
const MARKER = /\/\*c=(\d+)\*\//g;

interface Proc { child: ChildProcess; base: string }

function spawnKiln(command: 'api' | 'worker', dbUrl: string, env: Record<string, string>): Promise<Proc> {
  // KILN_BENCH_CPU_PROF=<dir>: the API and the worker write V8 CPU profiles there when they exit.
  const prof = process.env.KILN_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.KILN_BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...prof, BIN, command], {
    env: { ...process.env, DATABASE_URL: dbUrl, PORT: '0', KILN_LOG: 'error', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (l) => {
      const m = /listening on (http:\S+)/.exec(l);
      if (m) resolve({ child, base: m[1]! });
      else if (/worker started/i.test(l)) resolve({ child, base: '' });
    });
    child.once('exit', (c) => reject(new Error(`kiln ${command} exited (${c})`)));
  });
}

async function stop(p: Proc) {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const done = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGTERM');
  await done;
}

/** CPU ticks of each child of the postmaster (backends and background processes). */
function backendTicks(postmasterPid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ');
      if (Number(stat[1]) === postmasterPid) out.set(Number(entry), Number(stat[11]) + Number(stat[12]));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return +sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!.toFixed(1);
}
export interface Dist { n: number; min: number; p50: number; p90: number; p99: number; max: number; mean: number }
function dist(xs: number[]): Dist {
  const s = [...xs].sort((a, b) => a - b);
  const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : NaN;
  return { n: s.length, min: percentile(s, 0), p50: percentile(s, 0.5), p90: percentile(s, 0.9), p99: percentile(s, 0.99), max: percentile(s, 1), mean: +mean.toFixed(1) };
}

/** Peak overlap of [start, end] intervals. */
function peakOverlap(intervals: Array<[number, number]>): number {
  const points = intervals.flatMap(([a, b]) => [[a, 1], [b, -1]] as Array<[number, number]>).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let cur = 0;
  let peak = 0;
  for (const [, d] of points) peak = Math.max(peak, (cur += d));
  return peak;
}

interface Gen {
  id: string;
  tag: string;
  key: string;
  /** Each delta's read time and text, in order. */
  deltas: Array<{ at: number; text: string; offset: number }>;
  resets: number;
  statuses: string[];
  terminalAt: number;
  ok: boolean;
}

/** One SSE client on GET /generations/{id}/events: records each event's read time (Date.now(), the peer's clock). */
async function follow(base: string, g: Gen): Promise<void> {
  const r = await fetch(`${base}/generations/${g.id}/events`, { headers: { authorization: `Bearer ${g.key}` } });
  if (r.status !== 200) throw new Error(`GET /generations/${g.id}/events → ${r.status}: ${await r.text()}`);
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
    const at = Date.now();
    buf += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const raw = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of raw.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (!data.length) continue;
      const body = JSON.parse(data.join('\n'));
      if (event === 'delta') g.deltas.push({ at, text: body.text, offset: body.offset });
      else if (event === 'reset') g.resets++;
      else if (event === 'status') {
        g.statuses.push(body.status);
        if (body.status === 'completed' || body.status === 'failed') {
          g.terminalAt = at;
          g.ok = body.status === 'completed';
        }
      }
    }
  }
}

interface RoundFigures {
  mode: 'streamed' | 'not streamed';
  generations: number;
  completed: number;
  /** Wall time from the first POST to the last terminal event, s. */
  seconds: number;
  /** Most generations processing at once (sampled in SQL every 200 ms). */
  peakProcessing: number;
  /** Most generations between their first and last delta at once (client side). */
  peakStreaming: number;
  /** CPU µs per generation. */
  cpu: { api: number; worker: number; postgres: number | null; loadGenerator: number };
  latencies?: number[];
  toNotify?: number[];
  notifyToClient?: number[];
  firstToNotify?: number[];
  newest?: number[];
  /** Postgres CPU µs per generation by kind of backend, and how many backends LISTEN. */
  postgresSplit?: Record<string, number>;
  listeners?: number;
  chunksPerDelta?: number;
  deltaCount?: number;
  flushIntervalMs?: number[];
  textMismatches?: number;
  resets?: number;
  streamSeconds?: number;
  streamNotifies?: number;
  statusNotifies?: number;
}

export async function benchStreaming(ctx: BenchContext) {
  const loadAtStart = os.loadavg().map((x) => +x.toFixed(2));
  const { sql } = ctx;
  process.env[PEER_KEY_ENV] = 'bench-peer-key';

  // The peer: each request names its generation's tag in the prompt; a streamed reply records
  // when each chunk was written.
  // The peer's pauses all listen on one abort signal (its close): one per stream in flight.
  setMaxListeners(GENERATIONS * 2);
  const peer: OpenAIPeer = await startOpenAIPeer({ strict: false });
  const written = new Map<string, number[]>();
  let chunks = CHUNKS;
  let chunkMs = CHUNK_MS;
  peer.script((req): PeerReply => {
    const tag = /tag=(\w+)/.exec(JSON.stringify(req.json))?.[1] ?? 'none';
    const parts = Array.from({ length: chunks }, (_, c) => chunkText(c));
    if (req.json?.stream === true) {
      const w: number[] = [];
      written.set(tag, w);
      return chatStream(parts, USAGE, { chunkMs, written: w });
    }
    // The same total time, one body: the role chunk and every delta's pause.
    return { ...chatReply(parts.join(''), USAGE), delayMs: chunks * chunkMs };
  });

  // Accounts: each with a slot more than its share of parallel slots (enterprise has 8), so all run at once.
  const keys: string[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const [a] = await sql`select * from kiln.create_account(${`stream-bench${i}-${Date.now()}@example.test`}, 'enterprise', null, true)`;
    await sql`update kiln_private.accounts set parallel_slots = ${Math.ceil(GENERATIONS / ACCOUNTS) + 1} where id = ${a!.id}`;
    const k = generateKey();
    await sql`select kiln.create_api_key(${a!.id}, ${k.hash}, ${k.displayPrefix}, ${['read', 'write']}, null, null, null)`;
    keys.push(k.key);
  }
  for (const [id, stream] of [['bench/stream', true], ['bench/no-stream', false]] as const) {
    await sql`select kiln.upsert_model(${sql.json({
      id, name: id, category: 'text', provider: 'openai', cost: PRICE, maxOutputTokens: 4000, markup: 1,
      upstream: { baseUrl: peer.url, model: 'bench-peer', apiKeyEnv: PEER_KEY_ENV, ...(stream ? {} : { stream: false }) },
    })})`;
  }

  // Every stream and status NOTIFY as this process hears it.
  const heard = new Map<string, Map<number, number>>(); // generation → chunk → heard at
  const flushTimes = new Map<string, number[]>();
  let streamNotifies = 0;
  let statusNotifies = 0;
  let watched = new Set<string>();
  const listener = postgres(ctx.dbUrl, { max: 1, onnotice: () => {} });
  await listener.listen('kiln_status', (payload) => {
    const at = Date.now();
    const n = JSON.parse(payload);
    if (n.k !== 'generation' || !watched.has(n.id)) return;
    if (!n.x) {
      if (n.s) statusNotifies++;
      return;
    }
    streamNotifies++;
    (flushTimes.get(n.id) ?? flushTimes.set(n.id, []).get(n.id)!).push(at);
    const m = heard.get(n.id) ?? heard.set(n.id, new Map()).get(n.id)!;
    for (const [, c] of String(n.x.t ?? '').matchAll(MARKER)) if (!m.has(Number(c))) m.set(Number(c), at);
  });

  const env = { KILN_READ_RPM: '100000000', KILN_WORKER_CONCURRENCY: String(GENERATIONS + 16) };
  const [api, worker] = await Promise.all([spawnKiln('api', ctx.dbUrl, env), spawnKiln('worker', ctx.dbUrl, env)]);
  const lag = monitorEventLoopDelay({ resolution: 10 });
  try {
    const tableStats = async () => {
      const [r] = await sql`select n_tup_ins::int8 as ins, n_tup_upd::int8 as upd, n_tup_del::int8 as del from pg_stat_user_tables
        where schemaname = 'kiln_private' and relname = 'generation_streams'`;
      return { ins: Number(r?.ins ?? 0), upd: Number(r?.upd ?? 0), del: Number(r?.del ?? 0) };
    };

    const cpuNow = () => ({ api: cpuTicks(api.child.pid!), worker: cpuTicks(worker.child.pid!), pg: ctx.meter.postmasterPid ? clusterTicks(ctx.meter.postmasterPid) : 0, self: cpuTicks(process.pid) });

    const round = async (mode: RoundFigures['mode'], n: number, label: string): Promise<RoundFigures> => {
      const model = mode === 'streamed' ? 'bench/stream' : 'bench/no-stream';
      const gens: Gen[] = [];
      watched = new Set();
      const notifies0 = { stream: streamNotifies, status: statusNotifies };
      const t0 = cpuNow();
      const b0 = ctx.meter.postmasterPid ? backendTicks(ctx.meter.postmasterPid) : null;
      const started = Date.now();
      let peakProcessing = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const [{ n: p }] = await sql`select count(*)::int as n from kiln_private.generations where id = any(${gens.map((g) => g.id)}::uuid[]) and status = 'processing'`;
          peakProcessing = Math.max(peakProcessing, p);
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      // Every POST at once, each generation's client attached right after its POST.
      const posted = await Promise.all(Array.from({ length: n }, async (_, i) => {
        const key = keys[i % keys.length]!;
        const tag = `${label}g${i}`;
        const r = await fetch(`${api.base}/generations`, {
          method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'code', model, prompt: `streaming bench tag=${tag}`, targetLanguage: 'typescript' }),
        });
        const body = (await r.json()) as { id: string };
        if (r.status !== 202) throw new Error(`POST /generations → ${r.status}: ${JSON.stringify(body)}`);
        const g: Gen = { id: body.id, tag, key, deltas: [], resets: 0, statuses: [], terminalAt: 0, ok: false };
        watched.add(g.id);
        gens.push(g);
        return follow(api.base, g);
      }));
      let timer: NodeJS.Timeout | undefined;
      const limit = 30_000 + chunks * chunkMs * 3;
      await Promise.race([
        Promise.all(posted),
        new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`streaming bench: ${label} not done after ${limit} ms: ${gens.filter((g) => !g.terminalAt).length} streams open`)), limit); }),
      ]).finally(() => clearTimeout(timer));
      const t1 = cpuNow();
      const b1 = ctx.meter.postmasterPid ? backendTicks(ctx.meter.postmasterPid) : null;
      sampling = false;
      await sampler;
      const seconds = (Math.max(...gens.map((g) => g.terminalAt)) - started) / 1000;
      const per = (k: keyof typeof t0) => Math.round(((t1[k] - t0[k]) * 1e6) / TICKS_PER_SECOND / gens.length);
      const out: RoundFigures = {
        mode,
        generations: gens.length,
        completed: gens.filter((g) => g.ok).length,
        seconds: +seconds.toFixed(2),
        peakProcessing,
        peakStreaming: peakOverlap(gens.filter((g) => g.deltas.length).map((g) => [g.deltas[0]!.at, g.deltas.at(-1)!.at])),
        cpu: { api: per('api'), worker: per('worker'), postgres: ctx.meter.postmasterPid ? per('pg') : null, loadGenerator: per('self') },
      };
      out.streamNotifies = streamNotifies - notifies0.stream;
      out.statusNotifies = statusNotifies - notifies0.status;
      if (b0 && b1) {
        // Postgres CPU by kind of backend: those LISTENing on kiln_status (every stream NOTIFY
        // wakes each of them), the other client backends (the flushes run there), the rest.
        const rows = await sql`select pid, backend_type, query from pg_stat_activity`;
        const kind = new Map(rows.map((r) => [r.pid as number, r.backend_type !== 'client backend' ? 'background' : /^\s*listen\b/i.test(r.query) ? 'listeners' : 'clients']));
        const split: Record<string, number> = { listeners: 0, clients: 0, background: 0 };
        for (const [pid, t] of b1) split[kind.get(pid) ?? 'background'] += t - (b0.get(pid) ?? 0);
        out.postgresSplit = Object.fromEntries(Object.entries(split).map(([k, t]) => [k, Math.round((t * 1e6) / TICKS_PER_SECOND / gens.length)]));
        out.listeners = [...kind.values()].filter((k) => k === 'listeners').length;
      }
      if (mode === 'streamed') {
        const latencies: number[] = [];
        const toNotify: number[] = [];
        const notifyToClient: number[] = [];
        const firstToNotify: number[] = [];
        const newest: number[] = [];
        let markers = 0;
        let mismatches = 0;
        let resets = 0;
        let streamMs = 0;
        const intervals: number[] = [];
        const expected = Array.from({ length: chunks }, (_, c) => chunkText(c)).join('');
        for (const g of gens) {
          const w = written.get(g.tag);
          resets += g.resets;
          if (g.deltas.map((d) => d.text).join('') !== expected) mismatches++;
          if (!w) continue;
          // chatStream's chunks: the role chunk, then delta c at index c + 1.
          streamMs += w[chunks]! - w[1]!;
          const h = heard.get(g.id);
          for (const d of g.deltas) {
            const newestChunk = Math.max(...[...d.text.matchAll(MARKER)].map((m) => Number(m[1])));
            if (w[newestChunk + 1] !== undefined) newest.push(d.at - w[newestChunk + 1]!);
            for (const [, cs] of d.text.matchAll(MARKER)) {
              const c = Number(cs);
              const wrote = w[c + 1];
              if (wrote === undefined) continue;
              markers++;
              latencies.push(d.at - wrote);
              const at = h?.get(c);
              if (at !== undefined) {
                toNotify.push(at - wrote);
                if (c === 0) firstToNotify.push(at - wrote);
                notifyToClient.push(d.at - at);
              }
            }
          }
          const f = flushTimes.get(g.id) ?? [];
          for (let i = 1; i < f.length; i++) intervals.push(f[i]! - f[i - 1]!);
        }
        out.latencies = latencies;
        out.toNotify = toNotify;
        out.notifyToClient = notifyToClient;
        out.firstToNotify = firstToNotify;
        out.newest = newest;
        out.deltaCount = gens.reduce((x, g) => x + g.deltas.length, 0);
        out.chunksPerDelta = +(markers / Math.max(1, out.deltaCount)).toFixed(2);
        out.flushIntervalMs = intervals;
        out.textMismatches = mismatches;
        out.resets = resets;
        out.streamSeconds = +(streamMs / 1000).toFixed(1);
      }
      return out;
    };

    // Warm-up (JIT, sockets, pools): short generations of both kinds.
    chunks = 20;
    await round('streamed', 20, 'warmS');
    await round('not streamed', 20, 'warmN');
    chunks = CHUNKS;
    lag.enable();
    const stats0 = await tableStats();
    const rounds: RoundFigures[] = [];
    for (const [i, mode] of (['streamed', 'not streamed', 'not streamed', 'streamed'] as const).entries()) {
      const r = await round(mode, GENERATIONS, `r${i}`);
      console.log(`  round ${i + 1}, ${mode}: ${r.completed}/${r.generations} completed in ${r.seconds} s; peak processing ${r.peakProcessing}, peak streaming ${r.peakStreaming}; CPU µs/generation api ${r.cpu.api}, worker ${r.cpu.worker}, postgres ${r.cpu.postgres}`);
      rounds.push(r);
    }
    lag.disable();
    // Backends report their table counters some time after going idle (up to 10 s when the
    // statistics lock was busy): read until every row written was also deleted and nothing moves.
    let stats1 = await tableStats();
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      const again = await tableStats();
      const settled = again.del - stats0.del >= again.ins - stats0.ins && JSON.stringify(again) === JSON.stringify(stats1);
      stats1 = again;
      if (settled) break;
    }
    const writes = { inserts: stats1.ins - stats0.ins, updates: stats1.upd - stats0.upd, deletes: stats1.del - stats0.del };
    // The pipeline's floor: a few generations whose chunks come 250 ms apart (more than a flush
    // interval, so each is flushed at once, with no coalescing wait), nothing else running.
    chunks = PROBE_CHUNKS;
    chunkMs = PROBE_CHUNK_MS;
    const probe = await round('streamed', PROBE_GENERATIONS, 'probe');
    const floor = { latency: dist(probe.latencies!), toNotify: dist(probe.toNotify!), notifyToClient: dist(probe.notifyToClient!) };
    const f = summarize(rounds, writes, floor, loadAtStart, { p50: +(lag.percentile(50) / 1e6).toFixed(1), p99: +(lag.percentile(99) / 1e6).toFixed(1), max: +(lag.max / 1e6).toFixed(1) });
    const d = (x: Dist) => `p50 ${x.p50} ms, p90 ${x.p90} ms, p99 ${x.p99} ms, max ${x.max} ms (n ${x.n})`;
    console.log('\n## Streaming');
    console.log(`load average at start ${loadAtStart.join(' / ')}; ${GENERATIONS} generations × ${CHUNKS} chunks every ${CHUNK_MS} ms; peak processing ${f.peakProcessing}, peak streaming ${f.peakStreaming}`);
    console.log(`peer write → client read: ${d(f.latency)} (target p50 ≤ ${TARGETS.streamP50Ms}, p99 ≤ ${TARGETS.streamP99Ms})`);
    console.log(`  peer write → NOTIFY heard: ${d(f.toNotify)}`);
    console.log(`  NOTIFY heard → client read: ${d(f.notifyToClient)}`);
    console.log(`  newest chunk of each delta: ${d(f.newest)}`);
    console.log(`  floor (${PROBE_GENERATIONS} generations alone, a chunk every ${PROBE_CHUNK_MS} ms): ${d(f.floor.latency)}; to NOTIFY ${d(f.floor.toNotify)}; NOTIFY → client ${d(f.floor.notifyToClient)}`);
    console.log(`  between flushes of one generation: ${d(f.flushInterval)}; ${f.chunksPerDelta} chunks per delta`);
    console.log(`writes ${f.writesPerSecond}, NOTIFYs ${f.notifiesPerSecond} per streaming generation-second (target ≤ ${TARGETS.streamWritesPerSecond}); ${JSON.stringify(f.writes)} over ${f.streamSeconds} s`);
    console.log(`CPU µs/generation streamed ${JSON.stringify(f.cpu.streamed)}, not streamed ${JSON.stringify(f.cpu.notStreamed)}: API + worker ${(f.cpuCost * 100).toFixed(1)} % (target ≤ +${TARGETS.streamCpuCost * 100} %)`);
    if (f.postgresSplit) console.log(`Postgres CPU µs/generation by backend: streamed ${JSON.stringify(f.postgresSplit.streamed)}, not streamed ${JSON.stringify(f.postgresSplit.notStreamed)}; ${f.listeners} backends LISTEN`);
    console.log(`load generator event-loop delay p50 ${f.loadGeneratorLag.p50} ms, p99 ${f.loadGeneratorLag.p99} ms; text mismatches ${f.textMismatches}, resets ${f.resets}`);
    return f;
  } finally {
    lag.disable();
    await Promise.all([stop(api), stop(worker)]);
    await listener.end();
    await peer.close();
  }
}

export interface StreamingFigures {
  generations: number;
  chunks: number;
  chunkMs: number;
  accounts: number;
  workerConcurrency: number;
  /** os.loadavg() as the section started (1, 5, 15 min). */
  loadAtStart: number[];
  /** Peer write → client read, per chunk, ms (both streamed rounds). */
  latency: Dist;
  /** Peer write → the flush's NOTIFY heard here; NOTIFY heard → client read. */
  toNotify: Dist;
  notifyToClient: Dist;
  /** Between two stream NOTIFYs of one generation, ms. */
  flushInterval: Dist;
  chunksPerDelta: number;
  peakProcessing: number;
  peakStreaming: number;
  completed: number;
  textMismatches: number;
  resets: number;
  streamSeconds: number;
  writes: { inserts: number; updates: number; deletes: number };
  writesPerSecond: number;
  notifiesPerSecond: number;
  /** Stream NOTIFYs of the not-streamed rounds (none expected). */
  notStreamedNotifies: number;
  /** Peer write of each generation's first chunk (flushed at once, no coalescing wait) → its NOTIFY heard. */
  firstToNotify: Dist;
  /** Peer write → client read of the newest chunk in each delta (the one that waited least to be flushed). */
  newest: Dist;
  /** A few generations alone, a chunk every PROBE_CHUNK_MS (no coalescing wait): peer → client, peer → NOTIFY, NOTIFY → client. */
  floor: { latency: Dist; toNotify: Dist; notifyToClient: Dist };
  probe: { generations: number; chunks: number; chunkMs: number };
  /** Stream NOTIFYs per generation (each one flush). */
  flushesPerGeneration: number;
  /** Streamed − not streamed CPU per generation: worker µs per flush, API µs per delta sent. */
  workerPerFlush: number;
  apiPerDelta: number;
  deltasPerGeneration: number;
  /** CPU µs per generation, mean of the rounds of each mode. */
  cpu: { streamed: Cpu; notStreamed: Cpu };
  /** Postgres CPU µs per generation by kind of backend (mean of the rounds of each mode); backends LISTENing on kiln_status. */
  postgresSplit: { streamed: Record<string, number>; notStreamed: Record<string, number> } | null;
  listeners: number | null;
  /** API + worker, streamed ÷ not streamed − 1. */
  cpuCost: number;
  rounds: Array<{ mode: string; seconds: number; completed: number; peakProcessing: number; peakStreaming: number; cpu: Cpu }>;
  /** The load generator's event-loop delay over the measured rounds (peer, clients and listener share it), ms. */
  loadGeneratorLag: { p50: number; p99: number; max: number };
}
type Cpu = RoundFigures['cpu'];

function summarize(rounds: RoundFigures[], writes: StreamingFigures['writes'], floor: StreamingFigures['floor'], loadAtStart: number[], lag: StreamingFigures['loadGeneratorLag']): StreamingFigures {
  const s = rounds.filter((r) => r.mode === 'streamed');
  const ns = rounds.filter((r) => r.mode === 'not streamed');
  const all = <T>(f: (r: RoundFigures) => T[] | undefined) => s.flatMap((r) => f(r) ?? []);
  const sum = (rs: RoundFigures[], f: (r: RoundFigures) => number) => rs.reduce((n, r) => n + f(r), 0);
  const meanCpu = (rs: RoundFigures[]): Cpu => ({
    api: Math.round(sum(rs, (r) => r.cpu.api) / rs.length),
    worker: Math.round(sum(rs, (r) => r.cpu.worker) / rs.length),
    postgres: rs[0]!.cpu.postgres === null ? null : Math.round(sum(rs, (r) => r.cpu.postgres!) / rs.length),
    loadGenerator: Math.round(sum(rs, (r) => r.cpu.loadGenerator) / rs.length),
  });
  const streamSeconds = sum(s, (r) => r.streamSeconds!);
  const streamNotifies = sum(s, (r) => r.streamNotifies!);
  const cpu = { streamed: meanCpu(s), notStreamed: meanCpu(ns) };
  const meanSplit = (rs: RoundFigures[]) => Object.fromEntries(Object.keys(rs[0]!.postgresSplit!).map((k) => [k, Math.round(sum(rs, (r) => r.postgresSplit![k]!) / rs.length)]));
  const markers = all((r) => r.latencies).length;
  const deltas = sum(s, (r) => r.deltaCount!);
  return {
    generations: GENERATIONS,
    chunks: CHUNKS,
    chunkMs: CHUNK_MS,
    accounts: ACCOUNTS,
    workerConcurrency: GENERATIONS + 16,
    loadAtStart,
    latency: dist(all((r) => r.latencies)),
    toNotify: dist(all((r) => r.toNotify)),
    notifyToClient: dist(all((r) => r.notifyToClient)),
    flushInterval: dist(all((r) => r.flushIntervalMs)),
    chunksPerDelta: +(markers / Math.max(1, deltas)).toFixed(2),
    peakProcessing: Math.min(...s.map((r) => r.peakProcessing)),
    peakStreaming: Math.min(...s.map((r) => r.peakStreaming)),
    completed: sum(rounds, (r) => r.completed),
    textMismatches: sum(s, (r) => r.textMismatches!),
    resets: sum(s, (r) => r.resets!),
    streamSeconds: +streamSeconds.toFixed(1),
    writes,
    writesPerSecond: +((writes.inserts + writes.updates) / streamSeconds).toFixed(2),
    notifiesPerSecond: +(streamNotifies / streamSeconds).toFixed(2),
    notStreamedNotifies: sum(ns, (r) => r.streamNotifies!),
    cpu,
    firstToNotify: dist(all((r) => r.firstToNotify)),
    newest: dist(all((r) => r.newest)),
    floor,
    probe: { generations: PROBE_GENERATIONS, chunks: PROBE_CHUNKS, chunkMs: PROBE_CHUNK_MS },
    flushesPerGeneration: +(streamNotifies / (s.length * GENERATIONS)).toFixed(1),
    deltasPerGeneration: +(deltas / (s.length * GENERATIONS)).toFixed(1),
    workerPerFlush: Math.round((cpu.streamed.worker - cpu.notStreamed.worker) / (streamNotifies / (s.length * GENERATIONS))),
    apiPerDelta: Math.round((cpu.streamed.api - cpu.notStreamed.api) / (deltas / (s.length * GENERATIONS))),
    postgresSplit: s[0]!.postgresSplit ? { streamed: meanSplit(s), notStreamed: meanSplit(ns) } : null,
    listeners: s[0]!.listeners ?? null,
    cpuCost: +((cpu.streamed.api + cpu.streamed.worker) / (cpu.notStreamed.api + cpu.notStreamed.worker) - 1).toFixed(3),
    rounds: rounds.map((r) => ({ mode: r.mode, seconds: r.seconds, completed: r.completed, peakProcessing: r.peakProcessing, peakStreaming: r.peakStreaming, cpu: r.cpu })),
    loadGeneratorLag: lag,
  };
}
