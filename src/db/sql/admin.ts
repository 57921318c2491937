// kiln.admin_*, kiln.set_account_admin, kiln.roll_account_spend: the operator's view of the
// service (accounts by spend, workspaces, the whole catalog, health). Writes re-check the admin.

import type { Queryable } from '../pool.ts';
import type { AccountRow } from './create_account.ts';
import type { ModelRow } from './enabled_models.ts';

type Json = any;

export function adminListAccounts(sql: Queryable, limit: number, afterUsed: string | null, afterId: string | null, q: string | null) {
  return sql<Array<{ p: Json }>>`select kiln.admin_list_accounts(${limit}::int, ${afterUsed}::bigint, ${afterId}::uuid, ${q}::text) as p`;
}

export function adminGetAccount(sql: Queryable, id: string) {
  return sql<Array<{ a: Json | null }>>`select kiln.admin_get_account(${id}::uuid) as a`;
}

export function adminUpdateAccount(sql: Queryable, adminId: string, id: string, tier: string | null, budgetMicros: number | null, setBudget: boolean) {
  return sql<Array<{ a: Json }>>`select kiln.admin_update_account(${adminId}::uuid, ${id}::uuid, ${tier}::text, ${budgetMicros}::bigint, ${setBudget}::boolean) as a`;
}

export function adminRevokeAccountKeys(sql: Queryable, adminId: string, id: string) {
  return sql<Array<{ r: Json }>>`select kiln.admin_revoke_account_keys(${adminId}::uuid, ${id}::uuid) as r`;
}

export function adminListWorkspaces(sql: Queryable, limit: number, after: string | null, q: string | null) {
  return sql<Array<{ p: Json }>>`select kiln.admin_list_workspaces(${limit}::int, ${after}::uuid, ${q}::text) as p`;
}

export function adminGetWorkspace(sql: Queryable, id: string) {
  return sql<Array<{ w: Json | null }>>`select kiln.admin_get_workspace(${id}::uuid) as w`;
}

export function adminSetModelEnabled(sql: Queryable, adminId: string, id: string, enabled: boolean) {
  return sql<Array<ModelRow>>`select * from kiln.admin_set_model_enabled(${adminId}::uuid, ${id}::text, ${enabled}::boolean)`;
}

export function adminHealth(sql: Queryable) {
  return sql<Array<{ h: Json }>>`select kiln.admin_health() as h`;
}

export function setAccountAdmin(sql: Queryable, id: string, admin: boolean) {
  return sql<Array<AccountRow & { is_admin: boolean }>>`select * from kiln.set_account_admin(${id}::uuid, ${admin}::boolean)`;
}

/** Housekeeping: account_spend rows whose period ended without a charge, zeroed (up to `limit`). */
export function rollAccountSpend(sql: Queryable, limit = 1000) {
  return sql<Array<{ n: number }>>`select kiln.roll_account_spend(${limit}::int) as n`;
}
