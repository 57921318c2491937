// The console session as a resource: who it is (GET /session) and the workspace it acts in (PUT
// /session/workspace). Only a session cookie has one; an API key is answered 404.

import * as v from 'valibot';
import type { H3Event } from 'h3';
import type { Caller } from './access.ts';
import { hashKey, sessionSecret } from './keys.ts';
import type { Context } from '../context.ts';
import { sessionInfo, switchSessionWorkspace, type SessionInfo } from '../db/sql/sessions.ts';
import { ApiError, errors } from '../errors.ts';
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

/** The session cookie's hash of a request authorized as a session; 404 for an API key. */
function sessionHash(caller: Caller, event: H3Event): Buffer {
  const secret = caller.via === 'session' ? sessionSecret(event.req.headers.get('cookie')) : null;
  if (!secret) throw new ApiError('not_found', 'This request has no console session: it was made with an API key. Sessions come from the console\'s SSO sign-in.');
  return hashKey(secret);
}

export async function sessionOf(ctx: Context, caller: Caller, event: H3Event): Promise<SessionInfo> {
  const [row] = await sessionInfo(ctx.sql, sessionHash(caller, event));
  // Authorized a moment ago, gone now (signed out or revoked in between).
  if (!row?.s) throw errors.unauthorized();
  return row.s;
}

export async function switchWorkspace(ctx: Context, caller: Caller, event: H3Event, input: unknown): Promise<SessionInfo> {
  const hash = sessionHash(caller, event);
  const body = parseWith(SwitchWorkspaceRequest, input);
  const [row] = await switchSessionWorkspace(ctx.sql, hash, body.workspaceId?.toLowerCase() ?? null);
  if (!row!.ok) throw errors.unauthorized();
  return sessionOf(ctx, caller, event);
}
