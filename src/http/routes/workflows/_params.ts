// Path ids of the workflow routes, described once for the OpenAPI document and checked before any
// SQL (400 naming the bad one).

import { getRouterParam, type H3Event } from 'h3';
import * as v from 'valibot';
import { Uuid } from '../../../schemas.ts';
import { runIds, type RunIds } from '../../../workflows/service.ts';

export const WorkflowIdParam = v.pipe(Uuid, v.description('Workflow id.'));

/** `{id}` and `{runId}` of the routes under /workflows/{id}/runs/{runId}. */
export const RunParams = {
  id: WorkflowIdParam,
  runId: v.pipe(Uuid, v.description('Run id from `POST /workflows/{id}/runs`.')),
};

/** The checked `{id}` and `{runId}` of a request. */
export function runIdsOf(event: H3Event): RunIds {
  return runIds(getRouterParam(event, 'id'), getRouterParam(event, 'runId'));
}
