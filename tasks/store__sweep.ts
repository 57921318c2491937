// Task store__sweep: retention and the orphan sweep of the image store (src/storage/sweep.ts).
// graphile-worker's cron queues it every minute (storeSweepCron, below); with
// KILN_RETENTION_SWEEP_SECONDS under 60 each run also queues the next one that much later.
// One job key, so however many workers run there is one sweep at a time. While the object store
// does not answer the sweep pauses, and the next run goes on (docs/storage.md, "When the store is down").

import { parseCronItems, type JobHelpers, type ParsedCronItem, type Runner, type Task } from 'graphile-worker';
import type { Config } from '../src/config.ts';
import type { Context } from '../src/context.ts';
import { expireOutputs, SweepPaused, sweepNeeded, sweepOrphans } from '../src/storage/sweep.ts';

const SWEEP_JOB_KEY = 'kiln:store-sweep';

/**
 * The sweep's cron item, when this configuration needs a sweep at all: every minute
 * (graphile-worker's cron runs an item once per minute across all workers); shorter intervals
 * reschedule themselves.
 */
export function storeSweepCron(config: Config): ParsedCronItem[] {
  return sweepNeeded(config) ? parseCronItems([{
    task: 'store__sweep', match: '* * * * *', identifier: 'kiln_store_sweep',
    options: { backfillPeriod: 0, maxAttempts: 1, jobKey: SWEEP_JOB_KEY, jobKeyMode: 'preserve_run_at' },
  }]) : [];
}

/** Sub-minute sweeps start when the runner does rather than at the next cron minute. */
export async function startStoreSweep(config: Config, runner: Pick<Runner, 'addJob'>): Promise<void> {
  if (sweepNeeded(config) && config.store.sweepSeconds < 60) {
    await runner.addJob('store__sweep', {}, { jobKey: SWEEP_JOB_KEY, jobKeyMode: 'preserve_run_at', maxAttempts: 1 });
  }
}

export default function storeSweep(ctx: Context): Task {
  return async (_payload: unknown, helpers: JobHelpers) => {
    try {
      const expired = await expireOutputs(ctx);
      const orphans = await sweepOrphans(ctx);
      if (expired || orphans) ctx.log.info('store sweep', { expired, orphans });
    } catch (e) {
      if (!(e instanceof SweepPaused)) throw e;
      ctx.log.warn('store sweep paused: the image store does not answer; the next sweep goes on', { reason: e.message });
    } finally {
      const every = ctx.config.store.sweepSeconds;
      if (every < 60 && !ctx.shutdown.aborted) {
        await helpers.addJob('store__sweep', {}, {
          jobKey: SWEEP_JOB_KEY, jobKeyMode: 'preserve_run_at', runAt: new Date(Date.now() + every * 1000), maxAttempts: 1,
        });
      }
    }
  };
}
