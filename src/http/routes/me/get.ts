// GET /me — who the request's API key or console session is: account, email, scopes, workspace
// and the admin flag (docs/api.md, "Who am I").

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { Me, meOf } from '../../../auth/me.ts';

export default defineRoute({
  method: 'GET',
  path: '/me',
  operationId: 'getMe',
  summary: 'Who am I',
  description:
    'The account behind the request\'s credential — an API key, or the console session\'s cookie — with its email, the scopes the credential carries now, ' +
    'the workspace it acts in and bills (null = personal), and whether the user is an admin. Needs the `read` scope (`write` implies it): ' +
    'a key made with only `keys` or `admin` gets 403. A missing, unknown, revoked or expired credential gets the same 401 as on every route.',
  tag: 'Account',
  scope: 'read',
  bucket: 'read',
  success: { status: 200, description: 'The caller.', schema: Me, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [401, 403, 429, 503],
  async handler(ctx, event, { caller }) {
    return sendJson(event, await meOf(ctx, caller), { headers: { 'cache-control': 'no-store' } });
  },
});
