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
  /** The query string's parameters. */
  query: URLSearchParams;
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
  | { reset: true }
  | { stream: StreamReply };

/**
 * A reply written piece by piece over one response (a server-sent event stream): the headers at
 * once, then each chunk `chunkMs` apart (each its own write, Nagle off, so each reaches the client
 * as its own TCP segment), then the end.
 */
export interface StreamReply {
  status?: number;
  headers?: Record<string, string>;
  chunks: Array<string | Buffer>;
  /** Pause before each chunk but the first. Default 5 ms. */
  chunkMs?: number;
  /** The connection is destroyed after this many chunks (a cut mid-stream). */
  breakAfter?: number;
  /** Awaited before the last chunk is written (the test's go). */
  gate?: Promise<unknown>;
  /** After the last chunk the response stays open, silent, until the client goes away. */
  hold?: boolean;
  /** When each chunk was written (Date.now()), filled in as they go. */
  written?: number[];
}

/** An event-stream's bytes cut into pieces of `size` bytes, wherever that falls (inside a UTF-8 sequence, a line end, a JSON string). */
export function splitBytes(chunks: Array<string | Buffer>, size: number): Buffer[] {
  const all = Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c, 'utf8') : c)));
  const out: Buffer[] = [];
  for (let i = 0; i < all.length; i += size) out.push(all.subarray(i, i + size));
  return out;
}

/** One SSE event: optional `event:` line, the data (a JSON value is serialised; a string is sent as it is, split on LF into data lines), a blank line. */
export function sse(data: unknown, event?: string): string {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  return `${event ? `event: ${event}\n` : ''}${text.split('\n').map((l) => `data: ${l}`).join('\n')}\n\n`;
}

/** Options every protocol's stream helper takes (chatStream, messageStream, geminiStream, imageStream). */
export interface StreamOpts {
  chunkMs?: number;
  breakAfter?: number;
  gate?: Promise<unknown>;
  hold?: boolean;
  /** Re-cut the whole stream into pieces of this many bytes. */
  splitEvery?: number;
  /** Leave out the protocol's end marker ([DONE], message_stop, the finishReason chunk). */
  noEnd?: boolean;
  /** Insert the protocol's error event after this many events (and end the stream there). */
  errorAfter?: number;
  /** Status and headers of the response (default 200, text/event-stream). */
  headers?: Record<string, string>;
  written?: number[];
}

/** A stream reply of SSE events, with StreamOpts applied (`error` is the protocol's error event). */
export function streamOf(events: string[], opts: StreamOpts, end: string[], error: string): PeerReply {
  const all = opts.errorAfter !== undefined ? [...events.slice(0, opts.errorAfter), error] : [...events, ...(opts.noEnd ? [] : end)];
  const chunks = opts.splitEvery ? splitBytes(all, opts.splitEvery) : all;
  return {
    stream: {
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...opts.headers },
      chunks,
      ...(opts.chunkMs !== undefined ? { chunkMs: opts.chunkMs } : {}),
      ...(opts.breakAfter !== undefined ? { breakAfter: opts.breakAfter } : {}),
      ...(opts.gate ? { gate: opts.gate } : {}),
      ...(opts.hold ? { hold: true } : {}),
      ...(opts.written ? { written: opts.written } : {}),
    },
  };
}

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

async function writeStream(req: IncomingMessage, res: ServerResponse, s: StreamReply, closing: AbortSignal): Promise<void> {
  req.socket.setNoDelay(true);
  res.writeHead(s.status ?? 200, { 'content-type': 'text/event-stream', ...s.headers });
  res.flushHeaders();
  for (const [i, chunk] of s.chunks.entries()) {
    if (s.breakAfter !== undefined && i >= s.breakAfter) return void req.socket.destroy();
    if (i > 0) await delay(s.chunkMs ?? 5, undefined, { signal: closing });
    if (i === s.chunks.length - 1 && s.gate) await s.gate;
    if (res.destroyed) return;
    // Flushed before the next step, so a break after it never swallows it.
    await new Promise<void>((ok) => res.write(chunk, () => ok()));
    s.written?.push(Date.now());
  }
  if (s.breakAfter !== undefined && s.breakAfter <= s.chunks.length) return void req.socket.destroy();
  if (s.hold) return; // silent until the client goes away or close()
  res.end();
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
    const url = new URL(req.url ?? '/', 'http://peer');
    const path = url.pathname;
    const raw = await readBody(req);
    if (req.method === 'GET' && path.startsWith('/files/')) {
      const f = files.get(path.slice('/files/'.length));
      if (!f) return void res.writeHead(404).end();
      return void res.writeHead(200, { 'content-type': f.type, 'content-length': f.data.length }).end(f.data);
    }
    const base: PeerRequest = { method: req.method ?? '', path, query: url.searchParams, headers: req.headers, json: parseJson(raw), receivedAt: Date.now(), abortedAt: null };
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
    if ('stream' in r) return writeStream(req, res, r.stream, closing.signal);
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
