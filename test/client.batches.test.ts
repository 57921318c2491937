// The typed client's batches (docs/api.md, "Client"): create from line objects, a JSON Lines
// string, a Blob or bytes (an automatic Idempotency-Key; a refused file keeps every pointer in
// `details`), list/all, get, watch to the terminal status, cancel, and `results` — an iterator
// that yields each line as its bytes arrive, shown with a body held back mid-stream.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { createKilnClient, KilnError, type BatchEvent, type BatchInputLine, type BatchResultLine, type KilnClientOptions } from 'kiln/client';
import { startTestWorker } from './_generations.ts';
import { createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
let key: string;

before(async () => {
  srv = await startServer();
  // A line of it takes 3 s: a batch of them is still running when the test cancels it, even on a loaded machine.
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/slow', name: 'slow', category: 'text', provider: 'local', upstream: { delayMs: 3000, stream: false },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
  })})`;
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'enterprise' });
  key = (await createKey(srv.db.sql, a.id)).key;
});

/** A bound for a call that waits on the worker: a stalled one fails the test instead of hanging the suite. */
const bound = () => AbortSignal.timeout(120_000);

/** A client whose requests are recorded (method, path, content type and Idempotency-Key). */
function client(opts: Partial<KilnClientOptions> = {}) {
  const sent: Array<{ method: string; path: string; contentType: string | null; idempotencyKey: string | null }> = [];
  const c = createKilnClient({
    baseUrl: srv.origin,
    apiKey: key,
    retry: { baseDelayMs: 20 },
    fetch: (r) => {
      sent.push({ method: r.method, path: new URL(r.url).pathname.replace('/api/v1', ''), contentType: r.headers.get('content-type'), idempotencyKey: r.headers.get('idempotency-key') });
      return fetch(r);
    },
    ...opts,
  });
  return Object.assign(c, { sent });
}

const line = (custom_id: string, body: BatchInputLine['body']): BatchInputLine => ({ custom_id, method: 'POST', url: '/api/v1/generations', body });

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

test('a batch of 300 lines from line objects: watch to completion, results name every custom_id once, list/all/get agree', async () => {
  const kiln = client();
  const lines = Array.from({ length: 300 }, (_, i) => line(`row-${i}`, i % 3 === 0 ? { type: 'image', prompt: `tile ${i}` } : { type: 'code', prompt: `card ${i}`, targetLanguage: 'tsx' }));
  const batch = await kiln.batches.create(lines, { signal: bound() });
  assert.equal(batch.status, 'in_progress');
  assert.deepEqual(batch.requestCounts, { total: 300, completed: 0, failed: 0, canceled: 0 });
  const post = kiln.sent.find((s) => s.method === 'POST' && s.path === '/batches')!;
  assert.equal(post.contentType, 'application/jsonl');
  assert.match(post.idempotencyKey!, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

  const events: BatchEvent[] = await collect(kiln.batches.watch(batch.id, { signal: bound() }));
  const last = events.at(-1)!;
  assert.equal(last.event, 'status');
  assert.equal(last.terminal, true);
  assert.equal(last.id, '301', 'the terminal event id is total + 1');
  assert.equal(last.data.status, 'completed');
  assert.deepEqual(last.data.requestCounts, { total: 300, completed: 300, failed: 0, canceled: 0 });
  assert.ok(events.slice(0, -1).every((e) => e.event === 'progress' && !e.terminal && e.data.id === batch.id));
  // Ids count the lines ended: increasing, never repeated.
  const ids = events.map((e) => Number(e.id));
  assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
  assert.equal(new Set(ids).size, ids.length);

  const results: BatchResultLine[] = await collect(kiln.batches.results(batch.id, { signal: bound() }));
  assert.equal(results.length, 300);
  assert.deepEqual(results.map((r) => r.custom_id).sort(), lines.map((l) => l.custom_id).sort());
  assert.ok(results.every((r) => r.response?.status_code === 200 && r.response.body.batchId === batch.id && r.response.body.customId === r.custom_id && !r.error));
  const spent = results.reduce((n, r) => n + (r.response!.body.result?.costMicros ?? 0), 0);
  assert.equal(last.data.spentMicros, spent);

  assert.deepEqual(await kiln.batches.get(batch.id), last.data);
  const page = await kiln.batches.list({ limit: 1 });
  assert.equal(page.data[0]!.id, batch.id);
  assert.ok((await collect(kiln.batches.all({ limit: 1 }))).some((b) => b.id === batch.id));
  const lineGens = await collect(kiln.generations.all({ batchId: batch.id, limit: 100 }));
  assert.equal(lineGens.length, 300);
});

test('create from a JSON Lines string, a Blob and bytes; the same key and file replay the batch; x-ndjson is accepted', async () => {
  const kiln = client();
  const text = `${JSON.stringify(line('a', { type: 'code', prompt: 'one' }))}\r\n\n${JSON.stringify(line('b', { type: 'code', prompt: 'two' }))}`;
  const fromString = await kiln.batches.create(text, { idempotencyKey: 'client-batch-1' });
  assert.equal(fromString.requestCounts.total, 2);
  const fromBlob = await kiln.batches.create(new Blob([text]), { idempotencyKey: 'client-batch-1' });
  assert.equal(fromBlob.id, fromString.id, 'the same key and the same file: the same batch');
  const fromBytes = await kiln.batches.create(new TextEncoder().encode(text), { contentType: 'application/x-ndjson' });
  assert.notEqual(fromBytes.id, fromString.id);
  assert.equal(kiln.sent.at(-1)!.contentType, 'application/x-ndjson');
  const conflict = await kiln.batches.create([line('c', { type: 'code', prompt: 'other' })], { idempotencyKey: 'client-batch-1' }).then(() => null, (e) => e);
  assert.ok(conflict instanceof KilnError);
  assert.equal(conflict.status, 422);
  assert.equal(conflict.type, 'idempotency_conflict');
});

test('a refused batch: KilnError 400 invalid_request with every pointer in details; a wrong input type is refused before sending', async () => {
  const kiln = client();
  const lines = [
    line('ok', { type: 'code', prompt: 'fine' }),
    line('ok', { type: 'code', prompt: 'dup' }),
    line('m', { type: 'code', prompt: 'x', model: 'no/such-model' }),
    { custom_id: 'u', method: 'POST', url: '/v1/chat/completions', body: { type: 'code', prompt: 'x' } } as unknown as BatchInputLine,
  ];
  const e = await kiln.batches.create(lines).then(() => null, (err) => err);
  assert.ok(e instanceof KilnError, String(e));
  assert.equal(e.status, 400);
  assert.equal(e.type, 'invalid_request');
  assert.deepEqual(e.details.map((d) => d.path), ['/lines/2/custom_id', '/lines/3/body/model', '/lines/4/url']);
  assert.ok(e.details.every((d) => d.message.length > 0));
  // Refused, so never retried: one POST.
  assert.equal(kiln.sent.filter((s) => s.method === 'POST').length, 1);
  const empty = await kiln.batches.create([]).then(() => null, (err) => err);
  assert.ok(empty instanceof KilnError && empty.status === 400, String(empty));
  assert.throws(() => kiln.batches.create(42 as never), TypeError);
});

test('results: each line is yielded as it arrives — the first one while the rest of the body is still held back', async () => {
  const kiln = client();
  const batch = await kiln.batches.create(Array.from({ length: 200 }, (_, i) => line(`r${i}`, { type: 'code', prompt: `gate ${i}`, targetLanguage: 'tsx' })));
  for await (const e of kiln.batches.watch(batch.id, { signal: bound() })) if (e.terminal) assert.equal(e.data.status, 'completed');

  // The results answer re-cut into 2 KB pieces; after the first 8 KB the rest waits for `release`
  // (or 10 s, so that a client reading the whole body first fails below instead of hanging).
  let release!: () => void;
  const released = new Promise<void>((r) => { release = r; setTimeout(r, 10_000); });
  let delivered = 0;
  let total = 0;
  const gated = client({
    fetch: async (r) => {
      const res = await fetch(r);
      if (!new URL(r.url).pathname.endsWith('/results') || !res.body) return res;
      const whole = new Uint8Array(await res.arrayBuffer());
      total = whole.length;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (delivered >= 8192) await released;
          if (delivered >= whole.length) return controller.close();
          const piece = whole.subarray(delivered, delivered + 2048);
          delivered += piece.length;
          controller.enqueue(piece);
        },
      }, { highWaterMark: 0 });
      return new Response(body, { status: res.status, headers: res.headers });
    },
  });
  const seen: string[] = [];
  let heldBack = -1;
  for await (const r of gated.batches.results(batch.id, { signal: bound() })) {
    if (!seen.length) {
      heldBack = total - delivered;
      release();
    }
    seen.push(r.custom_id);
  }
  assert.ok(total > 100_000, `a body of ${total} bytes`);
  assert.ok(heldBack > 0, `the first line came while ${heldBack} bytes were still held back`);
  assert.equal(seen.length, 200);
  assert.equal(new Set(seen).size, 200);

  // Breaking out early closes the connection; the next call works.
  for await (const _ of kiln.batches.results(batch.id)) break;
  assert.equal((await kiln.batches.get(batch.id)).status, 'completed');
});

test('cancel: the batch goes canceling then canceled (watch ends on it); 409 once ended; 404 for another account; 401', async () => {
  const kiln = client();
  const batch = await kiln.batches.create(Array.from({ length: 30 }, (_, i) => line(`s${i}`, { type: 'code', prompt: `slow ${i}`, model: 'local/slow' })));
  const canceled = await kiln.batches.cancel(batch.id);
  assert.ok(['canceling', 'canceled'].includes(canceled.status), canceled.status);
  const events = await collect(kiln.batches.watch(batch.id, { signal: bound() }));
  const last = events.at(-1)!;
  assert.equal(last.terminal, true);
  assert.equal(last.data.status, 'canceled');
  const c = last.data.requestCounts;
  assert.equal(c.completed + c.failed + c.canceled, 30);
  assert.ok(c.canceled > 0);
  const results = await collect(kiln.batches.results(batch.id));
  assert.equal(results.length, 30);
  assert.ok(results.filter((r) => r.error).every((r) => r.error!.code === 'canceled'), JSON.stringify(results.find((r) => r.error && r.error.code !== 'canceled')));
  assert.equal(results.filter((r) => r.error?.code === 'canceled').length, c.canceled);

  const again = await kiln.batches.cancel(batch.id).then(() => null, (e) => e);
  assert.ok(again instanceof KilnError);
  assert.equal(again.status, 409);
  assert.equal(again.type, 'conflict');

  const other = await createAccount(srv.db.sql, { tier: 'pro' });
  const stranger = client({ apiKey: (await createKey(srv.db.sql, other.id)).key });
  for (const call of [() => stranger.batches.get(batch.id), () => stranger.batches.cancel(batch.id), () => collect(stranger.batches.results(batch.id)), () => collect(stranger.batches.watch(batch.id))]) {
    const e = await call().then(() => null, (err) => err);
    assert.ok(e instanceof KilnError && e.status === 404 && e.type === 'not_found', String(e));
  }
  const nobody = client({ apiKey: 'kiln_live_nobody' });
  const e = await collect(nobody.batches.results(batch.id)).then(() => null, (err) => err);
  assert.ok(e instanceof KilnError && e.status === 401, String(e));
});

test('retries resend the whole file with the same Idempotency-Key: a 503, then an answer lost after the server accepted — one batch', async () => {
  const attempts: Array<{ key: string | null; bytes: number }> = [];
  const kiln = client({
    retry: { baseDelayMs: 5 },
    fetch: async (r) => {
      if (r.method !== 'POST') return fetch(r);
      const n = attempts.push({ key: r.headers.get('idempotency-key'), bytes: (await r.clone().arrayBuffer()).byteLength });
      if (n === 1) return new Response(JSON.stringify({ error: { type: 'server_error', message: 'Briefly unavailable.' } }), { status: 503, headers: { 'content-type': 'application/json' } });
      const res = await fetch(r);
      if (n === 2) {
        await res.arrayBuffer();
        throw new TypeError('fetch failed (the answer was lost)');
      }
      return res;
    },
  });
  const file = new Blob([Array.from({ length: 5 }, (_, i) => JSON.stringify(line(`retry-${i}`, { type: 'code', prompt: `retry ${i}` }))).join('\n')]);
  const b = await kiln.batches.create(file);
  assert.equal(attempts.length, 3);
  assert.ok(attempts.every((a) => a.key === attempts[0]!.key && a.bytes === file.size), JSON.stringify(attempts));
  assert.equal(b.requestCounts.total, 5);
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.generations where custom_id like 'retry-%'`;
  assert.equal(n, 5, 'one batch of 5 lines, not two');
});
