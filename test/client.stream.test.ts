// The typed client's streams against a real server and worker: generations.stream() delivers the
// output as it is written and resumes across connections cut mid-stream (a TCP proxy drops them)
// with no gap and no repeat; streamText() folds deltas and resets into text; runs.stream() carries
// each output in flight while runs.watch() keeps its own events.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { createKilnClient, type GenerationStreamEvent, type RunEvent, type RunStreamEvent, type TextUpdate } from 'kiln/client';
import { createWorkflow } from '../src/workflows/authoring.ts';
import { startTestWorker, until } from './_generations.ts';
import { startTcpProxy, type TcpProxy } from './_tcp-proxy.ts';
import { api, createAccount, createKey, startServer, testConfig, type TestServer } from './_setup.ts';

let srv: TestServer;
let proxy: TcpProxy;
let key: string;
let accountId: string;
const serverPort = () => Number(new URL(srv.origin).port);

before(async () => {
  srv = await startServer();
  await startTestWorker(srv);
  // `delayMs` with streaming on: the local model writes its text in ~20 pieces over the delay.
  // `local/held`: no streaming, a minute long; the tests write its stream as the worker would.
  for (const [id, upstream] of [['local/streamer', { delayMs: 4000 }], ['local/held', { delayMs: 60_000, stream: false }]] as const) {
    await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
      id, name: id, category: 'text', provider: 'local', upstream,
      cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 400, markup: 1,
    })})`;
  }
  const a = await createAccount(srv.db.sql, { tier: 'enterprise' });
  accountId = a.id;
  key = (await createKey(srv.db.sql, a.id)).key;
  proxy = await startTcpProxy(serverPort());
});

const bound = () => AbortSignal.timeout(60_000);
const chars = (s: string) => [...s].length;

/** A client through the proxy whose event-stream requests are recorded with their Last-Event-ID and how many events had been delivered then. */
function client(delivered: () => number = () => 0) {
  const opened: Array<{ lastEventId: string | null; delivered: number }> = [];
  const c = createKilnClient({
    baseUrl: `http://127.0.0.1:${proxy.port}`,
    apiKey: key,
    retry: { maxAttempts: 20, baseDelayMs: 20, maxDelayMs: 100 },
    fetch: (r) => {
      if (new URL(r.url).pathname.endsWith('/events')) opened.push({ lastEventId: r.headers.get('last-event-id'), delivered: delivered() });
      return fetch(r);
    },
  });
  return Object.assign(c, { opened });
}

test('generations.stream(): deltas in order make the code; three connections cut mid-stream resume with no gap and no repeat; it ends after the terminal status', async () => {
  const events: GenerationStreamEvent[] = [];
  const c = client(() => events.length);
  const accepted = await c.generations.create({ type: 'code', prompt: 'A pricing card', model: 'local/streamer' });
  let text = '';
  let cuts = 0;
  let deltasSinceCut = 0;
  for await (const e of c.generations.stream(accepted.id, { signal: bound() })) {
    events.push(e);
    if (e.event !== 'delta') continue;
    assert.equal(e.data.offset, chars(text), `delta ${e.id}: no gap, no repeat`);
    text += e.data.text;
    // Cut every connection (the stream's included) after the 1st, 3rd and 5th delta of a connection.
    if (cuts < 3 && ++deltasSinceCut === 2 * cuts + 1) {
      proxy.point(serverPort());
      cuts++;
      deltasSinceCut = 0;
    }
  }
  assert.equal(cuts, 3);
  const last = events.at(-1)!;
  assert.ok(last.event === 'status' && last.terminal && last.data.status === 'completed', JSON.stringify(last));
  assert.ok(events.slice(0, -1).every((e) => !e.terminal));
  const get = await api(srv.base, key, `/generations/${accepted.id}`);
  assert.deepEqual(last.data, get.body);
  assert.equal(text, get.body.result.code, 'the deltas concatenate to the result');

  // Each reconnect resumed after the last event delivered before it, and output kept coming after the last one.
  assert.equal(c.opened.length, 4, JSON.stringify(c.opened));
  assert.equal(c.opened[0]!.lastEventId, null);
  for (const o of c.opened.slice(1)) assert.equal(o.lastEventId, events[o.delivered - 1]!.id, JSON.stringify(c.opened));
  const afterLastCut = events.slice(c.opened[3]!.delivered);
  assert.ok(afterLastCut.some((e) => e.event === 'delta'), 'the generation was still writing after the third cut');
  const ids = events.map((e) => e.id);
  assert.equal(new Set(ids).size, ids.length, `no event twice: ${ids}`);
  assert.ok(events.filter((e) => e.event === 'delta').length >= 5);
  assert.deepEqual(events.filter((e) => e.event === 'status').map((e) => e.data.status).slice(-2), ['processing', 'completed']);
});

/** A `local/held` generation processing under the worker, and that worker's id. */
async function held(): Promise<{ id: string; worker: string }> {
  const created = await api(srv.base, key, '/generations', { body: { type: 'code', prompt: 'held', model: 'local/held' } });
  assert.equal(created.status, 202);
  const worker = await until('the generation is processing', async () => {
    const [g] = await srv.db.sql<Array<{ status: string; worker_id: string | null }>>`select status, worker_id from kiln_private.generations where id = ${created.body.id}`;
    return g?.status === 'processing' && g.worker_id;
  });
  return { id: created.body.id, worker };
}

/** What the worker's writer does (kiln.stream_generation): `session` 0 begins one, -1 the next after a cut. */
async function flush(id: string, worker: string, session: number, offset: number, text: string): Promise<number> {
  const [{ s }] = await srv.db.sql<Array<{ s: number }>>`select kiln.stream_generation(${id}::uuid, ${worker}, ${session}::int, ${offset}::int, ${text}, null, null) as s`;
  return s;
}

test('generations.streamText(): text so far, pieces, a reset that empties the text, and the settled generation as its return value', async () => {
  const { id, worker } = await held();
  assert.equal(await flush(id, worker, 0, 0, 'const a = "ü";\n'), 1);
  const c = client();
  const it = c.generations.streamText(id, { signal: bound() });
  const next = async () => (await it.next()).value as TextUpdate;
  assert.deepEqual(await next(), { delta: 'const a = "ü";\n', text: 'const a = "ü";\n', reset: false, attempt: 1 }, 'the text so far first');
  await flush(id, worker, 1, 15, 'const b = 🎉;\n');
  assert.deepEqual(await next(), { delta: 'const b = 🎉;\n', text: 'const a = "ü";\nconst b = 🎉;\n', reset: false, attempt: 1 });

  await srv.db.sql`select kiln.cut_generation_stream(${id}::uuid, ${worker})`;
  assert.deepEqual(await next(), { delta: '', text: '', reset: true, attempt: 2 });
  assert.equal(await flush(id, worker, -1, 0, 'again'), 2);
  assert.deepEqual(await next(), { delta: 'again', text: 'again', reset: false, attempt: 2 });

  await api(srv.base, key, `/generations/${id}/cancel`, { method: 'POST' });
  const end = await it.next();
  assert.equal(end.done, true);
  assert.equal((end.value as { status: string }).status, 'failed');
  assert.deepEqual(end.value, (await api(srv.base, key, `/generations/${id}`)).body);
});

test('runs.stream(): each output in flight streams its text under its node ids; runs.watch() sends none of it', async () => {
  const graph = {
    nodes: [
      { id: 'p1', kind: 'prompt', output: 'code', prompt: 'one', model: 'local/streamer' }, { id: 'o1', kind: 'output' },
      { id: 'p2', kind: 'prompt', output: 'code', prompt: 'two', model: 'local/streamer' }, { id: 'o2', kind: 'output' },
    ],
    edges: [{ from: 'p1', to: 'o1' }, { from: 'p2', to: 'o2' }],
  };
  const wf = await createWorkflow(srv.db.sql, testConfig(), { accountId, workspaceId: null, name: 'streamed', graph });
  const c = client();
  const run = await c.runs.start(wf.id);
  const streamed: RunStreamEvent[] = [];
  const watched: RunEvent[] = [];
  await Promise.all([
    (async () => { for await (const e of c.runs.stream(wf.id, run.id, { signal: bound() })) streamed.push(e); })(),
    (async () => { for await (const e of c.runs.watch(wf.id, run.id, { signal: bound() })) watched.push(e); })(),
  ]);
  const last = streamed.at(-1)!;
  assert.ok(last.event === 'status' && last.terminal && last.data.status === 'completed');
  for (const [p, o] of [['p1', 'o1'], ['p2', 'o2']] as const) {
    const deltas = streamed.flatMap((e) => (e.event === 'delta' && e.data.outputNodeId === o ? [e.data] : []));
    assert.ok(deltas.length >= 2, `${o} streamed`);
    assert.ok(deltas.every((d) => d.promptNodeId === p));
    assert.equal(deltas.map((d) => d.text).join(''), last.data.results.find((r) => r.outputNodeId === o)!.code);
  }
  assert.deepEqual(new Set(watched.map((e) => e.event)), new Set(['status', 'output', 'progress']));
  assert.deepEqual(watched.filter((e) => e.event === 'progress').map((e) => e.data), [{ total: 2, completed: 1 }, { total: 2, completed: 2 }]);
  // The same run events from `running` on: whether a stream sees `pending` (id 1) depends on when it
  // opened, and an id's part after the status-and-settled number says where each output in flight
  // stood, which depends on the connection's timing too.
  const base = (id: string) => id.split(':')[0]!;
  const runEvents = (ids: string[]) => ids.map(base).filter((id) => id !== '1');
  assert.deepEqual(runEvents(watched.map((e) => e.id)), runEvents(streamed.filter((e) => e.event === 'status' || e.event === 'output' || e.event === 'progress').map((e) => e.id)));
});

test('runs.watch() skips an output in flight\'s progress (output.progress); runs.stream() passes it, typed', async () => {
  const body = [
    'id: 2\nevent: status\ndata: {"id":"r","status":"running","progress":{"total":1,"completed":0},"results":[]}\n\n',
    'id: 2:1.1.0.0.1\nevent: output.progress\ndata: {"percent":40,"message":"painting","promptNodeId":"p","outputNodeId":"o"}\n\n',
    'id: 6\nevent: progress\ndata: {"total":1,"completed":1}\n\n',
    'id: 7\nevent: status\ndata: {"id":"r","status":"completed","progress":{"total":1,"completed":1},"results":[]}\n\n',
  ].join('');
  const c = createKilnClient({
    baseUrl: 'http://kiln.test', apiKey: 'kiln_live_x',
    fetch: async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } }),
  });
  const watched: RunEvent[] = [];
  for await (const e of c.runs.watch('w', 'r')) watched.push(e);
  assert.deepEqual(watched.map((e) => [e.id, e.event]), [['2', 'status'], ['6', 'progress'], ['7', 'status']]);
  const streamed: RunStreamEvent[] = [];
  for await (const e of c.runs.stream('w', 'r')) streamed.push(e);
  assert.deepEqual(streamed.map((e) => e.id), ['2', '2:1.1.0.0.1', '6', '7']);
  const p = streamed[1]!;
  assert.ok(p.event === 'output.progress' && p.data.outputNodeId === 'o' && p.data.message === 'painting' && p.data.percent === 40);
});
