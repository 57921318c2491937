// GET /me: who the request's credential is — its account, the scopes it carries, the workspace it
// bills and whether its user is an admin (docs/api.md, "Who am I").

import * as v from 'valibot';
import { KEY_SCOPES, type Caller } from './access.ts';
import type { Context } from '../context.ts';
import { getMe } from '../db/sql/get_me.ts';
import { errors } from '../errors.ts';
import { registerSchemas, Uuid } from '../schemas.ts';

export const Me = v.pipe(
  v.object({
    accountId: v.pipe(Uuid, v.description('The account (user) the credential belongs to.')),
    email: v.string(),
    credential: v.pipe(v.picklist(['key', 'session']), v.description('What authenticated the request: an API key, or a console session\'s cookie.')),
    scopes: v.pipe(v.array(v.picklist(KEY_SCOPES)), v.description('The scopes of that key or session, as they apply now: `admin` counts only while the user is an admin.')),
    workspaceId: v.pipe(v.nullable(Uuid), v.description('The Team workspace the credential acts in and bills (a workspace-bound key, or the session\'s workspace); null = the personal budget.')),
    admin: v.pipe(v.boolean(), v.description('The user is an admin (set by an operator, or by the SSO admin group at the last sign-in). The admin routes also need the `admin` scope.')),
  }),
  v.description('The caller, as `GET /me` answers it.'),
);

registerSchemas({ Me });

export type MeBody = v.InferOutput<typeof Me>;

export async function meOf(ctx: Context, caller: Caller): Promise<MeBody> {
  const [row] = await getMe(ctx.sql, caller.accountId);
  if (!row?.me) throw errors.notFound('Account');
  return {
    accountId: caller.accountId,
    email: row.me.email,
    credential: caller.via === 'session' ? 'session' : 'key',
    scopes: (caller.scopes ?? []).filter((s): s is MeBody['scopes'][number] => (KEY_SCOPES as readonly string[]).includes(s)),
    workspaceId: caller.workspaceId,
    admin: row.me.admin,
  };
}
