// What the console shows while output is written (src/console/app/live.ts), without a browser:
// deltas put at their offsets (counted in code points), a reset dropping everything, the newest
// preview kept, fences hidden from the code view; and its stream readers against the real server,
// resuming with Last-Event-ID when a connection drops mid-stream, with no gap and no repeat.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { createKilnClient } from '../src/client/index.ts';
import { NOTHING_YET, shownCode, watchGeneration, writing, type GenerationStreamEvent, type Writing, type WritingEvent } from '../src/console/app/live.ts';
import { startTestWorker } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

const apply = (events: WritingEvent[], from: Writing = NOTHING_YET) => events.reduce(writing, from);

test('deltas go at their offsets, counted in code points; an overlap is not repeated', () => {
  const w = apply([
    { event: 'delta', data: { text: 'Hi 🎉', offset: 0 } },
    { event: 'delta', data: { text: ' there', offset: 4 } },
  ]);
  assert.equal(w.text, 'Hi 🎉 there');
  assert.equal(w.chars, 10, '🎉 is one character');
  // A delta that starts inside what is shown replaces the overlap.
  const again = writing(w, { event: 'delta', data: { text: '🎉 you', offset: 3 } });
  assert.equal(again.text, 'Hi 🎉 you');
  assert.equal(again.chars, 8);
});

test('a reset drops the text, preview and progress, and names the attempt; the next deltas start at 0', () => {
  const w = apply([
    { event: 'delta', data: { text: 'first try', offset: 0 } },
    { event: 'progress', data: { percent: 40, message: 'writing' } },
    { event: 'preview', data: { index: 0, url: '/files/a', mediaType: 'image/png' } },
    { event: 'reset', data: { attempt: 2 } },
  ]);
  // That text was written stays known: the emptied output is still code (an empty code view).
  assert.deepEqual(w, { ...NOTHING_YET, attempt: 2, code: true });
  assert.equal(writing(w, { event: 'delta', data: { text: 'second', offset: 0 } }).text, 'second');
});

test('an output is code once text is written, and only then; a reset of an image keeps it an image', () => {
  assert.equal(NOTHING_YET.code, false);
  assert.equal(apply([{ event: 'progress', data: { percent: 10, message: null } }]).code, false);
  assert.equal(apply([{ event: 'delta', data: { text: '', offset: 0 } }]).code, false, 'an empty delta says nothing');
  assert.equal(apply([{ event: 'delta', data: { text: 'a', offset: 0 } }]).code, true);
  const image = apply([
    { event: 'preview', data: { index: 0, url: '/files/a', mediaType: 'image/png' } },
    { event: 'reset', data: { attempt: 2 } },
  ]);
  assert.deepEqual(image, { ...NOTHING_YET, attempt: 2 });
});

test('the newest preview is kept; an older index does not replace it', () => {
  const w = apply([
    { event: 'preview', data: { index: 1, url: '/files/b', mediaType: 'image/png' } },
    { event: 'preview', data: { index: 0, url: '/files/a', mediaType: 'image/png' } },
  ]);
  assert.equal(w.preview?.index, 1);
});

test('the code view hides an opening fence line and, once written, the closing fence', () => {
  assert.equal(shownCode('```tsx\nconst a = 1;\n'), 'const a = 1;\n');
  assert.equal(shownCode('```tsx\nconst a = 1;\n```'), 'const a = 1;\n');
  assert.equal(shownCode('```ts'), '```ts', 'an opening fence still being written stays until its line ends');
  assert.equal(shownCode('const s = `x`;\n'), 'const s = `x`;\n');
});

let srv: TestServer;
let key: string;

before(async () => {
  srv = await startServer();
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/stream-coder', name: 'stream', category: 'text', provider: 'local', upstream: { delayMs: 2000 },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 1000, markup: 1,
  })})`;
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'enterprise' });
  key = (await createKey(srv.db.sql, a.id)).key;
});

test('watchGeneration: a connection cut after each of its first deltas is resumed with Last-Event-ID; the deltas make the streamed text exactly', async () => {
  // A fetch whose event-stream answers break right after their first delta, three times.
  const resumedFrom: Array<string | null> = [];
  let cuts = 3;
  const fetchCutting = async (r: Request) => {
    const res = await fetch(r);
    if (!r.url.endsWith('/events')) return res;
    resumedFrom.push(r.headers.get('last-event-id'));
    if (cuts <= 0 || !res.body) return res;
    cuts--;
    const reader = res.body.getReader();
    let seen = '';
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        const { value, done } = await reader.read();
        if (done) return c.close();
        c.enqueue(value);
        seen += new TextDecoder().decode(value);
        // A whole delta event received (its blank line seen): the connection breaks.
        if (/event: delta\n(?:[^\n]+\n)*?\n/.test(seen)) {
          await reader.cancel();
          c.error(new TypeError('connection reset'));
        }
      },
      cancel: () => reader.cancel(),
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  const client = createKilnClient({ baseUrl: srv.origin, apiKey: key, fetch: fetchCutting, retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 50 } });
  const created = await api(srv.base, key, '/generations', { body: { type: 'code', prompt: 'A badge', model: 'local/stream-coder', targetLanguage: 'css' } });
  assert.equal(created.status, 202);
  const events: GenerationStreamEvent[] = [];
  let w: Writing = NOTHING_YET;
  for await (const e of watchGeneration(client, created.body.id)) {
    events.push(e);
    if (e.event !== 'status') w = writing(w, e);
  }
  const deltas = events.filter((e) => e.event === 'delta');
  assert.ok(deltas.length >= 4, `${deltas.length} deltas`);
  let at = 0;
  for (const d of deltas) {
    assert.equal(d.data.offset, at, 'no gap, no repeat across the cuts');
    at += [...d.data.text].length;
  }
  assert.equal(resumedFrom[0], null);
  assert.equal(resumedFrom.length, 4, 'three cuts, three resumes');
  for (const id of resumedFrom.slice(1)) assert.match(id ?? '', /^2\.\d+\.\d+\.\d+\.\d+$/, 'resumed from a delta\'s id');
  const last = events.at(-1)!;
  assert.equal(last.event, 'status');
  assert.equal(last.terminal, true);
  const g = (last as Extract<GenerationStreamEvent, { event: 'status' }>).data;
  assert.equal(g.status, 'completed');
  // The local model writes the code with no fences: the streamed text is the result.
  assert.equal(w.text, g.result?.type === 'code' ? g.result.code : null);
  // Each status once (a stream opened once the job processes starts at `2`).
  const statuses = events.filter((e) => e.event === 'status').map((e) => e.id).join(',');
  assert.ok(statuses === '1,2,3' || statuses === '2,3', statuses);
});
