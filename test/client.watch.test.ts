// The client's watch() and run() across processes: a `kiln api` and a separate `kiln worker` on
// the test database. The API process is killed mid-run (and, for a generation, shut down
// gracefully) and started again on the same port: the iterator reconnects with Last-Event-ID and
// delivers every event once, in order, the terminal one last.

import assert from 'node:assert/strict';
import net from 'node:net';
import { before, test } from 'node:test';
import { createKilnClient, KilnError, type GenerationEvent, type RunEvent } from 'kiln/client';
import { createWorkflow } from '../src/workflows/authoring.ts';
import { spawnKiln, type Spawned } from './_live.ts';
import { api, createAccount, createKey, createTestDb, testConfig, type TestDb } from './_setup.ts';

let db: TestDb;
let port: number;
/** The API process, or its restart under way: each test waits for it, so one failing mid-restart does not fail the next. */
let apiUp: Promise<Spawned>;
let key: string;
let accountId: string;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as net.AddressInfo).port; s.close(() => resolve(p)); });
  });
}

const startApi = () => spawnKiln('api', db.url, { PORT: String(port) });

before(async () => {
  db = await createTestDb();
  // `stream: false`: these watches follow statuses and settled outputs, whose ids are whole
  // numbers only while no output streams (resuming streamed output: test/client.stream.test.ts).
  for (const [id, delayMs] of [['local/step-coder', 700], ['local/slow-coder', 2500], ['local/stuck-coder', 60_000]] as const) {
    await db.sql`select kiln.upsert_model(${db.sql.json({
      id, name: id, category: 'text', provider: 'local', upstream: { delayMs, stream: false },
      cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
    })})`;
  }
  const a = await createAccount(db.sql, { tier: 'enterprise' });
  accountId = a.id;
  key = (await createKey(db.sql, a.id)).key;
  port = await freePort();
  apiUp = startApi();
  await Promise.all([apiUp, spawnKiln('worker', db.url)]);
});

/** A bound for a call that waits on the worker: a stalled one fails the test instead of hanging the suite. */
const bound = () => AbortSignal.timeout(60_000);

/** A client whose requests are recorded: path, Last-Event-ID and the answer's status (none: no answer). */
function client() {
  const t0 = Date.now();
  const sent: Array<{ method: string; path: string; lastEventId: string | null; at: number; status?: number }> = [];
  const c = createKilnClient({
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey: key,
    // Retries every ≤ 0.5 s for as long as an API restart takes: `kiln api` took 3–5 s to start at
    // load average 25 (more with several suites at once), past the ~5 s that 15 jittered attempts
    // ≤ 0.8 s apart spanned. 300 attempts outlast the 60 s bound on every call, so that bound, not
    // a random sum of backoffs, is what limits a restart.
    retry: { maxAttempts: 300, baseDelayMs: 100, maxDelayMs: 500 },
    fetch: (r) => {
      const entry: (typeof sent)[number] = { method: r.method, path: new URL(r.url).pathname.replace('/api/v1', ''), lastEventId: r.headers.get('last-event-id'), at: Date.now() - t0 };
      sent.push(entry);
      return fetch(r).then((res) => { entry.status = res.status; return res; });
    },
  });
  return Object.assign(c, { sent });
}

test('runs.watch(): the API process killed mid-run and restarted — resumed with Last-Event-ID, no gap, no duplicate, terminal last', async () => {
  // A chain of three outputs and an independent fourth, ~700 ms each.
  const graph = {
    nodes: [
      { id: 'brief', kind: 'text', text: 'Autumn sale' },
      { id: 'p1', kind: 'prompt', output: 'code', prompt: 'one', model: 'local/step-coder' }, { id: 'o1', kind: 'output', label: 'One' },
      { id: 'p2', kind: 'prompt', output: 'code', prompt: 'two', model: 'local/step-coder' }, { id: 'o2', kind: 'output' },
      { id: 'p3', kind: 'prompt', output: 'code', prompt: 'three', model: 'local/step-coder' }, { id: 'o3', kind: 'output' },
      { id: 'p4', kind: 'prompt', output: 'code', prompt: 'four', model: 'local/step-coder' }, { id: 'o4', kind: 'output' },
    ],
    edges: [
      { from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }, { from: 'o1', to: 'p2' }, { from: 'p2', to: 'o2' },
      { from: 'o2', to: 'p3' }, { from: 'p3', to: 'o3' }, { from: 'brief', to: 'p4' }, { from: 'p4', to: 'o4' },
    ],
  };
  const wf = (await createWorkflow(db.sql, testConfig(), { accountId, workspaceId: null, name: 'watched run', graph })).id;
  const apiProc = await apiUp;
  const c = client();
  const started = await c.runs.start(wf);
  const events: RunEvent[] = [];
  let killedAfter: string | null = null;
  let restarted = false;
  try {
    for await (const e of c.runs.watch(wf, started.id, { signal: bound() })) {
      events.push(e);
      if (e.event === 'output' && !restarted) {
        killedAfter = e.id;
        await apiProc.stop('SIGKILL');
        apiUp = startApi();
        restarted = true;
      }
    }
  } catch (e) {
    throw new Error(`watch failed after ${JSON.stringify(events.map((x) => [x.id, x.event]))}; requests ${JSON.stringify(c.sent)}`, { cause: e });
  }
  assert.ok(restarted);
  await apiUp;

  const streams = c.sent.filter((s) => s.path.endsWith('/events'));
  assert.ok(streams.length >= 2, JSON.stringify(streams));
  assert.equal(streams[0]!.lastEventId, null);
  // Every reopen resumed after an event the iterator had delivered, at or past the kill.
  const resumedAt = streams.slice(1).map((s) => s.lastEventId);
  for (const id of resumedAt) assert.ok(id !== null && events.some((e) => e.id === id) && Number(id) >= Number(killedAfter), `resumed at ${id}`);
  assert.ok(events.some((e) => Number(e.id) > Number(resumedAt.at(-1))), 'events arrived after the reconnect');

  const ids = events.map((e) => Number(e.id));
  assert.equal(new Set(ids).size, ids.length, `no duplicate: ${ids}`);
  // No gap: each id is 4 × (output and progress events so far) + the status ordinal so far.
  let pairs = 0;
  let status = 0;
  for (const e of events) {
    if (e.event === 'output' || e.event === 'progress') pairs++;
    else status = e.data.status === 'pending' ? 1 : e.data.status === 'running' ? 2 : 3;
    assert.equal(Number(e.id), pairs * 4 + status, `event ${e.event} ${e.id} of ${ids}`);
  }
  assert.deepEqual(events.filter((e) => e.event === 'progress').map((e) => e.data), [1, 2, 3, 4].map((completed) => ({ total: 4, completed })));
  const last = events.at(-1)!;
  assert.ok(last.event === 'status' && last.terminal && events.slice(0, -1).every((e) => !e.terminal));
  const get = await api(`http://127.0.0.1:${port}/api/v1`, key, `/workflows/${wf}/runs/${started.id}`);
  assert.deepEqual(last.data, get.body);
  assert.equal(get.body.status, 'completed');
  assert.deepEqual(events.filter((e) => e.event === 'output').map((e) => e.data), get.body.results);
});

test('generations.run() and generations.watch() across processes; a graceful API restart mid-job is resumed; lastEventId skips what was seen', async () => {
  let apiProc = await apiUp;
  const c = client();
  const statuses: string[] = [];
  const done = await c.generations.run({ type: 'code', prompt: 'A pricing card', model: 'local/step-coder' }, { onStatus: (g) => statuses.push(g.status), signal: bound() });
  assert.equal(done.status, 'completed');
  assert.equal(done.result?.type, 'code');
  // The POST itself waits (Prefer: wait), so the first status seen may already be the last.
  assert.equal(statuses.at(-1), 'completed');
  assert.equal(new Set(statuses).size, statuses.length, `each status once: ${statuses}`);
  // Counted: the answers. A 503 (the API's 2 s limiter timeout can expire on a loaded machine)
  // or a refused connection is retried by the client, which is not polling.
  const answered = c.sent.filter((s) => s.status !== undefined && s.status !== 503);
  assert.ok(answered.length <= 3, `Prefer: wait, not polling: ${JSON.stringify(c.sent)}`);

  const accepted = await c.generations.create({ type: 'code', prompt: 'slow', model: 'local/slow-coder' });
  const events: GenerationEvent[] = [];
  let restarted = false;
  for await (const e of c.generations.watch(accepted.id, { signal: bound() })) {
    events.push(e);
    if (e.data.status === 'processing' && !restarted) {
      // SIGTERM: the API ends its streams cleanly (no terminal event yet) and exits.
      await apiProc.stop('SIGTERM');
      apiUp = startApi();
      restarted = true;
    }
  }
  assert.ok(restarted);
  apiProc = await apiUp;
  // A stream opened late starts at the current status (the job may be processing already).
  const seen = events.map((e) => [e.id, e.data.status, e.terminal]);
  assert.deepEqual(seen.slice(-2), [['2', 'processing', false], ['3', 'completed', true]]);
  assert.ok(seen.length === 2 || (seen.length === 3 && seen[0]![1] === 'pending'), JSON.stringify(seen));
  const streams = c.sent.filter((s) => s.path.endsWith('/events'));
  assert.ok(streams.length >= 2 && streams.slice(1).every((s) => s.lastEventId === '2'), JSON.stringify(streams));
  const get = await api(`http://127.0.0.1:${port}/api/v1`, key, `/generations/${accepted.id}`);
  assert.deepEqual(events.at(-1)!.data, get.body);

  const rest: GenerationEvent[] = [];
  for await (const e of c.generations.watch(accepted.id, { lastEventId: '1', signal: bound() })) rest.push(e);
  assert.deepEqual(rest.map((e) => e.id), ['3']);
});

test('watch(): an error answer ends it at once (404, one request); aborting its signal ends it promptly', async () => {
  await apiUp;
  const c = client();
  const graph = { nodes: [{ id: 'p', kind: 'prompt', output: 'code', prompt: 'x', model: 'local/stuck-coder' }, { id: 'o', kind: 'output' }], edges: [{ from: 'p', to: 'o' }] };
  const wf = (await createWorkflow(db.sql, testConfig(), { accountId, workspaceId: null, name: 'w', graph })).id;
  const missing = crypto.randomUUID();
  const e = await (async () => { for await (const _ of c.runs.watch(wf, missing)) { /* none */ } })().then(() => assert.fail('expected 404'), (x) => x);
  assert.ok(e instanceof KilnError && e.status === 404 && e.type === 'not_found', String(e));
  // One answer (a 503 before it, which the client retries, is not one).
  assert.equal(c.sent.filter((s) => s.path.includes(missing) && s.status !== undefined && s.status !== 503).length, 1, JSON.stringify(c.sent));

  const run = await c.runs.start(wf);
  // Once it is running, the run's next event is the stuck model's minute away: only an abort that
  // closes the stream ends the watch soon.
  for (const end = Date.now() + 30_000; (await c.runs.get(wf, run.id)).status !== 'running';) {
    assert.ok(Date.now() < end, 'the run started running');
    await new Promise((r) => setTimeout(r, 50));
  }
  const ac = new AbortController();
  const seen: RunEvent[] = [];
  let abortedAt = 0;
  const watching = (async () => {
    for await (const ev of c.runs.watch(wf, run.id, { signal: ac.signal })) {
      seen.push(ev);
      if (seen.length === 1) { abortedAt = Date.now(); ac.abort(); }
    }
  })();
  await assert.rejects(watching, { name: 'AbortError' });
  // Timed from the abort, not from opening the stream (which a loaded machine may take seconds
  // over): the alternative to prompt is a minute.
  const took = Date.now() - abortedAt;
  assert.ok(abortedAt > 0 && took < 10_000, `ended ${took} ms after the abort`);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.event, 'status');
  assert.equal(seen[0]!.data.status, 'running');
  await c.runs.cancel(wf, run.id);
});
