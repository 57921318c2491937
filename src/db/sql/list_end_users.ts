// kiln.list_end_users_for_keys / _for_callers: GET /end-users — a keyset page of the end users of
// each caller's billing scope by spend over a range of UTC days.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';

export interface EndUserJson { endUser: string; usedMicros: number; generations: number }
export interface EndUsersPosition { used: number; endUser: string }
export interface EndUserPageJson { data: EndUserJson[]; next: EndUsersPosition | null }

export interface EndUsersArgs {
  from: string;
  to: string;
  limit: number;
  after: EndUsersPosition | null;
}

const cols = (sql: Queryable, q: EndUsersArgs[]) => [
  pgArray(sql, q.map((x) => x.from), ARRAY_OID.text), pgArray(sql, q.map((x) => x.to), ARRAY_OID.text),
  pgArray(sql, q.map((x) => x.limit), ARRAY_OID.int4), pgArray(sql, q.map((x) => (x.after ? String(x.after.used) : null)), ARRAY_OID.text),
  pgArray(sql, q.map((x) => x.after?.endUser ?? null), ARRAY_OID.text),
] as const;

export function listEndUsersForKeys(sql: Queryable, keyHashes: Uint8Array[], readRpm: number, q: EndUsersArgs[]) {
  const [froms, tos, limits, useds, endUsers] = cols(sql, q);
  return sql<Array<AuthColumns & { body: EndUserPageJson | null }>>`select * from kiln.list_end_users_for_keys(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int, ${froms}::date[], ${tos}::date[], ${limits}::int[],
    ${useds}::bigint[], ${endUsers}::text[])`;
}

export function listEndUsersForCallers(sql: Queryable, accountIds: string[], workspaceIds: Array<string | null>, q: EndUsersArgs[]) {
  const [froms, tos, limits, useds, endUsers] = cols(sql, q);
  return sql<Array<{ ord: number; body: EndUserPageJson | null }>>`select * from kiln.list_end_users_for_callers(
    ${pgArray(sql, accountIds, ARRAY_OID.uuid)}, ${pgArray(sql, workspaceIds, ARRAY_OID.uuid)}, ${froms}::date[], ${tos}::date[],
    ${limits}::int[], ${useds}::bigint[], ${endUsers}::text[])`;
}
