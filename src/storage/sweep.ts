// The store's sweep (task store__sweep): retention removes outputs older than KILN_RETENTION,
// and bucket bytes that no row references — a crash between a write and its commit, a key given
// up by a move — are deleted once their note is older than the grace period. While the bucket
// does not answer both pause (docs/storage.md, "When the store is down"): nothing is expired, no
// note is claimed, and a note is forgotten only once its bytes are confirmed deleted.

import type { Config } from '../config.ts';
import { claimOrphanObjects } from '../db/sql/claim_orphan_objects.ts';
import { expireObjects } from '../db/sql/expire_objects.ts';
import { forgetObjectIntents } from '../db/sql/forget_object_intents.ts';
import { isStoreError } from './health.ts';
import type { Bucket } from './s3.ts';
import { bucketOf, type StoreContext } from './store.ts';

/** Rows or keys handled per statement; a backlog drains over several rounds of one sweep. */
const BATCH = 500;
/** Rounds per sweep at most, so one sweep never runs for long. */
const ROUNDS = 20;

/** Whether this configuration needs the sweep at all. */
export function sweepNeeded(config: Config): boolean {
  return config.store.retentionSeconds !== undefined || config.store.s3 !== undefined;
}

/** Thrown (and caught by the task) when the bucket stops answering: the sweep pauses until its next run. */
export class SweepPaused extends Error {}

/** Whether the bucket (if any) answers now, asked afresh; a sweep round starts nothing while it does not. */
async function storeUp(bucket: Bucket | null): Promise<boolean> {
  return !bucket || (await bucket.health.check(0)).up;
}

/**
 * Deletes keys one by one; the notes of those deleted are forgotten, whatever happens next. A
 * store that stops answering pauses the sweep (SweepPaused): the other notes stay, for later.
 */
async function removeKeys(ctx: StoreContext, bucket: Bucket, keys: string[]): Promise<void> {
  const removed: string[] = [];
  try {
    for (const key of keys) {
      await bucket.remove([key]);
      removed.push(key);
    }
  } catch (e) {
    if (isStoreError(e)) throw new SweepPaused(e.message, { cause: e });
    throw e;
  } finally {
    if (removed.length) await forgetObjectIntents(ctx.sql, removed);
  }
}

/** Removes outputs past retention; returns how many. Their bucket keys are deleted at once. Throws SweepPaused while the bucket does not answer. */
export async function expireOutputs(ctx: StoreContext): Promise<number> {
  const age = ctx.config.store.retentionSeconds;
  if (age === undefined) return 0;
  const bucket = await bucketOf(ctx.config);
  let total = 0;
  for (let round = 0; round < ROUNDS; round++) {
    if (!(await storeUp(bucket))) throw new SweepPaused('the image store does not answer');
    // The rows go first (with notes for their keys), the bytes after: a crash or an outage in
    // between leaves notes for the orphan sweep, never a row without bytes.
    const gone = await expireObjects(ctx.sql, age, BATCH);
    total += gone.length;
    const keys = gone.map((g) => g.location).filter((l): l is string => l !== null);
    if (keys.length && bucket) await removeKeys(ctx, bucket, keys);
    if (gone.length < BATCH) break;
  }
  return total;
}

/** Deletes bucket bytes no row references, noted longer than the grace period ago; returns how many. Throws SweepPaused while the bucket does not answer. */
export async function sweepOrphans(ctx: StoreContext, graceSeconds = ctx.config.store.orphanGraceSeconds): Promise<number> {
  const bucket = await bucketOf(ctx.config);
  if (!bucket) return 0;
  let total = 0;
  for (let round = 0; round < ROUNDS; round++) {
    // Nothing is claimed while the store is down: a claim would hold its note for another grace period.
    if (!(await storeUp(bucket))) throw new SweepPaused('the image store does not answer');
    const claimed = (await claimOrphanObjects(ctx.sql, graceSeconds, BATCH)).map((r) => r.location);
    if (!claimed.length) break;
    await removeKeys(ctx, bucket, claimed);
    total += claimed.length;
    if (claimed.length < BATCH) break;
  }
  return total;
}
