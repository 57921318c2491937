// Helpers for generation tests: a real graphile-worker runner on the test database, polling,
// and ledger reads.

import type { Config } from '../src/config.ts';
import { createContext, type Context } from '../src/context.ts';
import { startWorker, type WorkerHandle } from '../src/worker/worker.ts';
import type { Sql } from '../src/db/pool.ts';
import { api, onCleanup, testConfig, type TestServer } from './_setup.ts';

/** A worker on the server's database (its own context; config overrides apply to it only). */
export async function startTestWorker(srv: TestServer, config: Partial<Config> = {}): Promise<WorkerHandle & { ctx: Context }> {
  const shutdown = new AbortController();
  const ctx = createContext(testConfig({ ...srv.ctx.config, ...config }), srv.db.app, shutdown.signal);
  const w = await startWorker(ctx, srv.db.url);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    shutdown.abort();
    await w.stop();
  };
  onCleanup(stop);
  return { ...w, ctx, stop };
}

/**
 * Polls GET /generations/{id} until `done(body)` (default: a terminal status). A 503 is polled
 * again after its retry-after, as docs/api.md tells clients: on a loaded machine the limiter's
 * timeout expires now and then, and that says nothing about the generation.
 */
export async function waitFor(srv: TestServer, key: string, id: string, opts: { timeoutMs?: number; done?: (b: any) => boolean } = {}) {
  const done = opts.done ?? ((b: any) => b.status === 'completed' || b.status === 'failed');
  const until = Date.now() + (opts.timeoutMs ?? 15_000);
  for (;;) {
    const res = await api(srv.base, key, `/generations/${id}`);
    if (res.status === 503 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
      continue;
    }
    if (res.status !== 200) throw new Error(`GET /generations/${id} → ${res.status} ${JSON.stringify(res.body)}`);
    if (done(res.body)) return res.body;
    if (Date.now() > until) throw new Error(`timed out waiting for generation ${id}: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Every ledger row of a generation. */
export async function charges(sql: Sql, generationId: string) {
  return sql`select status, reserved_micros::bigint::text as reserved, settled_micros::bigint::text as settled, key_id, origin, model_id, workspace_id
             from kiln_private.charges where generation_id = ${generationId} order by created_at`;
}

export async function generationRow(sql: Sql, id: string) {
  const [row] = await sql`select * from kiln_private.generations where id = ${id}`;
  return row;
}

/** Polls `fn` every `intervalMs` until it returns a truthy value (returned), or fails after `timeoutMs`. */
export async function until<T>(
  what: string,
  fn: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  timeoutMs = 20_000,
  intervalMs = 20,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
