// kiln.claim_sign_in, kiln.sign_in, kiln.create_session, kiln.end_session, kiln.session_info,
// kiln.switch_session_workspace: console sessions made by an SSO sign-in. Only hashes are stored.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';

/** What kiln.session_info renders: who a live session is and where it acts. */
export interface SessionInfo {
  user: { id: string; email: string; admin: boolean };
  workspaceId: string | null;
  workspaces: Array<{ id: string; name: string; role: string }>;
  expiresAt: string;
}

export function claimSignIn(sql: Queryable, stateHash: Buffer, expiresAt: Date) {
  return sql<Array<{ ok: boolean }>>`select kiln.claim_sign_in(${stateHash}::bytea, ${expiresAt.toISOString()}::timestamptz) as ok`;
}

export function signIn(sql: Queryable, issuer: string, subject: string, email: string | null, emailVerified: boolean,
  allowedDomains: string[], adminByGroup: boolean | null) {
  return sql<Array<{ account_id: string | null; outcome: 'linked' | 'provisioned' | 'refused' | 'email_in_use' }>>`
    select * from kiln.sign_in(${issuer}::text, ${subject}::text, ${email}::text, ${emailVerified}::boolean,
      ${pgArray(sql, allowedDomains, ARRAY_OID.text)}, ${adminByGroup}::boolean)`;
}

export function createSession(sql: Queryable, accountId: string, hash: Buffer, prefix: string, idleSeconds: number, lifetimeSeconds: number, name: string) {
  return sql<Array<{ id: string }>>`select kiln.create_session(${accountId}::uuid, ${hash}::bytea, ${prefix}::text,
    ${idleSeconds}::int, ${lifetimeSeconds}::int, ${name}::text) as id`;
}

export function endSession(sql: Queryable, hash: Buffer) {
  return sql<Array<{ ended: boolean }>>`select kiln.end_session(${hash}::bytea) as ended`;
}

export function sessionInfo(sql: Queryable, hash: Buffer) {
  return sql<Array<{ s: SessionInfo | null }>>`select kiln.session_info(${hash}::bytea) as s`;
}

export function switchSessionWorkspace(sql: Queryable, hash: Buffer, workspaceId: string | null) {
  return sql<Array<{ ok: boolean }>>`select kiln.switch_session_workspace(${hash}::bytea, ${workspaceId}::uuid) as ok`;
}
