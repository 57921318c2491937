// Task workflow__check_deadline: a run's window check (kiln.expire_workflow_run). After the
// run's deadline, outputs never started fail the run, and outputs no job can finish any more
// are failed; while outputs are still in flight it schedules itself again. Not a generation:
// every output itself runs as generation__run.

import type { JobHelpers, Task } from 'graphile-worker';
import type { Context } from '../src/context.ts';
import { isUuid } from '../src/schemas.ts';
import { expireWorkflowRun } from '../src/db/sql/expire_workflow_run.ts';
import { countEnded } from '../src/telemetry/metrics.ts';

export default function workflowCheckDeadline(ctx: Context): Task {
  return async (payload: unknown, helpers: JobHelpers) => {
    const run = (payload as { run?: unknown } | null)?.run;
    if (!isUuid(run)) {
      helpers.logger.error('workflow__check_deadline: malformed payload; dropping the job');
      return;
    }
    const [row] = await expireWorkflowRun(ctx.sql, run, ctx.config.workerStaleSeconds);
    countEnded(row?.ended);
  };
}
