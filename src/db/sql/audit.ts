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

export function purgeAuditLog(sql: Queryable, limit = 10_000) {
  return sql<Array<{ n: number }>>`select kiln.purge_audit_log(${limit}::int) as n`;
}

/** The operator's `kiln audit`: kiln.audit_log, newest first, of one scope or of everything. */
export function listAuditLog(sql: Queryable, scopeId: string | null, limit: number, before: string | null, action: string | null) {
  return sql<Array<{ id: string; at: Date; scope_id: string | null; actor_type: string; actor_id: string | null; action: string; target_type: string; target_id: string | null; ip: string | null; request_id: string | null; details: unknown }>>`
    select id, at, scope_id, actor_type, actor_id, action, target_type, target_id, host(ip) as ip, request_id, details
    from kiln.audit_log
    where (${scopeId}::uuid is null or scope_id = ${scopeId}::uuid)
      and (${before}::uuid is null or id < ${before}::uuid)
      and (${action}::text is null or action = ${action}::text)
    order by id desc
    limit ${limit}::int`;
}
