// The store's sweep (task store__sweep): retention removes outputs older than KILN_RETENTION,
// and bucket bytes that no row references — a crash between a write and its commit, a key given
// up by a move — are deleted once their note is older than the grace period.

import type { Config } from '../config.ts';
import { claimOrphanObjects } from '../db/sql/claim_orphan_objects.ts';
import { expireObjects } from '../db/sql/expire_objects.ts';
import { forgetObjectIntents } from '../db/sql/forget_object_intents.ts';
import { bucketOf, type StoreContext } from './store.ts';

/** Rows or keys handled per statement; a backlog drains over several rounds of one sweep. */
const BATCH = 500;
/** Rounds per sweep at most, so one sweep never runs for long. */
const ROUNDS = 20;

/** Whether this configuration needs the sweep at all. */
export function sweepNeeded(config: Config): boolean {
  return config.store.retentionSeconds !== undefined || config.store.s3 !== undefined;
}

/** Removes outputs past retention; returns how many. Their bucket keys are deleted at once. */
export async function expireOutputs(ctx: StoreContext): Promise<number> {
  const age = ctx.config.store.retentionSeconds;
  if (age === undefined) return 0;
  let total = 0;
  for (let round = 0; round < ROUNDS; round++) {
    // The rows go first (with notes for their keys), the bytes after: a crash in between
    // leaves notes for the orphan sweep, never a row without bytes.
    const gone = await expireObjects(ctx.sql, age, BATCH);
    total += gone.length;
    const keys = gone.map((g) => g.location).filter((l): l is string => l !== null);
    if (keys.length) {
      const bucket = await bucketOf(ctx.config);
      if (bucket) {
        await bucket.remove(keys);
        await forgetObjectIntents(ctx.sql, keys);
      }
    }
    if (gone.length < BATCH) break;
  }
  return total;
}

/** Deletes bucket bytes no row references, noted longer than the grace period ago; returns how many. */
export async function sweepOrphans(ctx: StoreContext, graceSeconds = ctx.config.store.orphanGraceSeconds): Promise<number> {
  const bucket = await bucketOf(ctx.config);
  if (!bucket) return 0;
  let total = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const claimed = (await claimOrphanObjects(ctx.sql, graceSeconds, BATCH)).map((r) => r.location);
    if (!claimed.length) break;
    await bucket.remove(claimed);
    await forgetObjectIntents(ctx.sql, claimed);
    total += claimed.length;
    if (claimed.length < BATCH) break;
  }
  return total;
}
