// GET /events: a scope's events as server-sent events, read from the outbox. Resuming with
// Last-Event-ID has no gap and no duplicate, even when transactions commit out of id order (the
// case an id-ordered stream gets wrong); other scopes' events never show; KILN_MAX_STREAMS holds.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { startTestWorker } from './_generations.ts';
import { openSse, type SseEvent } from './_live.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { startReceiver } from './_webhooks.ts';

let srv: TestServer;

before(async () => {
  srv = await startServer({ config: { webhookAllowPrivate: true, maxStreams: 3 } });
  await startTestWorker(srv);
});

async function account() {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  return { ...a, key };
}

/** An event in its own transaction, as a settling job writes one. */
async function emit(scope: string, n: number) {
  await srv.db.sql`select kiln_private.emit_event(${scope}::uuid, 'webhook.test', null, json_build_object('n', ${n}::int))`;
}

/**
 * An event from before a stream opens. A fresh stream starts at the oldest transaction still open
 * in the cluster (so an event committing late is never skipped): while another transaction that
 * began before this one is open — any test file's, since transaction ids are cluster-wide — the
 * stream would rightly include this event. Wait until no such transaction is left.
 */
async function emitBefore(scope: string, n: number) {
  const [{ tx }] = await srv.db.sql`select kiln_private.emit_event(${scope}::uuid, 'webhook.test', null, json_build_object('n', ${n}::int)) as id, pg_current_xact_id()::text as tx`;
  await horizonPast(tx);
}

async function horizonPast(tx: string) {
  for (let i = 0; i < 200; i++) {
    const [{ passed }] = await srv.db.sql`select pg_snapshot_xmin(pg_current_snapshot()) > ${tx}::xid8 as passed`;
    if (passed) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('an older transaction stayed open for 5 s');
}

const ns = (events: SseEvent[]) => events.map((e) => JSON.parse(e.data).data.n);
const open = (key: string, last?: string) => openSse(`${srv.base}/events`, { authorization: `Bearer ${key}`, ...(last ? { 'last-event-id': last } : {}) });

test('a stream sends what happens after it opens, with ids; Last-Event-ID resumes with no gap and no duplicate', async () => {
  const a = await account();
  await emitBefore(a.id, 0); // before the stream: not sent
  const s = await open(a.key);
  assert.equal(s.status, 200);
  for (let i = 1; i <= 3; i++) await emit(a.id, i);
  await s.until(() => s.events.length >= 3);
  assert.deepEqual(ns(s.events), [1, 2, 3]);
  for (const e of s.events) {
    assert.match(e.id!, /^\d+-\d+$/);
    assert.equal(e.event, 'webhook.test');
    assert.deepEqual(Object.keys(JSON.parse(e.data)), ['type', 'timestamp', 'data']);
  }
  s.abort();
  const resumeFrom = s.events[1]!.id!;
  for (let i = 4; i <= 6; i++) await emit(a.id, i);
  const r = await open(a.key, resumeFrom);
  await r.until(() => r.events.length >= 4);
  await new Promise((res) => setTimeout(res, 300));
  assert.deepEqual(ns(r.events), [3, 4, 5, 6]);
  r.abort();
});

test('transactions committing out of id order: the later-numbered event is held until the earlier commits, so a resume never skips', async () => {
  const a = await account();
  const s = await open(a.key);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let started!: () => void;
  const inTx = new Promise<void>((r) => (started = r));
  // Transaction 1 takes the lower id and stays open; transaction 2 takes the next id and commits.
  const tx1 = srv.db.sql.begin(async (tx) => {
    await tx`select kiln_private.emit_event(${a.id}::uuid, 'webhook.test', null, json_build_object('n', 1))`;
    started();
    await held;
  });
  await inTx;
  await emit(a.id, 2);
  const [{ ids }] = await srv.db.sql`select array_agg(id order by id)::text[] as ids from kiln_private.events where scope_id = ${a.id}`;
  assert.equal(ids.length, 1, 'only the committed event is visible to others');
  await new Promise((r) => setTimeout(r, 600));
  assert.deepEqual(ns(s.events), [], 'event 2 is not sent while event 1 (a lower id) may still commit');
  // A client that resumed from "the newest event it could see" would have skipped event 1.
  release();
  await tx1;
  await s.until(() => s.events.length >= 2);
  assert.deepEqual(ns(s.events), [1, 2]);
  const [{ order }] = await srv.db.sql`select array_agg((data->>'n')::int order by id)::int[] as order from kiln_private.events where scope_id = ${a.id}`;
  assert.deepEqual(order, [1, 2], 'event 1 did take the lower id');
  const r = await open(a.key, s.events[0]!.id!);
  await r.until(() => r.events.length >= 1);
  await new Promise((res) => setTimeout(res, 300));
  assert.deepEqual(ns(r.events), [2]);
  s.abort();
  r.abort();
});

test('a transaction elsewhere holds the horizon: its end lets the held events through, with no notice to wake the stream', async () => {
  const a = await account();
  const s = await open(a.key);
  await emit(a.id, 1);
  await s.until(() => s.events.length >= 1);
  s.abort();
  // An unrelated writing transaction (any database of the cluster: transaction ids are shared)
  // stays open while events 2 and 3 commit: they are held back behind it.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let started!: () => void;
  const inTx = new Promise<void>((r) => (started = r));
  const other = srv.db.sql.begin(async (tx) => {
    await tx`select pg_current_xact_id()`;
    started();
    await held;
  });
  await inTx;
  await emit(a.id, 2);
  await emit(a.id, 3);
  // Resumed after the events committed: their notices came before this stream was listening.
  const r = await open(a.key, s.events[0]!.id!);
  await new Promise((res) => setTimeout(res, 400));
  assert.deepEqual(ns(r.events), [], 'held while the older transaction is open');
  release();
  await other;
  await r.until(() => r.events.length >= 2, 3000);
  assert.deepEqual(ns(r.events), [2, 3]);
  r.abort();
});

test('many concurrent writers: a stream that reconnects after every few events still sees each event exactly once', async () => {
  const a = await account();
  let s = await open(a.key);
  const seen: number[] = [];
  const writers = Array.from({ length: 8 }, (_, w) => (async () => {
    for (let i = 0; i < 10; i++) {
      await srv.db.sql.begin(async (tx) => {
        await tx`select kiln_private.emit_event(${a.id}::uuid, 'webhook.test', null, json_build_object('n', ${w * 100 + i}::int))`;
        // Commit at slightly random moments so commits interleave out of id order.
        await tx`select pg_sleep(${Math.random() * 0.01})`;
      });
    }
  })());
  const all = Promise.all(writers);
  let last: string | undefined;
  while (seen.length < 80) {
    await s.until(() => s.events.length >= 3 || (seen.length + s.events.length >= 80), 30_000);
    const got = s.events.slice();
    s.abort();
    seen.push(...ns(got));
    last = got[got.length - 1]?.id ?? last;
    s = await open(a.key, last);
  }
  await all;
  await new Promise((r) => setTimeout(r, 300));
  seen.push(...ns(s.events));
  s.abort();
  assert.equal(seen.length, 80, `80 events, got ${seen.length}`);
  assert.equal(new Set(seen).size, 80, 'no duplicate');
});

test('real events: a generation\'s event carries the same message its webhook gets; other scopes see nothing; the stream limit holds', async () => {
  const a = await account();
  const b = await account();
  const rcv = await startReceiver();
  await api(srv.base, a.key, '/webhooks', { body: { url: rcv.url } });
  const sa = await open(a.key);
  const sb = await open(b.key);
  const gen = await api(srv.base, a.key, '/generations', { body: { type: 'code', model: 'local/coder', prompt: 'hi' } });
  const ev = await sa.until((e) => e.event === 'generation.completed');
  const [d] = await rcv.wait(1);
  assert.equal(ev.data, d!.body);
  assert.equal(JSON.parse(ev.data).data.id, gen.body.id);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(sb.events.length, 0);

  const more = [await open(a.key), await open(a.key)];
  const over = await open(a.key);
  assert.equal(over.status, 429);
  assert.equal(over.body.error.type, 'rate_limited');
  for (const s of [sa, sb, ...more]) s.abort();
  assert.equal((await openSse(`${srv.base}/events`, {})).status, 401);
});

test('a Last-Event-ID that is not one of ours (or out of range) starts from now', async () => {
  const a = await account();
  await emitBefore(a.id, 0);
  for (const last of ['garbage', '18446744073709551616-1', '1-9223372036854775808', '-1-1']) {
    // The previous round's event is from before this stream too.
    const [{ tx }] = await srv.db.sql`select max(tx)::text as tx from kiln_private.events where scope_id = ${a.id}::uuid`;
    await horizonPast(tx);
    const s = await open(a.key, last);
    assert.equal(s.status, 200, last);
    await emit(a.id, 1);
    await s.until(() => s.events.length >= 1);
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(ns(s.events), [1], `${last}: only what happened after opening`);
    s.abort();
  }
});
