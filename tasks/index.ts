// The graphile-worker task list: file name = task identifier. Tasks are built per context and
// lease so they share the process's database pool, config, shutdown signal and worker lease.

import type { TaskList } from 'graphile-worker';
import type { Context } from '../src/context.ts';
import type { Lease } from '../src/generations/lease.ts';
import generationRun from './generation__run.ts';
import webhookDeliver from './webhook__deliver.ts';
import workflowCheckDeadline from './workflow__check_deadline.ts';

export function createTaskList(ctx: Context, lease: Lease): TaskList {
  return {
    generation__run: generationRun(ctx, lease),
    workflow__check_deadline: workflowCheckDeadline(ctx),
    webhook__deliver: webhookDeliver(ctx),
  };
}
