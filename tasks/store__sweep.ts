// Task store__sweep: retention and the orphan sweep of the image store (src/storage/sweep.ts).
// graphile-worker's cron queues it every minute (src/worker/worker.ts); with
// KILN_RETENTION_SWEEP_SECONDS under 60 each run also queues the next one that much later.
// One job key, so however many workers run there is one sweep at a time.

import type { JobHelpers, Task } from 'graphile-worker';
import type { Context } from '../src/context.ts';
import { expireOutputs, sweepOrphans } from '../src/storage/sweep.ts';

export const SWEEP_JOB_KEY = 'kiln:store-sweep';

export default function storeSweep(ctx: Context): Task {
  return async (_payload: unknown, helpers: JobHelpers) => {
    try {
      const expired = await expireOutputs(ctx);
      const orphans = await sweepOrphans(ctx);
      if (expired || orphans) ctx.log.info('store sweep', { expired, orphans });
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
