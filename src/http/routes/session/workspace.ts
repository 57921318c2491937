// PUT /session/workspace — the console's workspace switcher: the session acts in a workspace or personally.

import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { sessionHash } from './_cookie.ts';
import { Session, switchWorkspace, SwitchWorkspaceRequest } from '../../../auth/session.ts';

export default defineRoute<unknown>({
  method: 'PUT',
  path: '/session/workspace',
  operationId: 'switchSessionWorkspace',
  summary: 'Switch the session\'s workspace',
  description:
    'From the next request on, the session acts in (and bills) this Team workspace of its user, or personally with `null`. ' +
    '404 when the user is not a current member of it, or when the request was made with an API key (a key\'s workspace is fixed when it is created). ' +
    'As for every unsafe request authenticated by the session cookie, the `Origin` must be the public URL\'s (else 403 `forbidden`).',
  tag: 'Session',
  scope: 'read',
  bucket: 'read',
  body: SwitchWorkspaceRequest,
  success: { status: 200, description: 'The session, acting in the workspace.', schema: Session, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 413, 415, 429, 503],
  prepare: (ctx, event) => readJson(event, ctx.config.maxBodyBytes),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await switchWorkspace(ctx, sessionHash(caller, event), payload), { headers: { 'cache-control': 'no-store' } });
  },
});
