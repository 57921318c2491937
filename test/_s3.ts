// An S3-compatible server on loopback for store tests: s3rver (it enforces presigned expiry and
// checks SigV4 against its own credentials), optionally behind a gate that holds PUT answers
// so a test can kill a writer after its bytes landed but before it learns so, and that can take
// the store down (every request answered 503, or its connection closed) and bring it back.

import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import type { Config } from '../src/config.ts';
import { until } from './_generations.ts';
import { onCleanup, type TestServer } from './_setup.ts';

// s3rver's built-in account; the AWS SDK's default chain finds these in the environment (child
// processes inherit them).
process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
process.env.AWS_REGION ??= 'us-east-1';
// The SDK's one-time notice about Node 20 (docs/storage.md) would print once per spawned process.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

export interface TestS3 {
  /** s3rver itself. */
  endpoint: string;
  bucket: string;
  /** KILN_* settings for this server (`gate: true` → through the gate). */
  env(opts?: { gate?: boolean; redirect?: boolean; prefix?: string }): Record<string, string>;
  store(opts?: { gate?: boolean; redirect?: boolean; prefix?: string }): Config['store'];
  /** Every key in the bucket. */
  keys(): Promise<string[]>;
  /** The next `method` request (PUT) through the gate after `skip` others waits for release() once s3rver has answered; `held` resolves with its key. */
  hold(skip?: number, method?: string): { held: Promise<string>; release(): void };
  /** From now on the gate answers every request 503 (S3's ServiceUnavailable) or closes its connection unanswered. */
  down(mode?: '503' | 'close'): void;
  /** The gate lets requests through again. */
  up(): void;
  /** Requests the gate refused while down. */
  refused: number;
}

export async function startS3(bucket = 'kiln-test'): Promise<TestS3> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-s3-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: bucket }] });
  const addr = (await server.run()) as AddressInfo;
  const endpoint = `http://127.0.0.1:${addr.port}`;

  let holding: { method: string; skip: number; held: (key: string) => void; released: Promise<void> } | null = null;
  let downMode: '503' | 'close' | null = null;
  let refused = 0;
  const gate = http.createServer((req, res) => {
    if (downMode) {
      refused++;
      if (downMode === 'close') {
        req.socket.destroy();
        return;
      }
      req.resume();
      res.writeHead(503, { 'content-type': 'application/xml' });
      res.end('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ServiceUnavailable</Code><Message>Please reduce your request rate.</Message></Error>');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const up = http.request(`${endpoint}${req.url}`, { method: req.method, headers: req.headers }, (upRes) => {
        const body: Buffer[] = [];
        upRes.on('data', (c) => body.push(c));
        upRes.on('end', async () => {
          let h = req.method === holding?.method ? holding : null;
          if (h && h.skip > 0) {
            h.skip--;
            h = null;
          }
          if (h) {
            holding = null;
            h.held(decodeURIComponent(new URL(req.url!, endpoint).pathname.split('/').slice(2).join('/')));
            await h.released;
          }
          if (res.destroyed) return;
          res.writeHead(upRes.statusCode!, upRes.headers);
          res.end(Buffer.concat(body));
        });
      });
      up.on('error', () => res.destroy());
      up.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((r) => gate.listen(0, '127.0.0.1', () => r()));
  const gateEndpoint = `http://127.0.0.1:${(gate.address() as AddressInfo).port}`;

  onCleanup(async () => {
    gate.closeAllConnections();
    await new Promise((r) => gate.close(r));
    await server.close().catch(() => {});
    fs.rmSync(directory, { recursive: true, force: true });
  });

  const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true });
  const settings = (opts: { gate?: boolean; redirect?: boolean; prefix?: string } = {}) => ({
    bucket, endpoint: opts.gate ? gateEndpoint : endpoint, region: 'us-east-1', forcePathStyle: true,
    prefix: opts.prefix ?? '', redirect: opts.redirect ?? true,
  });
  return {
    endpoint,
    bucket,
    env(opts = {}) {
      const s = settings(opts);
      return {
        KILN_STORE: 's3', KILN_S3_BUCKET: s.bucket, KILN_S3_ENDPOINT: s.endpoint, KILN_S3_REGION: s.region,
        KILN_S3_FORCE_PATH_STYLE: '1', KILN_S3_PREFIX: s.prefix, KILN_S3_REDIRECT: s.redirect ? '1' : '0',
      };
    },
    store(opts = {}) {
      return {
        backend: 's3', s3: { ...settings(opts), publicEndpoint: undefined },
        retentionSeconds: undefined, sweepSeconds: 60, orphanGraceSeconds: 3600, outageGraceSeconds: 600,
      };
    },
    async keys() {
      const out: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
        for (const o of page.Contents ?? []) out.push(o.Key!);
        token = page.NextContinuationToken;
      } while (token);
      return out.sort();
    },
    hold(skip = 0, method = 'PUT') {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let held!: (key: string) => void;
      const heldP = new Promise<string>((r) => (held = r));
      holding = { method, skip, held, released };
      return { held: heldP, release };
    },
    down(mode = '503') {
      downMode = mode;
      // Kept-alive connections would carry on past a 'close' gate: cut them too.
      if (mode === 'close') gate.closeAllConnections();
    },
    up() {
      downMode = null;
    },
    get refused() {
      return refused;
    },
  };
}

/**
 * Stops a worker and waits until its connections are closed: graphile-worker ends its pool
 * without waiting for it, and a client still closing when the file's cleanup drops the database
 * reports the drop as an uncaught error (seen with the store sweep's cron workers).
 */
export async function stopWorker(srv: TestServer, worker: { stop(): Promise<void> }): Promise<void> {
  await worker.stop();
  await until('the worker\'s connections to close', async () => {
    const [{ n }] = await srv.db.sql`select count(*)::int as n from pg_stat_activity
                                     where datname = current_database() and application_name <> 'kiln' and pid <> pg_backend_pid()`;
    return n === 0;
  }, 30_000, 50);
}
