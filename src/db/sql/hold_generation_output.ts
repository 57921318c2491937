// kiln.hold_generation_output: the object store failed to take a generation's image — keep the
// provider's output (first time) and retry the store after a backoff, or say the grace is over
// (docs/storage.md, "When the store is down"). Lease holder only.

import type postgres from 'postgres';
import type { Queryable } from '../pool.ts';

export interface HoldArgs {
  id: string;
  workerId: string;
  jobId: string;
  /** Null when the output is already held (a retry of the store alone). */
  data: Buffer | null;
  result: unknown;
  format: string | null;
  costMicros: number | null;
  providerRequestId: string | null;
  modelId: string | null;
  error: string;
  graceSeconds: number;
}

export type HoldOutcome =
  | { outcome: 'held'; since: string; failures: number; retry_seconds: number }
  | { outcome: 'expired'; since: string; failures: number }
  | { outcome: 'lost' };

export function holdGenerationOutput(sql: Queryable, a: HoldArgs) {
  return sql<Array<{ h: HoldOutcome }>>`
    select kiln.hold_generation_output(${a.id}::uuid, ${a.workerId}, ${a.jobId}::bigint, ${a.data}::bytea,
      ${a.result === null ? null : sql.json(a.result as postgres.JSONValue)}::jsonb, ${a.format}, ${a.costMicros}::bigint,
      ${a.providerRequestId}, ${a.modelId}, ${a.error}, ${a.graceSeconds}::int) as h`;
}
