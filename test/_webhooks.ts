// Helpers for webhook tests: a receiver on loopback that records every delivery and answers as
// scripted (status, Retry-After, hang), and verification with the `standardwebhooks` package the
// way a receiver would.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { onCleanup } from './_setup.ts';

export interface Delivery {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  at: number;
}

/** `until`: answer once it settles (after `delayMs`), for a delivery held in flight as long as a test needs. */
export type Reply = { status?: number; headers?: Record<string, string>; hang?: boolean; delayMs?: number; until?: Promise<unknown> };

export interface Receiver {
  url: string;
  port: number;
  got: Delivery[];
  /** Decides each reply (default 200). */
  reply: (d: Delivery, index: number) => Reply;
  /** Resolves with the first `n` deliveries (optionally only those matching). */
  wait(n: number, pred?: (d: Delivery) => boolean, timeoutMs?: number): Promise<Delivery[]>;
  close(): Promise<void>;
}

export async function startReceiver(path = '/hook'): Promise<Receiver> {
  const hung: http.ServerResponse[] = [];
  const waiters: Array<() => void> = [];
  const r: Receiver = {
    url: '', port: 0, got: [],
    reply: () => ({ status: 200 }),
    async wait(n, pred = () => true, timeoutMs = 30_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const hits = r.got.filter(pred);
        if (hits.length >= n) return hits.slice(0, n);
        if (Date.now() > end) throw new Error(`receiver: ${hits.length} of ${n} deliveries within ${timeoutMs} ms: ${JSON.stringify(r.got.map((d) => d.json?.type))}`);
        await new Promise<void>((res) => { waiters.push(res); setTimeout(res, 100); });
      }
    },
    close: async () => {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((res) => server.close(() => res()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: any = null;
      try { json = JSON.parse(body); } catch { /* not JSON */ }
      const d: Delivery = { path: req.url ?? '', headers: req.headers, body, json, at: Date.now() };
      const index = r.got.length;
      r.got.push(d);
      waiters.splice(0).forEach((w) => w());
      const reply = r.reply(d, index);
      if (reply.hang) { hung.push(res); return; }
      setTimeout(() => {
        const answer = () => {
          if (res.destroyed) return;
          res.writeHead(reply.status ?? 200, { 'content-type': 'text/plain', ...reply.headers });
          res.end('receiver body that must never be stored');
        };
        void Promise.resolve(reply.until).then(answer, answer);
      }, reply.delayMs ?? 0);
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  r.port = (server.address() as AddressInfo).port;
  r.url = `http://127.0.0.1:${r.port}${path}`;
  onCleanup(() => r.close());
  return r;
}

/** Verifies a delivery with standardwebhooks (throws when no signature verifies); returns the payload. */
export function verify(secret: string, d: Delivery): any {
  return new Webhook(secret).verify(d.body, {
    'webhook-id': String(d.headers['webhook-id']),
    'webhook-timestamp': String(d.headers['webhook-timestamp']),
    'webhook-signature': String(d.headers['webhook-signature']),
  });
}
