// Benchmark: webhook deliveries by a `kiln worker` process to a fast receiver on loopback.
// (1) Latency, settlement → receiver: 1,000 endpoints spread over the bench accounts; generations
//     of the local model at a steady rate; each delivery timed from the moment the settling
//     transaction's NOTIFY reaches this process to the moment the receiver has the request.
// (2) Throughput: one transaction writes events for 50 endpoints of one account; deliveries per
//     second from its commit until the receiver has them all.
// Called by test/bench/run.ts (`KILN_BENCH_ONLY=webhooks npm run bench` runs this section alone).

import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import postgres from 'postgres';
import { loadConfig } from '../../src/config.ts';
import { createContext } from '../../src/context.ts';
import { encryptSecret, generateSecret } from '../../src/webhooks/secrets.ts';
import { failBacklog } from './_env.ts';
import type { BenchContext } from './run.ts';

export interface WebhookFigures {
  endpoints: number;
  generations: number;
  deliveries: number;
  ratePerSecond: number;
  /** Settlement (NOTIFY heard here) → delivery received, ms. */
  latency: { p50: number; p99: number; max: number };
  throughput: { deliveries: number; endpoints: number; seconds: number; perSecond: number };
}

const ENDPOINTS = Number(process.env.KILN_BENCH_WEBHOOK_ENDPOINTS ?? 1000);
const GENERATIONS = Number(process.env.KILN_BENCH_WEBHOOK_GENERATIONS ?? 64);
const RATE = 8;
const BURST_ENDPOINTS = 50;
const BURST_EVENTS = 40;

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return +sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!.toFixed(2);
}

export async function benchWebhooks(ctx: BenchContext): Promise<WebhookFigures> {
  const received: Array<{ at: number; json: any }> = [];
  let waiter: (() => void) | null = null;
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ at: performance.now(), json: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      res.writeHead(204).end();
      waiter?.();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const until = async (pred: () => boolean, ms: number, what: string) => {
    const end = Date.now() + ms;
    while (!pred()) {
      if (Date.now() > end) throw new Error(`webhooks bench: timed out waiting for ${what}`);
      await new Promise<void>((r) => { waiter = r; setTimeout(r, 50); });
    }
  };

  // Endpoints straight through SQL (the URL is loopback), secrets encrypted as the API does.
  const sctx = createContext({ ...loadConfig(), logLevel: 'silent' }, ctx.sql);
  await ctx.sql`delete from graphile_worker._private_jobs`;
  await failBacklog(ctx.sql);
  await ctx.sql`delete from kiln_private.webhook_endpoints`;
  const enc = await encryptSecret(sctx, generateSecret().raw);
  for (let i = 0; i < ENDPOINTS; i++) {
    await ctx.sql`select kiln.create_webhook_endpoint(${ctx.accountIds[i % ctx.accountIds.length]!}::uuid, null, ${url}, ${['generation.completed']}::text[], null, ${enc})`;
  }
  // A separate account for the throughput burst (its endpoints are not in the latency phase).
  const [burst] = await ctx.sql`select * from kiln.create_account('bench-webhooks@example.test', 'enterprise', null, true)`;
  for (let i = 0; i < BURST_ENDPOINTS; i++) {
    await ctx.sql`select kiln.create_webhook_endpoint(${burst!.id}::uuid, null, ${url}, ${['webhook.test']}::text[], null, ${enc})`;
  }

  const heard = new Map<string, number>();
  const listener = postgres(ctx.dbUrl, { max: 1, onnotice: () => {} });
  await listener.listen('kiln_status', (payload) => {
    const n = JSON.parse(payload);
    if (n.k === 'generation' && n.s === 'completed' && !heard.has(n.id)) heard.set(n.id, performance.now());
  });
  const worker = spawn(process.execPath, [path.resolve(import.meta.dirname, '..', '..', 'bin', 'kiln.js'), 'worker'], {
    env: { ...process.env, DATABASE_URL: ctx.dbUrl, KILN_LOG: 'silent', KILN_WEBHOOK_ALLOW_PRIVATE: '1', KILN_WORKER_CONCURRENCY: '16' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      readline.createInterface({ input: worker.stdout! }).on('line', (l) => /worker started/i.test(l) && resolve());
      worker.once('exit', (c) => reject(new Error(`worker exited ${c}`)));
    });
    const perAccount = new Map<string, number>();
    for (let i = 0; i < ENDPOINTS; i++) perAccount.set(ctx.accountIds[i % ctx.accountIds.length]!, (perAccount.get(ctx.accountIds[i % ctx.accountIds.length]!) ?? 0) + 1);

    // (1) Latency: generations at RATE/s, round-robin over the accounts.
    const body = JSON.stringify({ type: 'code', prompt: 'webhook bench', targetLanguage: 'tsx' });
    let expected = 0;
    for (let i = 0; i < GENERATIONS; i++) {
      const k = i % ctx.keys.length;
      const r = await fetch(`${ctx.base}/generations`, { method: 'POST', headers: { authorization: `Bearer ${ctx.keys[k]}`, 'content-type': 'application/json' }, body });
      if (r.status !== 202) throw new Error(`POST /generations → ${r.status}`);
      await r.arrayBuffer();
      expected += perAccount.get(ctx.accountIds[k]!) ?? 0;
      await new Promise((res) => setTimeout(res, 1000 / RATE));
    }
    await until(() => received.length >= expected, 120_000, `${expected} deliveries`);
    const lags = received.map((d) => d.at - heard.get(d.json.data.id)!).filter(Number.isFinite).sort((a, b) => a - b);

    // (2) Throughput: BURST_EVENTS test events × BURST_ENDPOINTS endpoints in one transaction.
    received.length = 0;
    const n = BURST_EVENTS * BURST_ENDPOINTS;
    const t0 = performance.now();
    await ctx.sql`select count(kiln_private.emit_event(${burst!.id}::uuid, 'webhook.test', null, json_build_object('i', i))) from generate_series(1, ${BURST_EVENTS}) i`;
    await until(() => received.length >= n, 300_000, `${n} burst deliveries`);
    const seconds = (performance.now() - t0) / 1000;

    const figures: WebhookFigures = {
      endpoints: ENDPOINTS,
      generations: GENERATIONS,
      deliveries: lags.length,
      ratePerSecond: RATE,
      latency: { p50: percentile(lags, 0.5), p99: percentile(lags, 0.99), max: percentile(lags, 1) },
      throughput: { deliveries: n, endpoints: BURST_ENDPOINTS, seconds: +seconds.toFixed(2), perSecond: Math.round(n / seconds) },
    };
    console.log('\n## Webhooks');
    console.log(`${ENDPOINTS} endpoints; ${GENERATIONS} generations at ${RATE}/s → ${lags.length} deliveries: settlement → receiver p50 ${figures.latency.p50} ms, p99 ${figures.latency.p99} ms, max ${figures.latency.max} ms`);
    console.log(`burst: ${n} deliveries to ${BURST_ENDPOINTS} endpoints in ${figures.throughput.seconds} s = ${figures.throughput.perSecond} deliveries/s`);
    return figures;
  } finally {
    worker.kill('SIGTERM');
    await new Promise((r) => worker.once('exit', r));
    await listener.end();
    receiver.closeAllConnections();
    receiver.close();
  }
}
