// kiln.claim_upstream: whether a catalog entry's upstream may be called now — `use`, `skip`
// (skipped after repeated failures, or another worker's trial call is in flight) or `trial`.

import type { Queryable } from '../pool.ts';

export type UpstreamVerdict = 'use' | 'skip' | 'trial';

export function claimUpstream(sql: Queryable, modelId: string, trialSeconds: number) {
  return sql<Array<{ verdict: UpstreamVerdict }>>`select kiln.claim_upstream(${modelId}, ${trialSeconds}::int) as verdict`;
}
