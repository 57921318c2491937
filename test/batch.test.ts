// The micro-batcher behind every batched SQL call: batches form per event-loop turn, cap at
// `max`, never exceed `maxInFlight` outstanding runs, and every caller gets its own result.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Batcher, BatchWaitTimeout, byOrd } from '../src/db/batch.ts';
import { isUnavailable } from '../src/errors.ts';

test('calls of one turn leave as one batch, split at max, results in order', async () => {
  const sizes: number[] = [];
  const b = new Batcher<number, number>(4, async (items) => {
    sizes.push(items.length);
    return items.map((i) => ({ ok: i * 10 }));
  });
  const out = await Promise.all(Array.from({ length: 10 }, (_, i) => b.add(i)));
  assert.deepEqual(out, Array.from({ length: 10 }, (_, i) => i * 10));
  assert.deepEqual(sizes, [4, 4, 2]);
  assert.deepEqual(b.stats, { batches: 3, items: 10, splits: 0 });
});

test('maxInFlight bounds outstanding runs; what queues meanwhile leaves together', async () => {
  let inFlight = 0;
  let peak = 0;
  const sizes: number[] = [];
  const b = new Batcher<number, number>(
    50,
    async (items) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      sizes.push(items.length);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return items.map((i) => ({ ok: i }));
    },
    { maxInFlight: 2 },
  );
  const all: Promise<number>[] = [];
  // 200 calls arriving over 40 turns, faster than batches return.
  for (let turn = 0; turn < 40; turn++) {
    for (let k = 0; k < 5; k++) all.push(b.add(turn * 5 + k));
    await new Promise((r) => setImmediate(r));
  }
  const out = await Promise.all(all);
  assert.deepEqual(out, Array.from({ length: 200 }, (_, i) => i), 'every caller gets its own result');
  assert.equal(peak, 2, 'never more than two runs outstanding');
  assert.equal(sizes.reduce((a, n) => a + n, 0), 200);
  assert.ok(Math.max(...sizes) > 5, `queued calls leave together (sizes ${sizes.join(',')})`);
});

test('a run failing for the database rejects its own callers only; per-item errors reach their caller', async () => {
  let call = 0;
  const b = new Batcher<number, number>(
    3,
    async (items) => {
      if (call++ === 0) throw Object.assign(new Error('connection closed'), { code: 'CONNECTION_CLOSED' });
      return items.map((i) => (i % 2 ? { error: new Error(`odd ${i}`) } : { ok: i }));
    },
    { maxInFlight: 1 },
  );
  const first = Promise.allSettled([b.add(1), b.add(2), b.add(3)]);
  const second = Promise.allSettled([b.add(4), b.add(5)]);
  const r1 = await first;
  const r2 = await second;
  assert.deepEqual(r1.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
  assert.equal(r2[0]!.status, 'fulfilled');
  assert.equal((r2[0] as PromiseFulfilledResult<number>).value, 4);
  assert.match(String((r2[1] as PromiseRejectedResult).reason), /odd 5/);
});

test('behind stalled slots, queued calls fail at their timeout without being sent; later calls still run', async () => {
  const sent: number[][] = [];
  const timeLefts: number[] = [];
  let release!: () => void;
  const stalled = new Promise<void>((r) => (release = r));
  const b = new Batcher<number, number>(
    100,
    async (items, timeLeftMs) => {
      sent.push(items);
      timeLefts.push(timeLeftMs);
      if (items[0]! < 10) await stalled; // the first two batches hang (a stalled database)
      return items.map((i) => ({ ok: i }));
    },
    // 500 ms, not 60: a machine stalled past the timeout between add(2) and its flush expired
    // call 2 before it was sent (rightly), and the test saw that as a failure.
    { maxInFlight: 2, timeoutMs: 500 },
  );
  const first = [b.add(0), b.add(1)];
  await new Promise((r) => setImmediate(r));
  const second = b.add(2);
  await new Promise((r) => setImmediate(r));
  const t0 = performance.now();
  const queued = await Promise.allSettled([b.add(3), b.add(4)]);
  const waited = performance.now() - t0;
  assert.deepEqual(queued.map((r) => r.status), ['rejected', 'rejected']);
  assert.ok((queued[0] as PromiseRejectedResult).reason instanceof BatchWaitTimeout);
  assert.ok(waited >= 495 && waited < 5000, `rejected at the timeout (${waited.toFixed(0)} ms)`);
  assert.deepEqual(sent, [[0, 1], [2]], 'the timed-out calls were never sent');
  assert.ok(timeLefts.every((t) => t > 0 && t <= 500), `each batch runs with what its oldest call has left (${timeLefts})`);
  release();
  assert.deepEqual(await Promise.all([...first, second]), [0, 1, 2]);
  assert.equal(await b.add(11), 11, 'the batcher keeps working once slots free up');
});

test('a call queued for part of its timeout is sent with only the rest of it', async () => {
  const timeLefts: number[] = [];
  let release!: () => void;
  const busy = new Promise<void>((r) => (release = r));
  const b = new Batcher<number, number>(
    10,
    async (items, timeLeftMs) => {
      timeLefts.push(timeLeftMs);
      if (items[0] === 0) await busy;
      return items.map((i) => ({ ok: i }));
    },
    { maxInFlight: 1, timeoutMs: 1000 },
  );
  const first = b.add(0);
  await new Promise((r) => setImmediate(r));
  const queued = b.add(1);
  await new Promise((r) => setTimeout(r, 300));
  release();
  assert.deepEqual(await Promise.all([first, queued]), [0, 1]);
  assert.ok(timeLefts[0]! > 850, `fresh batch: ${timeLefts[0]}`);
  // Node's timers have millisecond granularity: a 300 ms timer may fire a fraction of a
  // millisecond early by performance.now() (700.096 was seen), hence the 2 ms allowance.
  assert.ok(timeLefts[1]! <= 702 && timeLefts[1]! > 0, `after ≥ 300 ms in the queue: ${timeLefts[1]}`);
});

test('byOrd places rows by their 1-based ord and fails items without a row', () => {
  const out = byOrd(3, [{ ord: 3, v: 'c' }, { ord: 1, v: 'a' }]);
  assert.deepEqual(out[0], { ok: { ord: 1, v: 'a' } });
  assert.ok('error' in out[1]!);
  assert.deepEqual(out[2], { ok: { ord: 3, v: 'c' } });
});

/** A run like a set-based SQL call: the whole call fails when any item is poison (22P05). */
function poisonable(calls: number[][], opts: { delayMs?: number } = {}) {
  return async (items: number[]) => {
    calls.push(items);
    if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
    if (items.some((i) => i < 0)) throw Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' });
    return items.map((i) => ({ ok: i * 10 }));
  };
}

test('a batch failing because of one item is run again per item: only the offender fails, with its own error', async () => {
  const calls: number[][] = [];
  const b = new Batcher<number, number>(10, poisonable(calls), { maxInFlight: 2 });
  const out = await Promise.allSettled([b.add(1), b.add(-1), b.add(2), b.add(3), b.add(-2)]);
  assert.deepEqual(out.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as any).code)), [10, '22P05', 20, 30, '22P05']);
  assert.deepEqual(calls[0], [1, -1, 2, 3, -2], 'first as one batch');
  assert.deepEqual(calls.slice(1).map((c) => c.length), [1, 1, 1, 1, 1], 'then each item alone');
  assert.deepEqual(calls.slice(1).flat().sort(), [-1, -2, 1, 2, 3]);
  assert.equal(b.stats.splits, 1);
  // A lone failing call is not run twice.
  calls.length = 0;
  await assert.rejects(b.add(-3), (e: any) => e.code === '22P05');
  assert.deepEqual(calls, [[-3]]);
});

for (const [what, error] of [
  ['a timeout (KILN_TIMEOUT)', Object.assign(new Error('timed out'), { code: 'KILN_TIMEOUT' })],
  ['a wait timeout', new BatchWaitTimeout(10)],
  ['a cancelled statement (57014)', Object.assign(new Error('canceling statement'), { code: '57014' })],
  ['a terminated connection (57P01)', Object.assign(new Error('terminating connection'), { code: '57P01' })],
  ['a refused connection (ECONNREFUSED)', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })],
  ['a lost connection (CONNECTION_CLOSED)', Object.assign(new Error('closed'), { code: 'CONNECTION_CLOSED' })],
  ['a connection exception (08006)', Object.assign(new Error('connection failure'), { code: '08006' })],
] as const) {
  test(`${what} fails the whole batch at once, without running items again`, async () => {
    assert.ok(isUnavailable(error));
    let calls = 0;
    const b = new Batcher<number, number>(10, async () => {
      calls++;
      throw error;
    });
    const out = await Promise.allSettled([b.add(1), b.add(2), b.add(3)]);
    assert.deepEqual(out.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
    assert.ok(out.every((r) => (r as PromiseRejectedResult).reason === error));
    assert.equal(calls, 1, 'no per-item retry: the limiter fails closed');
    assert.equal(b.stats.splits, 0);
  });
}

test('a per-item retry that is itself unavailable fails that item closed; items past their deadline are not run again', async () => {
  const calls: number[][] = [];
  const b = new Batcher<number, number>(
    10,
    async (items, timeLeftMs) => {
      calls.push(items);
      if (items.length > 1) {
        // The batch uses up most of the time before failing on a bad value.
        await new Promise((r) => setTimeout(r, 1000));
        throw Object.assign(new Error('bad'), { code: '22021' });
      }
      assert.ok(timeLeftMs > 0 && timeLeftMs <= 1600 - 1000, `each retry gets only its call's time left (${timeLeftMs})`);
      await new Promise((r) => setTimeout(r, 800)); // the retries outlast the deadline
      if (items[0] === 2) throw Object.assign(new Error('closed'), { code: 'CONNECTION_CLOSED' });
      return items.map((i) => ({ ok: i }));
    },
    // Wide margins (600 ms between the batch's failure and the deadline): with 250 of 400 ms a
    // loaded machine's late timers timed every item out.
    { timeoutMs: 1600 },
  );
  const out = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => b.add(i)));
  const got = out.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as any).code));
  // Four lanes: items 0–3 run again at once (2's connection fails); 4–7 would start past the deadline.
  assert.deepEqual(got, [0, 1, 'CONNECTION_CLOSED', 3, 'KILN_TIMEOUT', 'KILN_TIMEOUT', 'KILN_TIMEOUT', 'KILN_TIMEOUT']);
  assert.ok(out.slice(4).every((r) => (r as PromiseRejectedResult).reason instanceof BatchWaitTimeout));
  assert.deepEqual(calls.slice(1).flat().sort(), [0, 1, 2, 3], 'items past their deadline were not sent');
});

test('while a failed batch is retried per item, its slot stays taken', async () => {
  const calls: number[][] = [];
  let inFlight = 0;
  let peak = 0;
  const run = poisonable(calls, { delayMs: 5 });
  const b = new Batcher<number, number>(
    4,
    async (items) => {
      peak = Math.max(peak, ++inFlight);
      try {
        return await run(items);
      } finally {
        inFlight--;
      }
    },
    { maxInFlight: 1 },
  );
  const out = await Promise.allSettled([1, -1, 2, 3, 4, 5].map((i) => b.add(i)));
  assert.deepEqual(out.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
  assert.equal(peak, 4, 'the four retries of the failed batch run in its one slot; the next batch waits');
  assert.deepEqual(calls.at(-1), [4, 5], 'the next batch left after the retries');
});
