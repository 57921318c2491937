// kiln.sample_telemetry: the service-wide gauges of /metrics (queue depth and age per task,
// webhook backlog, live workers), read from SQL at most every few seconds.

import type { Queryable } from '../pool.ts';

export interface TelemetrySample {
  jobs: Array<{ task: string; waiting: number; oldest_seconds: number }>;
  webhook_backlog: number;
  workers_alive: number;
}

export function sampleTelemetry(sql: Queryable) {
  return sql<Array<{ s: TelemetrySample }>>`select kiln.sample_telemetry() as s`;
}
