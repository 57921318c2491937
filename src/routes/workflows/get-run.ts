// GET /workflows/{id}/runs/{runId} — a run's status, progress and the results settled so far.
// Never cached: results grow while the run is in flight.

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { errors } from '../../errors.ts';
import { authorize, authResult, json, withTimeout } from '../../http.ts';
import { bearerKey, hashKey } from '../../keys.ts';
import { errorFields } from '../../log.ts';
import { defineRoute } from '../../route.ts';
import { Uuid } from '../../schemas.ts';
import { isUuid } from '../../generations/service.ts';
import { WorkflowRun } from '../../workflows/schemas.ts';
import { renderRun, type RunRow } from '../../workflows/service.ts';

export default defineRoute({
  method: 'GET',
  path: '/workflows/{id}/runs/{runId}',
  operationId: 'getWorkflowRun',
  summary: 'Poll a workflow run',
  description:
    'Never cached. `results` gain an entry as each output settles (image outputs carry a signed `url`; code, screen and design outputs carry `code`). ' +
    '404 when the run does not exist, belongs to another account, or is not a run of that workflow.',
  tag: 'Workflows',
  scope: 'read',
  params: {
    id: v.pipe(Uuid, v.description('Workflow id.')),
    runId: v.pipe(Uuid, v.description('Run id from `POST /workflows/{id}/runs`.')),
  },
  success: { status: 200, description: 'The run.', schema: WorkflowRun, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  async handler(ctx, event) {
    const key = bearerKey(event.req.headers.get('authorization'));
    if (!key) throw errors.unauthorized();
    const id = getRouterParam(event, 'id');
    const runId = getRouterParam(event, 'runId');
    if (!isUuid(id) || !isUuid(runId)) {
      await authorize(ctx, event, { scope: 'read', bucket: 'read' });
      throw errors.invalid(isUuid(id) ? 'runId: must be a uuid' : 'id: must be a uuid');
    }
    // Authorization, rate limit and the read in one round trip.
    let row: any;
    try {
      [row] = await withTimeout(
        ctx.sql`
          select a.status, a.retry_after, a.account_id,
            case when a.status = 'ok' then kiln.get_workflow_run(a.account_id, ${id}::uuid, ${runId}::uuid) end as r
          from kiln.authorize_request(${hashKey(key)}, 'read', 'read', ${ctx.config.readRpm}::int) a`,
        ctx.config.limiterTimeoutMs,
      );
    } catch (e) {
      ctx.log.warn('get workflow run failed; failing closed', errorFields(e));
      throw errors.unavailable();
    }
    authResult(row, 'read');
    const reread = async () => {
      const [again] = await ctx.sql`select kiln.get_workflow_run(${row.account_id}::uuid, ${id}::uuid, ${runId}::uuid) as r`;
      return (again?.r ?? null) as RunRow | null;
    };
    return json(await renderRun(ctx, row.r, reread), 200, { 'cache-control': 'no-store' });
  },
});
