// kiln.start_workflow_run: starts a run of an owned workflow — checks the caller can be charged,
// stores the snapshot and its planned outputs, queues the ready ones. Returns the run id.

import type postgres from 'postgres';
import type { Queryable } from '../pool.ts';

export interface StartWorkflowRunArgs {
  accountId: string;
  keyId: string | null;
  workspaceId: string | null;
  origin: string;
  workflowId: string;
  snapshot: unknown;
  outputs: unknown;
  windowSeconds: number;
  maxAttempts: number;
  /** The run's attribution (docs/api.md, "Attribution"); its outputs inherit it. */
  endUser?: string | null;
  metadata?: Record<string, string> | null;
}

export function startWorkflowRun(sql: Queryable, a: StartWorkflowRunArgs) {
  // Without attribution the call leaves the two parameters to their defaults (it then also reads
  // a database migrated before they existed: test/db.lifecycle_upgrade.test.ts).
  if (a.endUser == null && a.metadata == null) {
    return sql<Array<{ id: string }>>`
      select kiln.start_workflow_run(${a.accountId}::uuid, ${a.keyId}::uuid, ${a.workspaceId}::uuid, ${a.origin},
        ${a.workflowId}::uuid, ${sql.json(a.snapshot as postgres.JSONValue)}::jsonb, ${sql.json(a.outputs as postgres.JSONValue)}::jsonb,
        ${a.windowSeconds}::int, ${a.maxAttempts}::int) as id`;
  }
  return sql<Array<{ id: string }>>`
    select kiln.start_workflow_run(${a.accountId}::uuid, ${a.keyId}::uuid, ${a.workspaceId}::uuid, ${a.origin},
      ${a.workflowId}::uuid, ${sql.json(a.snapshot as postgres.JSONValue)}::jsonb, ${sql.json(a.outputs as postgres.JSONValue)}::jsonb,
      ${a.windowSeconds}::int, ${a.maxAttempts}::int,
      ${a.endUser ?? null}::text, ${a.metadata ? JSON.stringify(a.metadata) : null}::text::jsonb) as id`;
}
