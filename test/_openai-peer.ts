// A real OpenAI-protocol HTTP server on loopback for adapter tests: scriptable replies (success,
// delays, 429, 5xx, malformed bodies, hangs, resets) and a record of every request it received.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import sharp from 'sharp';

export interface PeerRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body, or null when the body was not JSON. */
  json: any;
  /** Multipart fields (files summarised) for /images/edits. */
  form: Record<string, Array<string | { filename: string; type: string; size: number }>> | null;
  /** When the request arrived, and when the client went away before the reply was sent (Date.now()). */
  receivedAt: number;
  abortedAt: number | null;
}

export type PeerReply =
  | { status?: number; headers?: Record<string, string>; json?: unknown; body?: string | Buffer; delayMs?: number }
  | { hang: true }
  | { reset: true };

export type Script = PeerReply[] | ((req: PeerRequest, index: number) => PeerReply | undefined | Promise<PeerReply | undefined>);

export interface OpenAIPeer {
  /** Base URL to put in a catalog entry's `upstream.baseUrl` (ends in /v1). */
  url: string;
  origin: string;
  requests: PeerRequest[];
  /** Replies for the next requests: an array is consumed in order, then defaults apply. */
  script(s: Script): void;
  /** Serves `data` at GET {origin}/files/{name}; returns its URL. */
  file(name: string, data: Buffer, type?: string): string;
  close(): Promise<void>;
}

export function chatReply(content: string, usage = { prompt_tokens: 12, completion_tokens: 34 }): PeerReply {
  return {
    headers: { 'x-request-id': 'req_peer_chat' },
    json: {
      id: 'chatcmpl-peer',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    },
  };
}

export async function png(width: number, height: number, color = '#3366cc'): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: color } }).png().toBuffer();
}

export async function imageReply(width = 1536, height = 1024): Promise<PeerReply> {
  const data = await png(width, height);
  return { headers: { 'x-request-id': 'req_peer_image' }, json: { created: 1, data: [{ b64_json: data.toString('base64') }] } };
}

export function errorReply(status: number, type: string, code: string | null, message = 'upstream says no', headers: Record<string, string> = {}): PeerReply {
  return { status, headers, json: { error: { message, type, code, param: null } } };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function parse(req: IncomingMessage, raw: Buffer): Promise<Pick<PeerRequest, 'json' | 'form'>> {
  const type = req.headers['content-type'] ?? '';
  if (type.startsWith('multipart/form-data')) {
    const fd = await new Request('http://peer/', { method: 'POST', headers: { 'content-type': type }, body: new Uint8Array(raw) }).formData();
    const form: NonNullable<PeerRequest['form']> = {};
    for (const [k, v] of fd.entries()) {
      const entry = typeof v === 'string' ? v : { filename: (v as File).name, type: v.type, size: v.size };
      (form[k] ??= []).push(entry);
    }
    return { json: null, form };
  }
  try {
    return { json: JSON.parse(raw.toString('utf8')), form: null };
  } catch {
    return { json: null, form: null };
  }
}

export async function startOpenAIPeer(): Promise<OpenAIPeer> {
  const requests: PeerRequest[] = [];
  const files = new Map<string, { data: Buffer; type: string }>();
  const sockets = new Set<Socket>();
  let queue: PeerReply[] = [];
  let fn: Exclude<Script, PeerReply[]> | null = null;
  const closing = new AbortController(); // cancels scripted delays so close() is prompt
  const defaultImage = await imageReply();

  async function reply(req: PeerRequest, index: number): Promise<PeerReply> {
    const scripted = queue.length ? queue.shift() : fn ? await fn(req, index) : undefined;
    if (scripted) return scripted;
    if (req.path.endsWith('/chat/completions')) return chatReply('peer reply');
    if (req.path.endsWith('/images/generations') || req.path.endsWith('/images/edits')) return defaultImage;
    return errorReply(404, 'invalid_request_error', 'unknown_url');
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://peer').pathname;
    const raw = await readBody(req);
    if (req.method === 'GET' && path.startsWith('/files/')) {
      const f = files.get(path.slice('/files/'.length));
      if (!f) return void res.writeHead(404).end();
      return void res.writeHead(200, { 'content-type': f.type, 'content-length': f.data.length }).end(f.data);
    }
    const record: PeerRequest = { method: req.method ?? '', path, headers: req.headers, ...(await parse(req, raw)), receivedAt: Date.now(), abortedAt: null };
    res.on('close', () => {
      if (!res.writableFinished && !closing.signal.aborted) record.abortedAt = Date.now();
    });
    requests.push(record);
    const r = await reply(record, requests.length - 1);
    if ('hang' in r) return; // never answer; close() tears the socket down
    if ('reset' in r) return void req.socket.destroy();
    if (r.delayMs) await delay(r.delayMs, undefined, { signal: closing.signal });
    if (res.destroyed) return;
    const body = r.body ?? JSON.stringify(r.json ?? {});
    res.writeHead(r.status ?? 200, { 'content-type': 'application/json', ...r.headers });
    res.end(body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: `${origin}/v1`,
    origin,
    requests,
    script(s) {
      if (Array.isArray(s)) {
        queue = [...s];
        fn = null;
      } else {
        queue = [];
        fn = s;
      }
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
