// Benchmark: what telemetry costs. Three bench servers on the bench database — telemetry off,
// metrics only (KILN_METRICS_PORT), metrics and traces (every request sampled, exported over
// OTLP/HTTP protobuf to a loopback collector in this process) — driven in interleaved rounds with
// POST /generations and GET /usage; each configuration's req/s is paired with the off server's in
// the same round, and the median ratio is reported. Called by test/bench/run.ts
// (`KILN_BENCH_ONLY=telemetry npm run bench` runs this section alone).

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { failBacklog, fmt, load, startBenchServer, type LoadResult } from './_env.ts';
import type { BenchContext } from './run.ts';

export interface TelemetryFigures {
  rounds: number;
  /** Median round per configuration and route. */
  loads: Record<string, Record<string, LoadResult>>;
  /** req/s of every round. */
  rps: Record<string, Record<string, number[]>>;
  /** Median over rounds of (configuration ÷ off) req/s, minus 1. */
  cost: Record<string, Record<string, number>>;
  /** Median over rounds of the server's CPU µs per request. */
  cpu: Record<string, Record<string, number>>;
  collector: { exports: number; bytes: number };
  /**
   * The official SDK's own work for one traced request, measured in this process: a server span
   * and one database span started, given the server span's attributes, ended, and serialized to
   * OTLP protobuf in batches of 512 (what the BatchSpanProcessor and the exporter do, less the
   * HTTP post) — CPU µs per request.
   */
  sdkFloorMicros: number;
}

/** See TelemetryFigures.sdkFloorMicros. */
async function sdkFloor(): Promise<number> {
  const [{ BasicTracerProvider }, { ProtobufTraceSerializer }, { ROOT_CONTEXT, SpanKind, trace }] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'), import('@opentelemetry/otlp-transformer'), import('@opentelemetry/api'),
  ]);
  const batch: unknown[] = [];
  let bytes = 0;
  const processor = {
    onStart() {},
    onEnd(s: unknown) {
      batch.push(s);
      if (batch.length >= 512) {
        bytes += ProtobufTraceSerializer.serializeRequest(batch as never)?.length ?? 0;
        batch.length = 0;
      }
    },
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const tracer = new BasicTracerProvider({ spanProcessors: [processor] }).getTracer('kiln');
  const request = () => {
    const s = tracer.startSpan('GET', { kind: SpanKind.SERVER }, ROOT_CONTEXT);
    s.setAttributes({ 'http.request.method': 'GET', 'url.path': '/api/v1/usage', 'url.scheme': 'http' });
    tracer.startSpan('SELECT kiln.authorize_requests', {
      kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql', 'db.operation.name': 'SELECT', 'db.stored_procedure.name': 'kiln.authorize_requests' },
    }, trace.setSpan(ROOT_CONTEXT, s)).end();
    s.setAttribute('http.route', '/api/v1/usage');
    s.updateName('GET /api/v1/usage');
    s.setAttribute('http.response.status_code', 200);
    s.end();
  };
  for (let i = 0; i < 20_000; i++) request();
  const n = 100_000;
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) request();
  const t = process.cpuUsage(t0);
  if (!bytes) throw new Error('the SDK floor serialized nothing');
  return +((t.user + t.system) / n).toFixed(1);
}

const CONFIGS = ['off', 'metrics', 'metrics+traces', 'metrics+traces 10%'] as const;
type Config = (typeof CONFIGS)[number];

/** A collector that takes OTLP/HTTP exports and drops them (what a real one costs Kiln is the export). */
async function startSink() {
  const stats = { exports: 0, bytes: 0 };
  const server = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => { stats.bytes += c.length; });
    req.on('end', () => {
      stats.exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stats, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

/**
 * failBacklog, after the server's last batched creates have settled; a deadlock with one that had
 * not (both update the same budget rows) is retried.
 */
async function drain(ctx: BenchContext): Promise<void> {
  await new Promise((r) => setTimeout(r, 300));
  for (let i = 0; ; i++) {
    try {
      await failBacklog(ctx.sql);
      return;
    } catch (e) {
      if ((e as { code?: string }).code !== '40P01' || i >= 5) throw e;
    }
  }
}

export async function benchTelemetry(ctx: BenchContext): Promise<TelemetryFigures> {
  const seconds = Number(process.env.KILN_BENCH_SECONDS ?? 3);
  const rounds = Number(process.env.KILN_BENCH_TELEMETRY_ROUNDS ?? 5);
  const sink = await startSink();
  const env: Record<Config, Record<string, string>> = {
    off: {},
    metrics: { KILN_METRICS_PORT: '0' },
    'metrics+traces': { KILN_METRICS_PORT: '0', OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_SERVICE_NAME: 'kiln-bench' },
    // Head sampling as an operator would set it for a busy service: one trace in ten recorded.
    'metrics+traces 10%': {
      KILN_METRICS_PORT: '0', OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_SERVICE_NAME: 'kiln-bench',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1',
    },
  };
  const servers = {} as Record<Config, Awaited<ReturnType<typeof startBenchServer>>>;
  for (const c of CONFIGS) servers[c] = await startBenchServer(ctx.dbUrl, env[c]);
  const auth = ctx.keys.map((k) => ({ authorization: `Bearer ${k}` }));
  const body = JSON.stringify({ type: 'code', prompt: 'A pricing card with three tiers', targetLanguage: 'tsx' });
  // CPU per request of the server process under load (/proc): steadier than req/s on a shared machine.
  const meter = (c: Config) => ({ serverPid: servers[c].child.pid!, postmasterPid: null });
  const routes = {
    post: (c: Config) => load({ url: `http://127.0.0.1:${servers[c].port}/api/v1/generations`, method: 'POST', body, headers: auth, seconds, meter: meter(c) }),
    usage: (c: Config) => load({ url: `http://127.0.0.1:${servers[c].port}/api/v1/usage`, headers: auth, seconds, meter: meter(c) }),
  };
  const runs: Record<string, Record<string, LoadResult[]>> = {};
  try {
    // Warm each server up (JIT, pool, caches).
    for (const c of CONFIGS) {
      await load({ url: `http://127.0.0.1:${servers[c].port}/api/v1/usage`, headers: auth, seconds: 1 });
      await load({ url: `http://127.0.0.1:${servers[c].port}/api/v1/generations`, method: 'POST', body, headers: auth, seconds: 1 });
    }
    await drain(ctx);
    for (let i = 0; i < rounds; i++) {
      for (const [route, run] of Object.entries(routes)) {
        // The order of the configurations rotates each round: none always runs first.
        const order = CONFIGS.map((_, k) => CONFIGS[(k + i) % CONFIGS.length]!);
        for (const c of order) {
          ((runs[c] ??= {})[route] ??= []).push(await run(c));
        }
        // No worker runs here: the accepted generations are failed between rounds, so every
        // round's POSTs meet the same queue.
        if (route === 'post') await drain(ctx);
      }
    }
  } finally {
    for (const c of CONFIGS) {
      servers[c].child.kill('SIGTERM');
      await new Promise((r) => servers[c].child.once('exit', r));
    }
    await sink.close();
  }
  const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const loads: TelemetryFigures['loads'] = {};
  const rps: TelemetryFigures['rps'] = {};
  const cost: TelemetryFigures['cost'] = {};
  const cpu: TelemetryFigures['cpu'] = {};
  console.log('\n## Telemetry (each configuration paired with telemetry off in the same round)');
  for (const c of CONFIGS) {
    loads[c] = {};
    rps[c] = {};
    cost[c] = {};
    cpu[c] = {};
    for (const route of Object.keys(routes)) {
      const xs = runs[c]![route]!;
      loads[c][route] = [...xs].sort((a, b) => a.rps - b.rps)[Math.floor(xs.length / 2)]!;
      rps[c][route] = xs.map((x) => x.rps);
      cost[c][route] = +(mid(xs.map((x, i) => x.rps / runs.off![route]![i]!.rps)) - 1).toFixed(3);
      cpu[c][route] = mid(xs.map((x) => x.cpu?.node ?? NaN));
      console.log(`${c.padEnd(15)} ${route.padEnd(6)} ${fmt(loads[c][route])}  vs off ${(cost[c][route] * 100).toFixed(1)} %  server CPU ${cpu[c][route]} µs/req  rounds ${rps[c][route].join(', ')}`);
    }
  }
  console.log(`collector: ${sink.stats.exports} exports, ${Math.round(sink.stats.bytes / 1024)} KiB`);
  const sdkFloorMicros = await sdkFloor();
  console.log(`SDK floor: ${sdkFloorMicros} µs per traced request (a server span and a database span, recorded and serialized)`);
  return { rounds, loads, rps, cost, cpu, collector: { ...sink.stats }, sdkFloorMicros };
}
