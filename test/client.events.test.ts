// The client's event-stream reader on hand-built bytes: the SSE parser fed chunk by chunk (line
// ends CR, LF and CRLF, split anywhere), and a watch whose opening waits out a 429 longer than
// the idle timeout.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createKilnClient } from 'kiln/client';
import { parseEventStream, type SseMessage } from '../src/client/events.ts';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const bytes = chunks.map((c) => new TextEncoder().encode(c));
  return new ReadableStream({
    pull(controller) {
      const next = bytes.shift();
      if (next) controller.enqueue(next);
      else controller.close();
    },
  });
}

async function parse(chunks: string[]): Promise<SseMessage[]> {
  const out: SseMessage[] = [];
  for await (const m of parseEventStream(streamOf(chunks))) out.push(m);
  return out;
}

test('parseEventStream: CR, LF and CRLF line ends, lines and CRLFs split across chunks, multi-line data, comments, id without data', async () => {
  const text = ': keep-alive\r\n\r\nid: 1\revent: status\rdata: {"a":\rdata: 1}\r\r' +
    'id: 2\n\n' + // an id alone dispatches nothing, but carries over
    'data:no space\r\n: a comment between fields\r\ndata:  two spaces\r\n\r\n' +
    'event: progress\ndata\nretry: 100\n\n' +
    'id: 3\0bad\nid: 4\ndata: é\n\n';
  const expected: SseMessage[] = [
    { id: '1', event: 'status', data: '{"a":\n1}' },
    { id: '2', event: 'message', data: 'no space\n two spaces' },
    { id: '2', event: 'progress', data: '' },
    { id: '4', event: 'message', data: 'é' },
  ];
  assert.deepEqual(await parse([text]), expected);
  // Every split point, the CRLFs and the two bytes of é included.
  const bytes = new TextEncoder().encode(text);
  for (let i = 1; i < bytes.length; i++) {
    const chunks = [bytes.slice(0, i), bytes.slice(i)];
    const out: SseMessage[] = [];
    const body = new ReadableStream<Uint8Array>({ pull(c) { const n = chunks.shift(); if (n) c.enqueue(n); else c.close(); } });
    for await (const m of parseEventStream(body)) out.push(m);
    assert.deepEqual(out, expected, `split at byte ${i}`);
  }
  // One character per chunk.
  assert.deepEqual(await parse([...text]), expected);
});

test('parseEventStream: a last event ended by a bare CR at the end of the stream is delivered; an unterminated one is not', async () => {
  assert.deepEqual(await parse(['data: last\r', '\r']), [{ id: null, event: 'message', data: 'last' }]);
  assert.deepEqual(await parse(['data: last\r\r']), [{ id: null, event: 'message', data: 'last' }]);
  assert.deepEqual(await parse(['data: first\n\ndata: cut\r']), [{ id: null, event: 'message', data: 'first' }]);
  assert.deepEqual(await parse(['data: first\n\ndata: cut']), [{ id: null, event: 'message', data: 'first' }]);
});

test('watch(): opening waits out a 429 rate_limited longer than idleTimeoutMs, then follows the stream', async () => {
  // Rate limited for the first 900 ms: only a client that waits out the retry-after gets past it.
  const sent: string[] = [];
  const started = Date.now();
  const c = createKilnClient({
    baseUrl: 'http://kiln.test',
    apiKey: 'kiln_live_test',
    retry: { maxAttempts: 3, baseDelayMs: 10 },
    fetch: async (r) => {
      sent.push(r.method);
      if (Date.now() - started < 900) {
        return new Response(JSON.stringify({ error: { type: 'rate_limited', message: 'Slow down.' } }), {
          status: 429, headers: { 'content-type': 'application/json', 'retry-after': '1' },
        });
      }
      const done = { id: 'g1', status: 'completed', result: null, error: null };
      return new Response(streamOf([`id: 1\nevent: status\ndata: ${JSON.stringify(done)}\n\n`]), { headers: { 'content-type': 'text/event-stream' } });
    },
  });
  const events = [];
  for await (const e of c.generations.watch('g1', { idleTimeoutMs: 200, signal: AbortSignal.timeout(10_000) })) events.push(e);
  assert.deepEqual(events.map((e) => [e.id, e.data.status, e.terminal]), [['1', 'completed', true]]);
  assert.equal(sent.length, 2, 'the 429, then the stream: the wait was not cut short and retried');
});
