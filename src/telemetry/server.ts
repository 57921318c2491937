// The /metrics listener: its own HTTP server on KILN_METRICS_HOST:KILN_METRICS_PORT, apart from
// the API's port, answering GET /metrics in Prometheus text format (Bearer KILN_METRICS_TOKEN
// when set) and 404 to anything else.

import http from 'node:http';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { registry } from './metrics.ts';

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export async function startMetricsServer(opts: { host: string; port: number; token?: string }): Promise<MetricsServer> {
  const expected = opts.token ? digest(`Bearer ${opts.token}`) : null;
  const server = http.createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    if (expected && !timingSafeEqual(digest(req.headers.authorization ?? ''), expected)) {
      res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'text/plain' }).end('unauthorized\n');
      return;
    }
    try {
      const body = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : body);
    } catch {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n');
    }
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
