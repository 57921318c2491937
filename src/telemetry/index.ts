// Telemetry of a `kiln serve | api | worker` process: the /metrics listener when KILN_METRICS_PORT
// is set, and traces when an OTLP endpoint is (OTEL_* variables). Started before the database
// pool is opened, so that the pool is observed (./pool.ts).

import type { Config } from '../config.ts';
import { enableMetrics } from './metrics.ts';
import { startMetricsServer, type MetricsServer } from './server.ts';
import { startTracing, stopTracing } from './tracing.ts';

export interface Telemetry {
  /** The /metrics port (null: no listener). */
  metricsPort: number | null;
  stop(): Promise<void>;
}

export async function startTelemetry(config: Config): Promise<Telemetry> {
  let server: MetricsServer | null = null;
  await startTracing();
  if (config.metrics.port !== undefined) {
    enableMetrics();
    server = await startMetricsServer({ host: config.metrics.host, port: config.metrics.port, token: config.metrics.token });
  }
  return {
    metricsPort: server?.port ?? null,
    async stop() {
      await server?.close();
      await stopTracing();
    },
  };
}
