// kiln.get_workflow_run: a run's state and its settled results for its owner; null otherwise.

import type { Queryable } from '../pool.ts';

/** kiln.get_workflow_run's json. */
export interface WorkflowRunJson {
  id: string;
  workflowId: string;
  status: 'pending' | 'running' | 'completed' | 'failed';
  total: number;
  settled: number;
  error: string | null;
  createdAt: string;
  completedAt: string | null;
  /** The run this one retried, or null. */
  retryOf: string | null;
  /** Attribution (docs/api.md, "Attribution"); absent from events stored before it. */
  endUser?: string | null;
  metadata?: Record<string, string> | null;
  expired: boolean;
  results: WorkflowRunResultJson[];
}

/** One settled output of a run. */
export interface WorkflowRunResultJson {
  promptNodeId: string;
  outputNodeId: string;
  /** An output type of workflows/graph.ts (image, code, screen, design, video). */
  type: string;
  status: 'completed' | 'failed' | 'skipped';
  label?: string | null;
  /** A platform of workflows/graph.ts, on campaign outputs. */
  platform?: string | null;
  path?: string | null;
  mediaType?: string | null;
  code?: string | null;
  error?: string | null;
  costMicros?: number | string | null;
  /** The catalog entry that produced a completed output (absent before fallbacks existed). */
  model?: string | null;
  /** When retention removed a completed image output's bytes. */
  expiredAt?: string | null;
}

export function getWorkflowRun(sql: Queryable, accountId: string, workflowId: string, runId: string) {
  return sql<Array<{ r: WorkflowRunJson | null }>>`select kiln.get_workflow_run(${accountId}::uuid, ${workflowId}::uuid, ${runId}::uuid) as r`;
}
