// The graphile-worker task list: file name = task identifier. Tasks are built per context so
// they share the process's database pool, config and shutdown signal.

import type { TaskList } from 'graphile-worker';
import type { Context } from '../src/context.ts';
import type { Lease } from '../src/worker.ts';
import generationRun from './generation__run.ts';
import workflowRunNode from './workflow__run_node.ts';

export function createTaskList(ctx: Context, lease: Lease): TaskList {
  return {
    generation__run: generationRun(ctx, lease),
    workflow__run_node: workflowRunNode(ctx, lease),
  };
}
