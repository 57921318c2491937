// The console session as a resource: who it is (GET /session) and the workspace it acts in (PUT
// /session/workspace), by the hash of its cookie (routes/session/_cookie.ts finds it).

import * as v from 'valibot';
import type { Context } from '../context.ts';
import { sessionInfo, switchSessionWorkspace, type SessionInfo } from '../db/sql/sessions.ts';
import { errors } from '../errors.ts';
import { parseWith, registerSchemas, Uuid } from '../schemas.ts';

const dateTime = v.pipe(v.string(), v.isoTimestamp());

export const Session = v.object({
  user: v.object({
    id: Uuid,
    email: v.string(),
    admin: v.pipe(v.boolean(), v.description('An admin (set by an operator, or by KILN_OIDC_ADMIN_GROUP at the last sign-in): the session has the `admin` scope.')),
  }),
  workspaceId: v.pipe(v.nullable(Uuid), v.description('The Team workspace the session acts in and bills; null = personal.')),
  workspaces: v.pipe(v.array(v.object({ id: Uuid, name: v.string(), role: v.picklist(['owner', 'admin', 'member']) })),
    v.description('The workspaces the user is a member of: what `PUT /session/workspace` accepts.')),
  expiresAt: v.pipe(dateTime, v.description('When the session ends unless used again (KILN_SESSION_IDLE after its last use, at most 7 days after sign-in).')),
});

export const SwitchWorkspaceRequest = v.object({
  workspaceId: v.pipe(v.nullable(Uuid), v.description('One of `workspaces[].id`, or null to act personally.')),
});

registerSchemas({ Session, SwitchWorkspaceRequest });

export async function sessionOf(ctx: Context, hash: Buffer): Promise<SessionInfo> {
  const [row] = await sessionInfo(ctx.sql, hash);
  // Authorized a moment ago, gone now (signed out or revoked in between).
  if (!row?.s) throw errors.unauthorized();
  return row.s;
}

export async function switchWorkspace(ctx: Context, hash: Buffer, input: unknown): Promise<SessionInfo> {
  const body = parseWith(SwitchWorkspaceRequest, input);
  const [row] = await switchSessionWorkspace(ctx.sql, hash, body.workspaceId?.toLowerCase() ?? null);
  if (!row!.ok) throw errors.unauthorized();
  return sessionOf(ctx, hash);
}
