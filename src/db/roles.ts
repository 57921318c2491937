// Who a connection is, in the terms of docs/operators.md's "Database roles": the owner of Kiln's
// schemas (who migrates), a member of kiln_app (the service's runtime role), or a superuser.

import type { Queryable } from './pool.ts';

export interface ConnectionRole {
  /** current_user. */
  name: string;
  superuser: boolean;
  /** A member of the role that owns schema kiln (it can change anything Kiln made); false before the first migration. */
  owner: boolean;
  /** Schema kiln exists (the database was migrated at least once). */
  migrated: boolean;
}

export async function connectionRole(sql: Queryable): Promise<ConnectionRole> {
  const [row] = await sql<Array<{ name: string; superuser: boolean; owner: boolean | null }>>`
    select current_user::text as name, r.rolsuper as superuser,
           (select pg_catalog.pg_has_role(current_user, n.nspowner, 'MEMBER') from pg_catalog.pg_namespace n where n.nspname = 'kiln') as owner
    from pg_catalog.pg_roles r where r.rolname = current_user`;
  return { name: row!.name, superuser: row!.superuser, owner: row!.owner === true, migrated: row!.owner !== null };
}

/**
 * The warning /readyz and the start-up log give when the service runs with more rights than it
 * needs: as a superuser (it bypasses every grant, the audit log's included) or as the owner of
 * Kiln's schemas. Null when it runs as it should (a kiln_app member).
 */
export function privilegeWarning(role: ConnectionRole, embedded: boolean): string | null {
  if (!role.superuser && !role.owner) return null;
  const what = role.superuser ? 'a superuser' : 'the owner of its schemas';
  if (embedded) {
    return `The service connects to the embedded database as ${what} (${role.name}): fine for development; in production run it as a member of kiln_app (docs/operators.md, "Database roles").`;
  }
  return `The service connects as ${what} (${role.name}): it could rewrite the audit log and change any table. Run it as a login role that is a member of kiln_app, and migrate with KILN_DATABASE_OWNER_URL (docs/operators.md, "Database roles").`;
}
