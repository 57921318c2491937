// Benchmark environment: a throwaway embedded Postgres (or DATABASE_URL's server), a migrated
// database, and helpers to run autocannon against loopback servers.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { connect, migrate, startEmbedded, type Sql } from '../../src/db.ts';

export interface BenchDb {
  url: string;
  sql: Sql;
  close(): Promise<void>;
}

export async function benchDatabase(): Promise<BenchDb> {
  let stop = async () => {};
  let dataDir: string | null = null;
  let url: string;
  if (process.env.DATABASE_URL) {
    const u = new URL(process.env.DATABASE_URL);
    const name = `kiln_bench_${process.pid}`;
    const admin = postgres(process.env.DATABASE_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    await admin.end();
    u.pathname = `/${name}`;
    url = u.toString();
  } else {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-bench-'));
    const pg = await startEmbedded(dataDir, { fast: true });
    url = pg.url;
    stop = pg.stop;
  }
  await migrate(url, { includeCurrent: true });
  const sql = connect(url, { max: 4 });
  return {
    url,
    sql,
    async close() {
      await sql.end({ timeout: 5 });
      await stop();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/** Drives `url` with autocannon; `headers` rotate round robin across requests when given as a list. */
export async function load(opts: {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Array<Record<string, string>>;
  body?: string;
  connections?: number;
  seconds?: number;
}): Promise<LoadResult> {
  const headerList = opts.headers ?? [{}];
  let i = 0;
  const result = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    connections: opts.connections ?? 32,
    duration: opts.seconds ?? Number(process.env.KILN_BENCH_SECONDS ?? 5),
    body: opts.body,
    requests: [
      {
        setupRequest: (req: any) => {
          const h = headerList[i++ % headerList.length];
          return { ...req, headers: { ...req.headers, ...h, ...(opts.body ? { 'content-type': 'application/json' } : {}) } };
        },
      },
    ],
  } as any);
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

export function fmt(r: LoadResult) {
  return `${String(r.rps).padStart(7)} req/s  p50 ${String(r.p50).padStart(4)} ms  p99 ${String(r.p99).padStart(4)} ms${r.non2xx ? `  (${r.non2xx} non-2xx!)` : ''}`;
}
