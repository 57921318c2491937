// Server-sent event streams read with fetch (Node 20 has no EventSource, and the browser's cannot
// send an Authorization header): parsed as bytes arrive, resumed with Last-Event-ID after a
// dropped connection (bounded, jittered, abortable), ended after the terminal event.

import { KilnError } from './errors.ts';
import { backoff, sleep, type RetryOptions } from './retry.ts';

/** One dispatched event of the stream, before its data is parsed. */
export interface SseMessage {
  /** The last event id the stream set (it carries over to events without an `id` field), or null. */
  id: string | null;
  /** The `event` field, `message` when absent. */
  event: string;
  data: string;
}

/**
 * Splits an event stream into messages as the HTML standard's parser does (lines end in CRLF,
 * LF or CR; `data` lines join with LF; comments and `retry` are skipped; an `id` holding NUL is
 * ignored). `onBytes` is called for every chunk, comments included, to tell a live connection
 * from a silent one.
 */
export async function* parseEventStream(body: ReadableStream<Uint8Array>, onBytes?: () => void): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let data: string[] = [];
  let event = '';
  let lastId: string | null = null;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        // An unterminated last event is dropped, as the standard says; but a CR held back below
        // as a possible first half of a CRLF did end its line.
        if (!buf.endsWith('\r')) return;
        buf += '\n';
      } else {
        onBytes?.();
        buf += decoder.decode(value, { stream: true });
      }
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buf);
        // A CR at the very end may be the first half of a CRLF split across chunks: wait for more.
        if (!m || (m[0] === '\r' && m.index === buf.length - 1)) break;
        const line = buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
        if (line === '') {
          if (data.length) yield { id: lastId, event: event || 'message', data: data.join('\n') };
          data = [];
          event = '';
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
        else if (field === 'id' && !value.includes('\0')) lastId = value;
      }
      if (done) return;
    }
  } finally {
    // Ending early (a terminal event, an abort, a broken connection) releases the connection.
    await reader.cancel().catch(() => {});
  }
}

export interface WatchOptions {
  signal?: AbortSignal;
  /** Resume after this event id (a `Last-Event-ID` kept from an earlier watch). */
  lastEventId?: string;
  /**
   * A connection silent this long (no event, not even the server's 15 s keep-alive comment)
   * counts as dropped and is replaced. Default 45 000 ms.
   */
  idleTimeoutMs?: number;
}

export interface Followed {
  id: string;
  terminal: boolean;
}

/**
 * Follows one stream to its terminal event across reconnects. `open` makes one request (through
 * the client's retrying fetch, so a 503, a refused connection or a 429 `rate_limited` while
 * opening is already retried there) and throws a KilnError for an error answer, which ends the
 * watch. A connection that breaks, goes silent or ends before the terminal event is opened
 * again with the last id seen, after a jittered backoff; `retry.maxAttempts` such drops in a row
 * with no event between them end the watch with a `network_error`.
 */
export async function* follow<E extends Followed>(spec: {
  open(lastEventId: string | null, signal: AbortSignal): Promise<ReadableStream<Uint8Array>>;
  /** The typed event for a message, or null for a kind this client does not know (skipped). */
  toEvent(message: SseMessage): E | null;
  retry: RetryOptions;
  options: WatchOptions;
}): AsyncGenerator<E, void, undefined> {
  const { signal, idleTimeoutMs = 45_000 } = spec.options;
  let last = spec.options.lastEventId ?? null;
  let drops = 0;
  for (;;) {
    signal?.throwIfAborted();
    const conn = new AbortController();
    const onAbort = () => conn.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    const alive = () => {
      clearTimeout(idle);
      idle = setTimeout(() => conn.abort(new Error(`no data for ${idleTimeoutMs} ms`)), idleTimeoutMs);
    };
    try {
      // The silence clock starts once the stream is open: opening may rightly wait longer (a 429
      // rate_limited's retry-after, up to maxRetryAfterSeconds, inside the retrying fetch).
      const body = await spec.open(last, conn.signal);
      alive();
      for await (const message of parseEventStream(body, alive)) {
        const e = parsed(spec.toEvent, message);
        if (message.id !== null) last = message.id;
        if (!e) continue;
        drops = 0;
        yield e;
        if (e.terminal) return;
      }
      // Ended before the terminal event: the server shut down, or something in between closed it.
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      // An error answer, or no answer at all after the open's own retries: nothing to resume.
      if (error instanceof KilnError) throw error;
      // Otherwise the connection broke or went silent mid-stream: reconnect below.
    } finally {
      clearTimeout(idle);
      signal?.removeEventListener('abort', onAbort);
      conn.abort();
    }
    if (++drops >= spec.retry.maxAttempts) {
      throw new KilnError({ status: 0, type: 'network_error', message: `the event stream closed ${drops} times in a row before its last event` });
    }
    await sleep(backoff(spec.retry, drops), signal);
  }
}

function parsed<E>(toEvent: (m: SseMessage) => E | null, message: SseMessage): E | null {
  try {
    return toEvent(message);
  } catch (cause) {
    // Reading the same stream again would repeat it: a malformed event ends the watch.
    throw new KilnError({ status: 200, type: 'server_error', message: `malformed ${message.event} event ${message.id ?? ''}`.trim(), cause });
  }
}
