// GET /workflows — the caller's saved workflows, most recently updated first, paged by limit/offset.

import type { H3Event } from 'h3';
import { errors } from '../../errors.ts';
import { authorize, authResult, sendJson, withTimeout } from '../../http.ts';
import { bearerKey, hashKey } from '../../keys.ts';
import { errorFields } from '../../log.ts';
import { defineRoute } from '../../route.ts';
import { ListLimit, ListOffset, WorkflowList } from '../../workflows/schemas.ts';
import { parsePage } from '../../workflows/service.ts';

function queryParam(event: H3Event, name: string): string | undefined {
  const all = event.url.searchParams.getAll(name);
  if (all.length > 1) throw errors.invalid(`${name}: must be given once`);
  return all[0];
}

export default defineRoute({
  method: 'GET',
  path: '/workflows',
  operationId: 'listWorkflows',
  summary: 'List saved workflows',
  description: 'The caller\'s workflows, most recently updated first. The internal structure of a workflow is not returned.',
  tag: 'Workflows',
  scope: 'read',
  query: { limit: ListLimit, offset: ListOffset },
  success: { status: 200, description: 'A page of workflow summaries.', schema: WorkflowList },
  errors: [400, 401, 403, 429, 500, 503],
  async handler(ctx, event) {
    const key = bearerKey(event.req.headers.get('authorization'));
    if (!key) throw errors.unauthorized();
    let page;
    try {
      page = parsePage({ limit: queryParam(event, 'limit'), offset: queryParam(event, 'offset') });
    } catch (e) {
      // A bad query still answers 401/403/429 first.
      await authorize(ctx, event, { scope: 'read', bucket: 'read' });
      throw e;
    }
    // Authorization, rate limit and the read in one round trip.
    let row: any;
    try {
      [row] = await withTimeout(
        ctx.sql`
          select a.status, a.retry_after,
            case when a.status = 'ok' then kiln.list_workflows(a.account_id, ${page.limit}::int, ${page.offset}::int)::text end as data
          from kiln.authorize_request(${hashKey(key)}, 'read', 'read', ${ctx.config.readRpm}::int) a`,
        ctx.config.limiterTimeoutMs,
      );
    } catch (e) {
      ctx.log.warn('list workflows failed; failing closed', errorFields(e));
      throw errors.unavailable();
    }
    authResult(row, 'read');
    return sendJson(event, `{"data":${row.data}}`, { raw: true, headers: { 'cache-control': 'no-store' } });
  },
});
