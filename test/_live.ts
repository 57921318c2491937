// Helpers for wait and event-stream tests: `kiln api` and `kiln worker` as separate processes on a
// test database, and a server-sent events reader over fetch (Node 20 has no EventSource).

import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { onCleanup } from './_setup.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');

export interface Spawned {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT/api/v1` for `kiln api`. */
  base: string;
  /** The /metrics URL when KILN_METRICS_PORT was set (the process prints it first). */
  metrics?: string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `kiln api` or `kiln worker` against `dbUrl`, resolved once it says it is up. */
export function spawnKiln(command: 'api' | 'worker' | 'serve', dbUrl: string, env: Record<string, string> = {}, opts: { stderr?: (line: string) => void } = {}): Promise<Spawned> {
  const child = spawn(process.execPath, [BIN, command], {
    env: { ...process.env, DATABASE_URL: dbUrl, PORT: '0', KILN_LOG: process.env.KILN_LOG ?? 'silent', ...env },
    stdio: ['ignore', 'pipe', opts.stderr ? 'pipe' : 'inherit'],
  });
  if (opts.stderr) readline.createInterface({ input: child.stderr! }).on('line', opts.stderr);
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    child.kill(signal);
    return exited;
  };
  onCleanup(() => stop('SIGKILL'));
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout! });
    let metrics: string | undefined;
    rl.on('line', (l) => {
      const m = /listening on (http:\S+)/.exec(l);
      const mm = /metrics on (http:\S+)/.exec(l);
      if (mm) metrics = mm[1]!;
      else if (m) resolve({ child, base: m[1]!, metrics, stop });
      else if (/worker started/i.test(l)) resolve({ child, base: '', metrics, stop });
    });
    child.once('exit', (code, sig) => reject(new Error(`kiln ${command} exited early (${code ?? sig})`)));
  });
}

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
  /** ms since the stream was opened. */
  at: number;
}

export interface SseStream {
  status: number;
  headers: Headers;
  /** Every event so far (comments are counted apart). */
  events: SseEvent[];
  comments: number;
  /** Resolves when the server ends the stream (or the reader is aborted). */
  ended: Promise<void>;
  /** Resolves with the first event (from the start) that matches. */
  until(pred: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Drops the connection (a forced disconnect). */
  abort(): void;
  /** The body when the answer was not a stream (an error envelope). */
  body?: any;
}

/** Opens an event stream with fetch and parses it as it arrives. */
export async function openSse(url: string, headers: Record<string, string>): Promise<SseStream> {
  const ac = new AbortController();
  const started = performance.now();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: ac.signal });
  const events: SseEvent[] = [];
  const waiters: Array<() => void> = [];
  const notify = () => waiters.splice(0).forEach((w) => w());
  let ended = false;
  const out: SseStream = {
    status: res.status,
    headers: res.headers,
    events,
    comments: 0,
    ended: Promise.resolve(),
    abort: () => ac.abort(),
    async until(pred, timeoutMs = 30_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const hit = events.find(pred);
        if (hit) return hit;
        const got = JSON.stringify(events.map((e) => [e.id, e.event]));
        // No event can come after the end: say so at once (and do not spin on the settled promise).
        if (ended) throw new Error(`the stream ended with no matching event; got ${got}`);
        if (Date.now() > end) throw new Error(`no matching event within ${timeoutMs} ms (the stream is still open); got ${got}`);
        await Promise.race([new Promise<void>((r) => waiters.push(r)), out.ended, new Promise((r) => setTimeout(r, 100))]);
      }
    },
  };
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    ended = true;
    const text = await res.text();
    try { out.body = JSON.parse(text); } catch { out.body = text; }
    return out;
  }
  out.ended = (async () => {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const ev: SseEvent = { data: '', at: performance.now() - started };
          let hasData = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) { out.comments++; continue; }
            const i = line.indexOf(':');
            const field = i < 0 ? line : line.slice(0, i);
            const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
            if (field === 'id') ev.id = value;
            else if (field === 'event') ev.event = value;
            else if (field === 'data') { ev.data += (hasData ? '\n' : '') + value; hasData = true; }
          }
          if (hasData) events.push(ev);
          notify();
        }
      }
    } catch (e) {
      if ((e as Error).name !== 'AbortError') throw e;
    } finally {
      ended = true;
      notify();
    }
  })();
  return out;
}
