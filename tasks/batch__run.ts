// Task batch__run: runs a group of a batch's lines, then its next groups while it is their turn,
// for a few seconds (docs/api.md, "Lanes: interactive first, batches take turns"):
// src/generations/run.ts, runBatchLines. Queued by kiln_private.dispatch_batches with the flag
// `batch`, which a worker skips while its batch slots are full (src/worker/worker.ts). A line's
// retry is a generation__run job of its own; attempts and crashes are counted on each line.

import type { JobHelpers, Task } from 'graphile-worker';
import type { Context } from '../src/context.ts';
import type { Lease } from '../src/generations/lease.ts';
import { runBatchLines } from '../src/generations/run.ts';
import { isUuid } from '../src/schemas.ts';

export default function batchRun(ctx: Context, lease: Lease): Task {
  return async (payload: unknown, helpers: JobHelpers) => {
    const p = payload as { batch?: unknown; from?: unknown; to?: unknown } | null;
    const ok = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1;
    if (!isUuid(p?.batch) || !ok(p?.from) || !ok(p?.to) || p.to < p.from) {
      helpers.logger.error('batch__run: malformed payload; dropping the job');
      return;
    }
    const { job, abortSignal } = helpers;
    await runBatchLines(ctx, lease, { id: job.id, maxAttempts: job.max_attempts, signal: abortSignal, createdAt: job.created_at }, p.batch, p.from, p.to);
  };
}
