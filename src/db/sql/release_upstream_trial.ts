// kiln.release_upstream_trial: gives back a trial lease whose call ended without a verdict.

import type { Queryable } from '../pool.ts';

export function releaseUpstreamTrial(sql: Queryable, modelId: string) {
  return sql`select kiln.release_upstream_trial(${modelId})`;
}
