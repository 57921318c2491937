// Server-sent events read from an upstream's fetch Response body (docs/providers.md, "Streaming"):
// parsed as the HTML standard's event-stream parser does, byte-safe across chunks, bounded in size,
// and watched for silence. eventsource-parser is only a transitive package here, so this small
// reader is Kiln's own.

import { abortedError } from './sleep.ts';
import { ProviderError } from './types.ts';

/** One dispatched event. */
export interface SseEvent {
  /** The `event` field, `message` when absent. */
  event: string;
  /** The `data` lines joined with LF. */
  data: string;
  /** The last event id the stream set (carried over to later events), or null. */
  id: string | null;
}

export interface SseOptions {
  signal: AbortSignal;
  /** The longest silence (no bytes at all) allowed between two chunks. */
  idleMs: number;
  /** Cap on one event (its field lines, in characters). */
  maxEventChars: number;
  /** Cap on the whole body, in bytes. */
  maxTotalBytes: number;
  /** Called once per chunk of bytes received. */
  onBytes?: () => void;
}

export const tooLarge = () => new ProviderError('upstream stream is too large', { code: 'bad_response', retryable: false });

/**
 * The line-level parser: fed decoded text, returns the events it completes. Lines end in CRLF, LF
 * or CR (a CR at the very end waits for the next text, as it may be half of a CRLF); a line
 * starting with `:` is a comment; `data` lines join with LF; an event without data is not
 * dispatched; an `id` holding NUL is ignored; `retry` and unknown fields are ignored.
 */
export class SseParser {
  private buf = '';
  /** Where the search for the next line end resumes (the text before it holds none). */
  private scan = 0;
  private data: string[] = [];
  private size = 0;
  private event = '';
  private lastId: string | null = null;

  constructor(private readonly maxEventChars = Infinity) {}

  feed(text: string): SseEvent[] {
    const out: SseEvent[] = [];
    this.buf += text;
    for (;;) {
      let end = -1;
      for (let i = this.scan; i < this.buf.length; i++) {
        const c = this.buf.charCodeAt(i);
        if (c === 10 || c === 13) {
          end = i;
          break;
        }
      }
      if (end < 0) {
        this.scan = this.buf.length;
        if (this.size + this.buf.length > this.maxEventChars) throw tooLarge();
        return out;
      }
      let next = end + 1;
      if (this.buf.charCodeAt(end) === 13) {
        if (end === this.buf.length - 1) {
          // Perhaps the first half of a CRLF split across chunks: wait for more.
          this.scan = end;
          return out;
        }
        if (this.buf.charCodeAt(next) === 10) next++;
      }
      const line = this.buf.slice(0, end);
      this.buf = this.buf.slice(next);
      this.scan = 0;
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
  }

  /** The stream ended: a CR held back ended its line; an event not closed by a blank line is dropped. */
  end(): SseEvent[] {
    if (this.buf.endsWith('\r')) {
      const ev = this.line(this.buf.slice(0, -1));
      this.buf = '';
      return ev ? [ev] : [];
    }
    return [];
  }

  private line(line: string): SseEvent | null {
    if (line === '') {
      const ev = this.data.length ? { event: this.event || 'message', data: this.data.join('\n'), id: this.lastId } : null;
      this.data = [];
      this.size = 0;
      this.event = '';
      return ev;
    }
    this.size += line.length + 1;
    if (this.size > this.maxEventChars) throw tooLarge();
    if (line.charCodeAt(0) === 58 /* : */) return null;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.lastId = value;
    return null;
  }
}

const IDLE = Symbol('idle');
/** The `cause` of the error a silent stream ends with. */
export const SILENT = Symbol('silent');

const duration = (ms: number) => (ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`);

/**
 * The events of an event-stream body, as they arrive. Its errors are ProviderErrors: the
 * caller's signal → `aborted`; no bytes for `idleMs` → a retryable `network` error (the stream
 * went silent); the connection failing while reading → a retryable `network` error; more than
 * the caps → `bad_response`. The body is cancelled whenever reading stops early. A body that just
 * ends ends the iteration: whether the stream was complete is the protocol's to say.
 */
export async function* readSse(body: ReadableStream<Uint8Array>, opts: SseOptions): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  // UTF-8 split across chunks is held until its last byte; a leading BOM is dropped.
  const decoder = new TextDecoder('utf-8');
  const parser = new SseParser(opts.maxEventChars);
  let total = 0;
  try {
    for (;;) {
      const r = await readWithin(reader, opts);
      if (r.done) {
        yield* parser.feed(decoder.decode());
        yield* parser.end();
        return;
      }
      opts.onBytes?.();
      total += r.value.byteLength;
      if (total > opts.maxTotalBytes) throw tooLarge();
      for (const ev of parser.feed(decoder.decode(r.value, { stream: true }))) {
        yield ev;
        if (opts.signal.aborted) throw abortedError(opts.signal.reason);
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** One read, raced against the idle timer and the signal. */
async function readWithin(reader: ReadableStreamDefaultReader<Uint8Array>, opts: SseOptions): Promise<ReadableStreamReadResult<Uint8Array>> {
  if (opts.signal.aborted) throw abortedError(opts.signal.reason);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stop = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(IDLE), opts.idleMs);
    onAbort = () => reject(abortedError(opts.signal.reason));
    opts.signal.addEventListener('abort', onAbort, { once: true });
  });
  stop.catch(() => {}); // settled after the race only when nothing listens any more
  try {
    return await Promise.race([reader.read(), stop]);
  } catch (err) {
    if (err instanceof ProviderError) throw err;
    if (opts.signal.aborted) throw abortedError(opts.signal.reason);
    if (err === IDLE) {
      throw new ProviderError(`upstream stream was silent for ${duration(opts.idleMs)}`, { code: 'network', retryable: true, cause: SILENT });
    }
    throw new ProviderError('upstream connection was cut during the stream', { code: 'network', retryable: true, cause: err });
  } finally {
    clearTimeout(timer);
    opts.signal.removeEventListener('abort', onAbort!);
  }
}
