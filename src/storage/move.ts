// `kiln store migrate`: moves every object's bytes to the other backend, object by object —
// copy, check size and SHA-256 (reading the copy back from the bucket), then switch the row
// (kiln.switch_object). Safe to stop at any point and to run again: what is already on the
// target is never listed, a copy made before a stop is noted for the sweep, and a reader finds
// each object wherever its row points at that moment. While the bucket does not answer the move
// pauses on the object in hand and goes on once it does (docs/storage.md, "When the store is down").

import type { Backend, StoreContext } from './store.ts';
import { bucketOf, sha256 } from './store.ts';
import { isStoreError } from './health.ts';
import type { Bucket } from './s3.ts';
import { countObjectsByBackend } from '../db/sql/count_objects_by_backend.ts';
import { listObjectsToMove, type ObjectToMove } from '../db/sql/list_objects_to_move.ts';
import { noteObjectIntent } from '../db/sql/note_object_intent.ts';
import { readObjectBytes } from '../db/sql/read_object_bytes.ts';
import { switchObject } from '../db/sql/switch_object.ts';

export interface MoveProgress {
  /** Objects switched to the target by this run. */
  moved: number;
  /** Objects that were not on the target when this run started (new ones may add to it). */
  total: number;
  /** Bytes switched by this run. */
  bytes: number;
  /** Objects gone or moved by someone else before their switch (retention, a second run). */
  skipped: number;
}

export interface MoveResult extends MoveProgress {
  to: Backend;
  /** The run was stopped (signal) before the end; run it again to go on. */
  stopped: boolean;
  /** Objects now left on the other backend. */
  remaining: number;
}

const PAGE = 100;
/** Full passes at most: objects written to the old backend during a pass are picked up by the next. */
const PASSES = 3;

class MoveError extends Error {}

async function remainingOff(ctx: StoreContext, to: Backend): Promise<number> {
  const rows = await countObjectsByBackend(ctx.sql);
  return rows.filter((r) => r.backend !== to).reduce((n, r) => n + Number(r.objects), 0);
}

/** Copies one object to `to`, verifies the copy and switches its row; false when it went away meanwhile. */
async function moveOne(ctx: StoreContext, to: Backend, o: ObjectToMove): Promise<boolean> {
  const bucket = await bucketOf(ctx.config);
  if (!bucket) throw new MoveError('KILN_S3_BUCKET is not set: both sides of the move must be reachable');
  let data: Buffer | null;
  if (o.backend === 'postgres') data = (await readObjectBytes(ctx.sql, o.path))[0]?.data ?? null;
  else data = await bucket.read(o.location!);
  if (!data) return false; // moved or expired since it was listed (a row's bytes are never missing)
  const hash = sha256(data);
  if (data.byteLength !== o.byte_size || (o.sha256 && !hash.equals(o.sha256))) {
    throw new MoveError(`the stored bytes of ${o.path} do not match its row (size or SHA-256); not moved`);
  }
  if (to === 's3') {
    const key = bucket.keyFor(o.path);
    await noteObjectIntent(ctx.sql, key);
    await bucket.write(key, data, o.content_type);
    const copy = await bucket.read(key);
    if (!copy || copy.byteLength !== data.byteLength || !sha256(copy).equals(hash)) {
      throw new MoveError(`the copy of ${o.path} in the bucket does not match (size or SHA-256); not switched`);
    }
    return (await switchObject(ctx.sql, o.path, null, null, key, hash))[0]!.switched;
  }
  // Into Postgres: kiln.switch_object checks the size and SHA-256 of the bytes it stores.
  return (await switchObject(ctx.sql, o.path, o.location, data, null, hash))[0]!.switched;
}

/** Waits until the bucket answers again (backing off 0.5 s … 30 s between checks) or the signal stops the move. */
async function untilStoreAnswers(bucket: Bucket, signal: AbortSignal | undefined): Promise<void> {
  for (let n = 0; !signal?.aborted; n++) {
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(30_000, 500 * 2 ** Math.min(n, 10)));
      signal?.addEventListener('abort', done, { once: true });
    });
    if (signal?.aborted || (await bucket.health.check(0)).up) return;
  }
}

/** Moves one object, pausing while the bucket does not answer; null when stopped during a pause. */
async function moveOneThroughOutages(
  ctx: StoreContext,
  to: Backend,
  o: ObjectToMove,
  opts: { signal?: AbortSignal; onPause?: (reason: string) => void; onResume?: (pausedSeconds: number) => void },
): Promise<boolean | null> {
  let pausedAt: number | null = null;
  for (;;) {
    try {
      const moved = await moveOne(ctx, to, o);
      if (pausedAt !== null) opts.onResume?.((Date.now() - pausedAt) / 1000);
      return moved;
    } catch (e) {
      // Nothing was switched: the row still points at bytes that were read and checked, and a copy
      // that may have landed is noted for the sweep. Wait for the store, then try this object again.
      if (!isStoreError(e)) throw e;
      if (pausedAt === null) {
        pausedAt = Date.now();
        opts.onPause?.(e.message);
      }
      await untilStoreAnswers((await bucketOf(ctx.config))!, opts.signal);
      if (opts.signal?.aborted) return null;
    }
  }
}

export async function moveObjects(
  ctx: StoreContext,
  to: Backend,
  opts: { signal?: AbortSignal; onProgress?: (p: MoveProgress) => void; onPause?: (reason: string) => void; onResume?: (pausedSeconds: number) => void } = {},
): Promise<MoveResult> {
  const p: MoveProgress = { moved: 0, total: await remainingOff(ctx, to), bytes: 0, skipped: 0 };
  let stopped = false;
  for (let pass = 0; pass < PASSES && !stopped; pass++) {
    const before = p.moved;
    let after: string | null = null;
    for (;;) {
      const page = await listObjectsToMove(ctx.sql, to, after, PAGE);
      for (const o of page) {
        if (opts.signal?.aborted) {
          stopped = true;
          break;
        }
        const moved = await moveOneThroughOutages(ctx, to, o, opts);
        if (moved === null) {
          stopped = true;
          break;
        }
        if (moved) {
          p.moved++;
          p.bytes += o.byte_size;
        } else {
          p.skipped++;
        }
        opts.onProgress?.({ ...p, total: Math.max(p.total, p.moved + p.skipped) });
      }
      if (stopped || page.length < PAGE) break;
      after = page[page.length - 1]!.path;
    }
    if (p.moved === before) break;
  }
  return { to, ...p, total: Math.max(p.total, p.moved + p.skipped), stopped, remaining: await remainingOff(ctx, to) };
}
