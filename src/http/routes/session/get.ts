// GET /session — the console session making the request: its user, workspace and end.

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { sessionHash } from './_cookie.ts';
import { Session, sessionOf } from '../../../auth/session.ts';

export default defineRoute({
  method: 'GET',
  path: '/session',
  operationId: 'getSession',
  summary: 'The current console session',
  description:
    'Who the console session of this request\'s cookie is, the workspace it acts in, the workspaces it may switch to, and when it ends. ' +
    'Only a console session (the `kiln_session` cookie from the SSO sign-in at `/auth/login`) has one: a request with an API key gets 404, one with neither (or an ended session) 401.',
  tag: 'Session',
  scope: 'read',
  bucket: 'read',
  success: { status: 200, description: 'The session.', schema: Session, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [401, 404, 429, 503],
  async handler(ctx, event, { caller }) {
    return sendJson(event, await sessionOf(ctx, sessionHash(caller, event)), { headers: { 'cache-control': 'no-store' } });
  },
});
