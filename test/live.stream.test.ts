// Streamed output through Postgres to SSE clients (docs/api.md, "Streaming"), with the worker's
// flushes written straight through kiln.stream_generation as the worker would: the text so far on
// open, deltas in order, resume from a delta's id with no gap and no repeat, long flushes split
// across notifications, `reset` when an execution is cut off, `partial` on GET, the rows dropped
// when the generation ends, 404 across accounts. The worker's side and real providers:
// generations.stream.test.ts.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { createWorkflow } from '../src/workflows/authoring.ts';
import { startTestWorker } from './_generations.ts';
import { openSse, type SseEvent } from './_live.ts';
import { api, createAccount, createKey, startServer, testConfig, type TestServer } from './_setup.ts';

let srv: TestServer;
let key: string;
let otherKey: string;
let accountId: string;

before(async () => {
  srv = await startServer();
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/stuck-coder', name: 'stuck', category: 'text', provider: 'local', upstream: { delayMs: 60_000 },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
  })})`;
  await startTestWorker(srv);
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/streamer', name: 'streamer', category: 'text', provider: 'local', upstream: { delayMs: 1500 },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 400, markup: 1,
  })})`;
  const a = await createAccount(srv.db.sql, { tier: 'enterprise' });
  accountId = a.id;
  key = (await createKey(srv.db.sql, a.id)).key;
  const b = await createAccount(srv.db.sql, { tier: 'enterprise' });
  otherKey = (await createKey(srv.db.sql, b.id)).key;
});

const auth = (k = key, last?: string) => ({ authorization: `Bearer ${k}`, ...(last ? { 'last-event-id': last } : {}) });

/** A code generation processing under the test worker (it never answers by itself) and that worker's id. */
async function processing(): Promise<{ id: string; worker: string }> {
  const created = await api(srv.base, key, '/generations', { body: { type: 'code', prompt: 'stream', model: 'local/stuck-coder' } });
  assert.equal(created.status, 202);
  for (let i = 0; i < 200; i++) {
    const [g] = await srv.db.sql<Array<{ status: string; worker_id: string | null }>>`select status, worker_id from kiln_private.generations where id = ${created.body.id}`;
    if (g?.status === 'processing' && g.worker_id) return { id: created.body.id, worker: g.worker_id };
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the generation never started');
}

async function flush(id: string, worker: string, session: number, offset: number, text: string, extra: { preview?: object; progress?: object } = {}): Promise<number> {
  const [{ s }] = await srv.db.sql<Array<{ s: number }>>`select kiln.stream_generation(${id}::uuid, ${worker}, ${session}::int, ${offset}::int, ${text},
    ${extra.preview ? JSON.stringify(extra.preview) : null}::text::jsonb, ${extra.progress ? JSON.stringify(extra.progress) : null}::text::jsonb) as s`;
  return s;
}

const data = (e: SseEvent) => JSON.parse(e.data);
const deltas = (events: SseEvent[]) => events.filter((e) => e.event === 'delta').map(data);

test('text so far on open, then deltas in order; resume from a delta id; reset when cut; dropped at the end', async () => {
  const { id, worker } = await processing();
  assert.equal(await flush(id, worker, 0, 0, 'Hello '), 1, 'the first flush begins session 1');
  assert.equal(await flush(id, worker, 1, 6, 'wörld 🎉\n'), 1);
  assert.equal(await flush(id, worker, 1, 3, 'x'), -1, 'a flush that does not follow on is refused');
  assert.equal(await flush(id, 'another-worker', 0, 0, 'x'), 0, 'only the worker the generation runs under may begin');

  const get = await api(srv.base, key, `/generations/${id}`);
  assert.deepEqual(get.body.partial, { text: 'Hello wörld 🎉\n' });

  const s = await openSse(`${srv.base}/generations/${id}/events`, auth());
  const first = await s.until((e) => e.event === 'delta');
  assert.deepEqual(data(first), { text: 'Hello wörld 🎉\n', offset: 0 }, 'the text so far, as one delta at offset 0');
  assert.deepEqual(s.events.map((e) => e.event), ['status', 'delta']);
  assert.equal(first.id, '2.1.14.0.0', 'offsets count characters: 🎉 is one');

  await flush(id, worker, 1, 14, 'line two\n');
  const second = await s.until((e) => e.event === 'delta' && data(e).offset === 14);
  assert.equal(data(second).text, 'line two\n');
  s.abort();

  // While no one listens, more is written; resuming from the first delta's id sends exactly the rest.
  await flush(id, worker, 1, 23, 'three\n', { progress: { p: 40, m: 'writing' } });
  const resumed = await openSse(`${srv.base}/generations/${id}/events`, auth(key, first.id));
  await resumed.until((e) => e.event === 'progress');
  assert.deepEqual(deltas(resumed.events), [{ text: 'line two\nthree\n', offset: 14 }], 'no gap, no repeat');
  assert.deepEqual(data(resumed.events.find((e) => e.event === 'progress')!), { percent: 40, message: 'writing' });
  assert.ok(!resumed.events.some((e) => e.event === 'status'), 'statuses already seen are not sent again');

  // A long flush goes in several notifications and still arrives whole and in order.
  const long = Array.from({ length: 2600 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
  await flush(id, worker, 1, 29, long);
  await resumed.until((e) => e.event === 'delta' && data(e).offset + [...data(e).text].length === 29 + 2600);
  assert.equal(deltas(resumed.events).map((d) => d.text).join(''), 'line two\nthree\n' + long);

  // The execution is cut off: clients are told now; the next session starts at offset 0, with no second reset.
  await srv.db.sql`select kiln.cut_generation_stream(${id}::uuid, ${worker})`;
  const reset = await resumed.until((e) => e.event === 'reset');
  assert.deepEqual(data(reset), { attempt: 2 });
  assert.equal((await api(srv.base, key, `/generations/${id}`)).body.partial, undefined, 'nothing partial after a cut');
  assert.equal(await flush(id, worker, -1, 0, 'again'), 2);
  const again = await resumed.until((e) => e.event === 'delta' && data(e).text === 'again');
  assert.equal(data(again).offset, 0);
  assert.equal(resumed.events.filter((e) => e.event === 'reset').length, 1);

  // A client that resumes from before the cut is told `reset` too, then gets the new text.
  const late = await openSse(`${srv.base}/generations/${id}/events`, auth(key, second.id));
  await late.until((e) => e.event === 'delta');
  assert.deepEqual(late.events.map((e) => e.event), ['reset', 'delta']);
  assert.deepEqual(deltas(late.events), [{ text: 'again', offset: 0 }]);
  late.abort();

  // Ending the generation drops its stream row; the terminal status is the last event.
  await api(srv.base, key, `/generations/${id}/cancel`, { method: 'POST' });
  await resumed.ended;
  assert.equal(resumed.events.at(-1)!.event, 'status');
  assert.equal(resumed.events.at(-1)!.id, '3');
  const rows = await srv.db.sql`select 1 from kiln_private.generation_streams where generation_id = ${id}`;
  assert.equal(rows.length, 0);
});

test('another account cannot open or resume the stream: 404', async () => {
  const { id } = await processing();
  const s = await openSse(`${srv.base}/generations/${id}/events`, auth(otherKey, '2.1.0.0.0'));
  assert.equal(s.status, 404);
  assert.equal(s.body.error.type, 'not_found', JSON.stringify(s.body));
  await api(srv.base, key, `/generations/${id}/cancel`, { method: 'POST' });
});

test('a run: each output in flight streams its text with its node ids; a resumed run stream repeats nothing', async () => {
  const graph = {
    nodes: [
      { id: 'p1', kind: 'prompt', output: 'code', prompt: 'one', model: 'local/streamer' }, { id: 'o1', kind: 'output' },
      { id: 'p2', kind: 'prompt', output: 'code', prompt: 'two', model: 'local/streamer' }, { id: 'o2', kind: 'output' },
    ],
    edges: [{ from: 'p1', to: 'o1' }, { from: 'p2', to: 'o2' }],
  };
  const wf = await createWorkflow(srv.db.sql, testConfig(), { accountId, workspaceId: null, name: 'streamed run', graph });
  const run = await api(srv.base, key, `/workflows/${wf.id}/runs`, { method: 'POST' });
  assert.equal(run.status, 202);
  const url = `${srv.base}/workflows/${wf.id}/runs/${run.body.id}/events`;
  const s = await openSse(url, auth());
  const firstDelta = await s.until((e) => e.event === 'delta');
  s.abort();
  const rest = await openSse(url, auth(key, firstDelta.id));
  await rest.ended;
  const all = [...s.events.slice(0, s.events.indexOf(firstDelta) + 1), ...rest.events];
  const outputs = all.filter((e) => e.event === 'output').map(data);
  assert.equal(outputs.length, 2);
  for (const [p, o] of [['p1', 'o1'], ['p2', 'o2']]) {
    const mine = all.filter((e) => e.event === 'delta' && data(e).outputNodeId === o).map(data);
    assert.ok(mine.length >= 2, `${o} streamed`);
    assert.ok(mine.every((d) => d.promptNodeId === p));
    const code = outputs.find((x) => x.outputNodeId === o).code;
    let at = 0;
    for (const d of mine) {
      assert.equal(d.offset, at, 'no gap, no repeat');
      at += [...d.text].length;
    }
    assert.equal(mine.map((d) => d.text).join(''), code, 'the deltas make the output');
  }
  assert.equal(all.at(-1)!.event, 'status');
});
