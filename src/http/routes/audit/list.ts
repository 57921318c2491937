// GET /audit — the audit log of the caller's billing scope, newest first.

import * as v from 'valibot';
import { sendJson } from '../../json.ts';
import { defineRoute, queryParam } from '../../route.ts';
import { AuditPage } from '../../../keys/schemas.ts';
import { listAuditFor, parseAuditQuery } from '../../../keys/service.ts';

export default defineRoute<ReturnType<typeof parseAuditQuery>>({
  method: 'GET',
  path: '/audit',
  operationId: 'listAudit',
  summary: 'Read the audit log',
  description:
    'Who changed what in the caller\'s billing scope: keys created, rotated, revoked and expired; webhooks; workflows saved and deleted; sign-ins; ' +
    'tier, budget and membership changes. Newest first, in pages (`cursor` = the previous page\'s `nextCursor`). Needs the `keys` scope.',
  tag: 'Keys',
  scope: 'keys',
  bucket: 'read',
  query: {
    limit: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100), v.description('Entries per page, 1 to 100 (default 50).')),
    cursor: v.pipe(v.string(), v.description('`nextCursor` of the previous page.')),
    action: v.pipe(v.string(), v.description('Only this action, e.g. `key.rotated`.')),
  },
  success: { status: 200, description: 'A page of entries.', schema: AuditPage, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 429, 503],
  prepare: (_ctx, event) => parseAuditQuery(queryParam(event, 'limit'), queryParam(event, 'cursor'), queryParam(event, 'action')),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await listAuditFor(ctx, caller, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
