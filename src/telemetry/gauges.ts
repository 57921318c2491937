// The gauges that describe the whole service rather than this process — jobs waiting and the age
// of the oldest per task, the webhook backlog, live workers — read from SQL (kiln.sample_telemetry)
// at most every SAMPLE_MS per process, whatever the scrape rate: every process reports the same.
// Apart from those, kiln_store_up: whether this process reaches the object store.

import client from 'prom-client';
import type { Config } from '../config.ts';
import type { Sql } from '../db/pool.ts';
import { bucketOf, checkStore } from '../storage/store.ts';
import { sampleTelemetry, type TelemetrySample } from '../db/sql/sample_telemetry.ts';
import type { Logger } from '../log.ts';
import { errorFields } from '../log.ts';
import { registry } from './metrics.ts';

const SAMPLE_MS = 5000;

let source: { sql: Sql; log: Logger; tasks: ReadonlySet<string> } | null = null;
let last: { at: number; sample: TelemetrySample | null } | null = null;
let pending: Promise<TelemetrySample | null> | null = null;
let warned = false;

/**
 * Reads the gauges from this pool (the process's main one). `tasks`: the graphile-worker task
 * identifiers Kiln runs (tasks/index.ts TASK_IDENTIFIERS), each labelled (0 when none waits);
 * anything else is labelled `other`.
 */
export function sampleGaugesFrom(sql: Sql, log: Logger, tasks: readonly string[]): void {
  source = { sql, log, tasks: new Set(tasks) };
}

async function sample(): Promise<TelemetrySample | null> {
  if (!source) return null;
  if (last && Date.now() - last.at < SAMPLE_MS) return last.sample;
  pending ??= (async () => {
    let s: TelemetrySample | null = null;
    try {
      [{ s }] = await sampleTelemetry(source!.sql);
      warned = false;
    } catch (e) {
      // A database that is down leaves these gauges out of the scrape; the process metrics stay.
      if (!warned) source!.log.warn('metrics: could not read the service gauges', errorFields(e));
      warned = true;
    }
    last = { at: Date.now(), sample: s };
    return s;
  })().finally(() => {
    pending = null;
  });
  return pending;
}

function perTask(s: TelemetrySample, pick: (j: TelemetrySample['jobs'][number]) => number): Map<string, number> {
  const tasks = source?.tasks ?? new Set<string>();
  const out = new Map<string, number>([...tasks].map((t) => [t, 0]));
  for (const j of s.jobs) {
    const task = tasks.has(j.task) ? j.task : 'other';
    out.set(task, task === 'other' ? Math.max(out.get(task) ?? 0, pick(j)) : pick(j));
  }
  return out;
}

new client.Gauge({
  name: 'kiln_jobs_waiting',
  help: 'Jobs due and not yet taken by a worker, by task (whole service, sampled at most every 5 s).',
  labelNames: ['task'],
  registers: [registry],
  async collect() {
    const s = await sample();
    this.reset();
    if (!s) return;
    for (const [task, n] of perTask(s, (j) => j.waiting)) this.set({ task }, n);
  },
});

new client.Gauge({
  name: 'kiln_jobs_oldest_waiting_seconds',
  help: 'Age of the oldest job due and not yet taken, by task; 0 when none waits (whole service, sampled at most every 5 s).',
  labelNames: ['task'],
  registers: [registry],
  async collect() {
    const s = await sample();
    this.reset();
    if (!s) return;
    for (const [task, n] of perTask(s, (j) => j.oldest_seconds)) this.set({ task }, n);
  },
});

new client.Gauge({
  name: 'kiln_webhook_backlog',
  help: 'Webhook deliveries pending (not yet delivered nor failed for good), whole service, sampled at most every 5 s.',
  registers: [registry],
  async collect() {
    const s = await sample();
    this.reset();
    if (s) this.set(s.webhook_backlog);
  },
});

new client.Gauge({
  name: 'kiln_workers_alive',
  help: 'Worker processes holding a lease (whole service, sampled at most every 5 s).',
  registers: [registry],
  async collect() {
    const s = await sample();
    this.reset();
    if (s) this.set(s.workers_alive);
  },
});

// ---------------------------------------------------------------- the object store

let storeConfig: Config | null = null;

/** Reports the object store of this configuration in kiln_store_up, and logs when it goes down and comes back. */
export function watchStore(config: Config, log: Logger): void {
  storeConfig = config;
  void bucketOf(config).then((bucket) => bucket?.health.onChange((s) => {
    if (s.up) log.info('the image store answers again');
    else log.warn('the image store does not answer: generations hold their images and retry (docs/storage.md, "When the store is down")', { error: s.error });
  })).catch((e) => log.warn('could not watch the image store', errorFields(e)));
}

new client.Gauge({
  name: 'kiln_store_up',
  help: 'Whether the object store answers: 0 while its bucket does not (connections refused or timed out, 5xx), else 1 (also with no bucket: the bytes are in the database). This process\'s view, asked at most every 2 s.',
  registers: [registry],
  async collect() {
    this.reset();
    if (!storeConfig) return;
    const s = await checkStore(storeConfig).catch(() => null);
    this.set(s === null || s.up ? 1 : 0);
  },
});
