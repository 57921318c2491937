// graphile-migrate's own record: how many committed migrations this database has applied.

import type { Queryable } from '../pool.ts';

export function countMigrations(sql: Queryable) {
  return sql<Array<{ n: number }>>`select count(*)::int as n from graphile_migrate.migrations`;
}

/** /readyz's one query: the migrations applied, and who the service connects as (src/db/roles.ts). */
export function readiness(sql: Queryable) {
  return sql<Array<{ n: number; name: string; superuser: boolean; owner: boolean | null }>>`
    select (select count(*)::int from graphile_migrate.migrations) as n, current_user::text as name, r.rolsuper as superuser,
           (select pg_catalog.pg_has_role(current_user, s.nspowner, 'MEMBER') from pg_catalog.pg_namespace s where s.nspname = 'kiln') as owner
    from pg_catalog.pg_roles r where r.rolname = current_user`;
}
