// The loopback HTTP server under every protocol peer (_openai-peer.ts, _anthropic-peer.ts, …): it
// records each request (and whether the client went away before the answer), lets a test script
// replies ahead of the protocol (queued or by function, including hangs, resets and delays), serves
// files, and closes promptly with its sockets.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import sharp from 'sharp';

export interface PeerRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body, or null when there was none or it was not JSON. */
  json: any;
  receivedAt: number;
  /** When the client went away before the reply was sent (Date.now()). */
  abortedAt: number | null;
}

export type PeerReply =
  | { status?: number; headers?: Record<string, string>; json?: unknown; body?: string | Buffer; delayMs?: number }
  | { hang: true }
  | { reset: true };

/**
 * Replies ahead of the protocol: an array is consumed in order (then the protocol answers); a
 * function is consulted for every request, undefined letting the protocol answer; null clears.
 */
export type Script<R extends PeerRequest = PeerRequest> = PeerReply[] | ScriptFn<R> | null;
type ScriptFn<R> = (req: R, index: number) => PeerReply | undefined | Promise<PeerReply | undefined>;

export interface LoopbackPeer<R extends PeerRequest = PeerRequest> {
  origin: string;
  requests: R[];
  script(s: Script<R>): void;
  /** Serves `data` at GET {origin}/files/{name} (not recorded); returns its URL. */
  file(name: string, data: Buffer, type?: string): string;
  close(): Promise<void>;
}

export interface PeerOptions<R extends PeerRequest> {
  /** Adds the protocol's own fields to a request's record (multipart form, path parameters, what it broke). */
  describe?: (req: IncomingMessage, base: PeerRequest, raw: Buffer) => R | Promise<R>;
  /** The protocol's refusal of a request, answered before any scripted reply; null lets it through. */
  refuse?: (req: R) => PeerReply | null;
  /** The content-type of replies that set none. Default application/json. */
  contentType?: string;
}

export async function png(width: number, height: number, color = '#3366cc'): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: color } }).png().toBuffer();
}

/** Waits up to `timeoutMs` for the client to go away from `req` before its answer; whether it did. */
export async function clientGone(req: PeerRequest, timeoutMs = 500): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (req.abortedAt === null && Date.now() < end) await delay(10);
  return req.abortedAt !== null;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function parseJson(raw: Buffer): any {
  try {
    return raw.length ? JSON.parse(raw.toString('utf8')) : null;
  } catch {
    return null;
  }
}

/**
 * An HTTP server on 127.0.0.1: each request is recorded, then answered by the protocol's refusal,
 * else the script, else `route` (given the request's index, counted from the first recorded).
 */
export async function startLoopbackPeer<R extends PeerRequest = PeerRequest>(
  route: (req: R, origin: string, index: number) => PeerReply | Promise<PeerReply>,
  opts: PeerOptions<R> = {},
): Promise<LoopbackPeer<R>> {
  const requests: R[] = [];
  const files = new Map<string, { data: Buffer; type: string }>();
  const sockets = new Set<Socket>();
  let queue: PeerReply[] = [];
  let fn: ScriptFn<R> | null = null;
  const closing = new AbortController(); // cancels scripted delays so close() is prompt
  const contentType = opts.contentType ?? 'application/json';
  let origin = '';

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://peer').pathname;
    const raw = await readBody(req);
    if (req.method === 'GET' && path.startsWith('/files/')) {
      const f = files.get(path.slice('/files/'.length));
      if (!f) return void res.writeHead(404).end();
      return void res.writeHead(200, { 'content-type': f.type, 'content-length': f.data.length }).end(f.data);
    }
    const base: PeerRequest = { method: req.method ?? '', path, headers: req.headers, json: parseJson(raw), receivedAt: Date.now(), abortedAt: null };
    const record = opts.describe ? await opts.describe(req, base, raw) : (base as R);
    res.on('close', () => {
      if (!res.writableFinished && !closing.signal.aborted) record.abortedAt = Date.now();
    });
    requests.push(record);
    const index = requests.length - 1;
    const r = opts.refuse?.(record) ??
      (queue.length ? queue.shift() : fn ? await fn(record, index) : undefined) ??
      (await route(record, origin, index));
    if ('hang' in r) return; // never answer; close() tears the socket down
    if ('reset' in r) return void req.socket.destroy();
    if (r.delayMs) await delay(r.delayMs, undefined, { signal: closing.signal });
    if (res.destroyed) return;
    res.writeHead(r.status ?? 200, { 'content-type': contentType, ...r.headers });
    res.end(r.body ?? JSON.stringify(r.json ?? {}));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    requests,
    script(s) {
      queue = Array.isArray(s) ? [...s] : [];
      fn = typeof s === 'function' ? s : null;
    },
    file(name, data, type = 'image/png') {
      files.set(name, { data, type });
      return `${origin}/files/${name}`;
    },
    close() {
      closing.abort();
      for (const s of sockets) s.destroy();
      return new Promise((ok) => server.close(() => ok()));
    },
  };
}
