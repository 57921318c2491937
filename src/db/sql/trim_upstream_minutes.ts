// kiln_private.trim_upstream_minutes: drops per-minute upstream counts older than an hour.

import type { Queryable } from '../pool.ts';

export function trimUpstreamMinutes(sql: Queryable) {
  return sql`select kiln_private.trim_upstream_minutes()`;
}
