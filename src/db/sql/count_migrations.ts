// graphile-migrate's own record: how many committed migrations this database has applied.

import type { Queryable } from '../pool.ts';

export function countMigrations(sql: Queryable) {
  return sql<Array<{ n: number }>>`select count(*)::int as n from graphile_migrate.migrations`;
}
