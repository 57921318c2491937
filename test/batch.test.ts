// The micro-batcher behind every batched SQL call: batches form per event-loop turn, cap at
// `max`, never exceed `maxInFlight` outstanding runs, and every caller gets its own result.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Batcher, BatchWaitTimeout, byOrd } from '../src/batch.ts';

test('calls of one turn leave as one batch, split at max, results in order', async () => {
  const sizes: number[] = [];
  const b = new Batcher<number, number>(4, async (items) => {
    sizes.push(items.length);
    return items.map((i) => ({ ok: i * 10 }));
  });
  const out = await Promise.all(Array.from({ length: 10 }, (_, i) => b.add(i)));
  assert.deepEqual(out, Array.from({ length: 10 }, (_, i) => i * 10));
  assert.deepEqual(sizes, [4, 4, 2]);
  assert.deepEqual(b.stats, { batches: 3, items: 10 });
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

test('a failing run rejects its own callers only; per-item errors reach their caller', async () => {
  let call = 0;
  const b = new Batcher<number, number>(
    3,
    async (items) => {
      if (call++ === 0) throw new Error('boom');
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
    { maxInFlight: 2, timeoutMs: 60 },
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
  assert.ok(waited >= 55 && waited < 1000, `rejected at the timeout (${waited.toFixed(0)} ms)`);
  assert.deepEqual(sent, [[0, 1], [2]], 'the timed-out calls were never sent');
  assert.ok(timeLefts.every((t) => t > 0 && t <= 60), `each batch runs with what its oldest call has left (${timeLefts})`);
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
  assert.ok(timeLefts[1]! <= 700 && timeLefts[1]! > 0, `after ≥ 300 ms in the queue: ${timeLefts[1]}`);
});

test('byOrd places rows by their 1-based ord and fails items without a row', () => {
  const out = byOrd(3, [{ ord: 3, v: 'c' }, { ord: 1, v: 'a' }]);
  assert.deepEqual(out[0], { ok: { ord: 1, v: 'a' } });
  assert.ok('error' in out[1]!);
  assert.deepEqual(out[2], { ok: { ord: 3, v: 'c' } });
});
