// A benchmark server process: the real Kiln app plus a bare h3 route running `select 1` (the
// one-round-trip limit), on loopback. Prints {"port"} when ready. Telemetry starts as in
// `kiln serve` (KILN_METRICS_PORT, OTEL_*: the telemetry section sets them; unset, nothing runs).

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from 'h3/node';
import { loadConfig } from '../../src/config.ts';
import { createContext } from '../../src/context.ts';
import { connect } from '../../src/db/pool.ts';
import { extensions } from '../../src/cli/mounts.ts';
import { createApp } from '../../src/http/server.ts';
import { authStats } from '../../src/auth/access.ts';
import { generationStats } from '../../src/generations/service.ts';
import { hubOf } from '../../src/live/hub.ts';
import { startTelemetry } from '../../src/telemetry/index.ts';
import { observePool } from '../../src/telemetry/pool.ts';
import { sampleGaugesFrom } from '../../src/telemetry/gauges.ts';
import { TASK_IDENTIFIERS } from '../../tasks/index.ts';

const url = process.env.KILN_BENCH_DB!;
const config = { ...loadConfig(), logLevel: 'silent', readRpm: 1_000_000_000, transformRpm: 1_000_000_000 };
const telemetry = await startTelemetry(config);
const sql = observePool('main', connect(url, { max: 10 }));
const server = http.createServer({ keepAliveTimeout: 65_000 });
server.listen(0, '127.0.0.1', () => {
  const port = (server.address() as AddressInfo).port;
  const ctx = createContext({ ...config, publicUrl: `http://127.0.0.1:${port}`, port }, sql);
  sampleGaugesFrom(sql, ctx.log, TASK_IDENTIFIERS);
  const app = createApp(ctx, {
    extend: [
      (a) => {
        a.get('/bench/auth-stats', async () => { const s = authStats(ctx); return { requests: s.items, batches: s.batches }; });
        a.get('/bench/generation-stats', async () => ({ ...generationStats }));
        // ?gc=1: collect garbage first (the server runs with --expose-gc), so RSS compares like for like.
        a.get('/bench/live-stats', async (event) => {
          if (event.url.searchParams.get('gc') === '1') (globalThis as { gc?: () => void }).gc?.();
          const m = process.memoryUsage();
          return { watchers: hubOf(ctx).size, rss: m.rss, heap: m.heapUsed + m.external };
        });
        a.get('/bench/select1', async () => {
          const [row] = await sql`select 1 as one`;
          return row;
        });
      },
      ...extensions,
    ],
  });
  server.on('request', toNodeHandler(app) as any);
  process.stdout.write(JSON.stringify({ port, metricsPort: telemetry.metricsPort }) + '\n');
});
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => sql.end().then(() => telemetry.stop()).then(() => process.exit(0)));
});
