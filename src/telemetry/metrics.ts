// Prometheus metrics (prom-client): the metric families of docs/observability.md, on a registry of
// this process. Label values come only from bounded sets — route templates, catalog ids (capped),
// enumerations — never from what a client chose. Everything here is a no-op until
// enableMetrics() runs (KILN_METRICS_PORT set), so a process without metrics pays one branch.

import client from 'prom-client';
import type { EndedGeneration } from '../db/sql/ended_generations.ts';

export const registry = new client.Registry();

let on = false;

/** Whether this process serves /metrics (and so counts). */
export function metricsOn(): boolean {
  return on;
}

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const JOB_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

const httpRequests = new client.Counter({ name: 'kiln_http_requests_total', help: 'HTTP requests answered, by method, route template and status.', labelNames: ['method', 'route', 'status'], registers: [registry] });
const httpDuration = new client.Histogram({ name: 'kiln_http_request_duration_seconds', help: 'Time to answer an HTTP request (to the response head), by method and route template.', labelNames: ['method', 'route'], buckets: HTTP_BUCKETS, registers: [registry] });
const mcpCalls = new client.Counter({ name: 'kiln_mcp_tool_calls_total', help: 'MCP tools/call requests, by tool and outcome (ok, error, exception).', labelNames: ['tool', 'outcome'], registers: [registry] });
const generations = new client.Counter({ name: 'kiln_generations_total', help: 'Generations that reached a terminal status (completed, failed, canceled), counted by the process that settled them.', labelNames: ['type', 'model', 'status'], registers: [registry] });
const queueSeconds = new client.Histogram({ name: 'kiln_generation_queue_seconds', help: 'Time from enqueueing a generation job to the start of its execution.', labelNames: ['type'], buckets: JOB_BUCKETS, registers: [registry] });
const runSeconds = new client.Histogram({ name: 'kiln_generation_run_seconds', help: 'Time from the start of a generation execution to its settlement (completed or failed).', labelNames: ['type', 'model'], buckets: JOB_BUCKETS, registers: [registry] });
const spend = new client.Counter({ name: 'kiln_spend_micros_total', help: 'Settled spend of completed generations, in microdollars, by catalog model.', labelNames: ['model'], registers: [registry] });
const rejections = new client.Counter({ name: 'kiln_rejections_total', help: 'Requests refused, by reason.', labelNames: ['reason'], registers: [registry] });
const providerRequests = new client.Counter({ name: 'kiln_provider_requests_total', help: 'Calls to a model provider (one per catalog entry tried, its own retries included), by provider and outcome.', labelNames: ['provider', 'outcome'], registers: [registry] });
const providerDuration = new client.Histogram({ name: 'kiln_provider_request_duration_seconds', help: 'Duration of a call to a model provider, by provider.', labelNames: ['provider'], buckets: JOB_BUCKETS, registers: [registry] });
const streamFlushes = new client.Counter({ name: 'kiln_stream_flushes_total', help: 'Coalesced writes of running generations\' streamed output (text, previews, progress), each one UPDATE and its NOTIFYs.', registers: [registry] });
const webhookDeliveries = new client.Counter({ name: 'kiln_webhook_deliveries_total', help: 'Webhook delivery attempts, by outcome (delivered, failed_attempt, disabled).', labelNames: ['outcome'], registers: [registry] });

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** What kiln_rejections_total counts (ApiError codes). */
export const REJECTION_REASONS = new Set(['rate_limited', 'insufficient_quota', 'payment_required', 'unauthorized', 'insufficient_scope', 'invalid_request']);

/**
 * Catalog ids only reach these labels (a generation's model is a catalog entry, checked when it
 * was created), but the catalog is data: past this many distinct ids a process labels the rest
 * `other`, so no catalog churn can grow the series without bound.
 */
const MAX_MODELS = 200;
const models = new Set<string>();
export function modelLabel(id: string | null | undefined): string {
  if (!id) return 'unknown';
  if (models.has(id)) return id;
  if (models.size >= MAX_MODELS || !/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/.test(id)) return 'other';
  models.add(id);
  return id;
}

/** Provider families (src/providers/index.ts), an enumeration; anything else is `other`. */
const PROVIDERS = new Set(['local', 'openai', 'fal', 'replicate', 'anthropic', 'gemini']);
export function providerLabel(p: string): string {
  return PROVIDERS.has(p) ? p : 'other';
}

export function observeHttp(method: string, route: string, status: number, seconds: number): void {
  if (!on) return;
  const m = METHODS.has(method) ? method : 'other';
  httpRequests.inc({ method: m, route, status: String(status) });
  httpDuration.observe({ method: m, route }, seconds);
}

export function countRejection(code: string): void {
  if (on && REJECTION_REASONS.has(code)) rejections.inc({ reason: code });
}

export function countToolCall(tool: string, outcome: 'ok' | 'error' | 'exception'): void {
  if (on) mcpCalls.inc({ tool, outcome });
}

export function countGeneration(type: string, model: string | null | undefined, status: 'completed' | 'failed' | 'canceled'): void {
  if (on) generations.inc({ type: type === 'image' ? 'image' : 'code', model: modelLabel(model), status });
}

/** Counts the generations a statement ended (its `ended` column): each once, in this process. */
export function countEnded(ended: readonly EndedGeneration[] | null | undefined): void {
  if (!on || !ended) return;
  for (const g of ended) countGeneration(g.type, g.model_id, g.status === 'canceled' ? 'canceled' : 'failed');
}

export function observeQueue(type: string, seconds: number): void {
  if (on) queueSeconds.observe({ type: type === 'image' ? 'image' : 'code' }, Math.max(0, seconds));
}

export function observeRun(type: string, model: string, seconds: number): void {
  if (on) runSeconds.observe({ type: type === 'image' ? 'image' : 'code', model: modelLabel(model) }, seconds);
}

export function countSpend(model: string, micros: number): void {
  if (on && micros > 0) spend.inc({ model: modelLabel(model) }, micros);
}

export function observeProvider(provider: string, outcome: string, seconds: number): void {
  if (!on) return;
  const p = providerLabel(provider);
  providerRequests.inc({ provider: p, outcome });
  providerDuration.observe({ provider: p }, seconds);
}

export function countStreamFlush(): void {
  streamFlushes.inc();
}

export function countWebhook(outcome: 'delivered' | 'failed_attempt' | 'disabled'): void {
  if (on) webhookDeliveries.inc({ outcome });
}

// ---------------------------------------------------------------- database pools

export interface PoolStats {
  /** Configured size. */
  max: number;
  /** Connections running a query (or a transaction). */
  busy: number;
  /** Connections open and idle (when the driver tells). */
  idle?: number;
  /** Queries waiting for a connection. */
  waiting: number;
}

const pools = new Map<string, () => PoolStats>();

/** Adds a pool to kiln_db_pool_connections under `name` (main, worker, and whatever pools come later). */
export function registerPool(name: string, stats: () => PoolStats): void {
  pools.set(name, stats);
}

export function unregisterPool(name: string): void {
  pools.delete(name);
}

new client.Gauge({
  name: 'kiln_db_pool_connections',
  help: 'Database pool connections of this process, by pool and state (max = configured size, busy, idle, waiting = queries queued for a connection).',
  labelNames: ['pool', 'state'],
  registers: [registry],
  collect() {
    this.reset();
    for (const [pool, stats] of pools) {
      const s = stats();
      this.set({ pool, state: 'max' }, s.max);
      this.set({ pool, state: 'busy' }, s.busy);
      if (s.idle !== undefined) this.set({ pool, state: 'idle' }, s.idle);
      this.set({ pool, state: 'waiting' }, s.waiting);
    }
  },
});

/**
 * prom-client's default process and Node metrics, less the gauges it names `*_total`
 * (nodejs_active_handles_total, …), which the exposition format keeps for counters
 * (`promtool check metrics` rejects them); their `nodejs_active_*` siblings by type stay.
 */
function defaultMetrics(): void {
  client.collectDefaultMetrics({ register: registry });
  for (const m of registry.getMetricsAsArray()) {
    const name = (m as unknown as { name: string }).name;
    if (name.endsWith('_total') && (m as unknown as { type?: string }).type !== 'counter' && !name.startsWith('kiln_')) registry.removeSingleMetric(name);
  }
}

/** Turns counting on (once per process) and adds the default process metrics. */
export function enableMetrics(): void {
  if (on) return;
  on = true;
  defaultMetrics();
}
