// JSON Lines both ways: a batch's input serialised for `POST /batches`, and a JSON Lines answer
// (`GET /batches/{id}/results`) parsed line by line as its bytes arrive, never held whole.

import { KilnError } from './errors.ts';

/** A batch's body: line objects as JSON Lines (one per line, so `/lines/N` is the Nth), else the file as given. */
export function jsonlBody(input: readonly unknown[] | string | Blob | Uint8Array | ArrayBuffer): string | Blob | Uint8Array | ArrayBuffer {
  if (typeof input === 'string' || input instanceof Uint8Array || input instanceof ArrayBuffer || input instanceof Blob) return input;
  if (!Array.isArray(input)) throw new TypeError('batches.create: give an array of lines, a JSON Lines string, a Blob or bytes');
  let out = '';
  for (const line of input) out += `${JSON.stringify(line)}\n`;
  return out;
}

/**
 * Each line of a JSON Lines body, parsed, as soon as its newline arrives (blank lines skipped; a
 * last line without a newline counts). A connection that breaks mid-body is a `network_error`
 * (the lines before it were delivered); aborting `signal` throws its reason. Ending early
 * releases the connection.
 */
export async function* readJsonLines<T>(body: ReadableStream<Uint8Array>, opts: { what: string; signal?: AbortSignal }): AsyncGenerator<T, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let n = 0;
  const parse = (line: string): T => {
    n++;
    try {
      return JSON.parse(line) as T;
    } catch (cause) {
      throw new KilnError({ status: 200, type: 'server_error', message: `${opts.what}: line ${n} is not JSON`, cause });
    }
  };
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (cause) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        throw new KilnError({ status: 0, type: 'network_error', message: `${opts.what}: the connection broke after ${n} lines`, cause });
      }
      buf += chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
      let start = 0;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n', start)) {
        const line = buf.slice(start, nl);
        start = nl + 1;
        if (line.trim()) yield parse(line);
      }
      buf = buf.slice(start);
      if (chunk.done) {
        if (buf.trim()) yield parse(buf);
        return;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
