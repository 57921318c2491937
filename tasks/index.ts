// The graphile-worker task list: file name = task identifier. Tasks are built per context and
// lease so they share the process's database pool, config, shutdown signal and worker lease.
// TASK_IDENTIFIERS, read off the same table, labels the job gauges (src/telemetry/gauges.ts).

import type { Task, TaskList } from 'graphile-worker';
import type { Context } from '../src/context.ts';
import type { Lease } from '../src/generations/lease.ts';
import batchRun from './batch__run.ts';
import generationRun from './generation__run.ts';
import webhookDeliver from './webhook__deliver.ts';
import storeSweep from './store__sweep.ts';
import workflowCheckDeadline from './workflow__check_deadline.ts';

const TASKS: Record<string, (ctx: Context, lease: Lease) => Task> = {
  generation__run: generationRun,
  batch__run: batchRun,
  workflow__check_deadline: workflowCheckDeadline,
  webhook__deliver: webhookDeliver,
  store__sweep: storeSweep,
};

/** The task identifiers Kiln runs. */
export const TASK_IDENTIFIERS: readonly string[] = Object.keys(TASKS);

export function createTaskList(ctx: Context, lease: Lease): TaskList {
  return Object.fromEntries(Object.entries(TASKS).map(([id, make]) => [id, make(ctx, lease)]));
}
