// Task generation__run: executes one generation, whatever made it (REST, MCP, a workflow run):
// src/generations/run.ts. A retry is a new job; attempts and crashes are counted on the
// generation, not on the job (see there).

import type { JobHelpers, Task } from 'graphile-worker';
import type { Context } from '../src/context.ts';
import type { Lease } from '../src/generations/lease.ts';
import { runGeneration } from '../src/generations/run.ts';
import { isUuid } from '../src/schemas.ts';

export default function generationRun(ctx: Context, lease: Lease): Task {
  return async (payload: unknown, helpers: JobHelpers) => {
    const id = (payload as { id?: unknown } | null)?.id;
    if (!isUuid(id)) {
      helpers.logger.error('generation__run: malformed payload; dropping the job');
      return;
    }
    const { job, abortSignal } = helpers;
    await runGeneration(ctx, lease, { id: job.id, maxAttempts: job.max_attempts, signal: abortSignal, createdAt: job.created_at }, id);
  };
}
