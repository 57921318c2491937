// kiln.list_audit and kiln.purge_audit_log: reading a billing scope's audit entries, and the
// retention purge (the one delete the append-only trigger allows).

import type { Queryable } from '../pool.ts';

/** An entry as kiln_private.audit_json renders it. */
export interface AuditEntryJson {
  id: string;
  at: string;
  actor: { type: 'key' | 'session' | 'operator' | 'identity'; id: string | null };
  action: string;
  target: { type: string; id: string | null };
  ip: string | null;
  requestId: string | null;
  details: Record<string, unknown>;
}

export function listAudit(sql: Queryable, scopeId: string | null, limit: number, before: string | null, action: string | null) {
  return sql<Array<{ a: { data: AuditEntryJson[]; nextCursor: string | null } }>>`select kiln.list_audit(${scopeId}::uuid, ${limit}::int,
    ${before}::uuid, ${action}::text) as a`;
}

export function purgeAuditLog(sql: Queryable, before: Date, limit = 10_000) {
  return sql<Array<{ n: number }>>`select kiln.purge_audit_log(${before}::timestamptz, ${limit}::int) as n`;
}
