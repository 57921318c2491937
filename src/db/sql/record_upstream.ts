// kiln.record_upstream: the outcome of one upstream call (after the adapter's retries) for a
// catalog entry — resets it, or counts a failure and skips it once the threshold is reached.

import type { Queryable } from '../pool.ts';

export function recordUpstream(sql: Queryable, modelId: string, ok: boolean, error: string | null, threshold: number, skipSeconds: number) {
  return sql<Array<{ state: 'healthy' | 'failing' | 'skipped' }>>`
    select kiln.record_upstream(${modelId}, ${ok}, ${error}, ${threshold}::int, ${skipSeconds}::int) as state`;
}
