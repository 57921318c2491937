// GET /workflows/{id}/runs/{runId}/events — server-sent events of a run: its status, each settled
// output and the progress, the terminal state last. Opening it is one read request for the rate
// limits (authorization and the read in one round trip, as the GET).

import { errors } from '../../../errors.ts';
import { defineRoute } from '../../route.ts';
import { runFeed } from '../../../live/runs.ts';
import { EventStreamText, LastEventId, WorkflowRunStreamItem } from '../../../live/schemas.ts';
import { openEventStream } from '../../../live/stream.ts';
import { getRunCall, type RunIds, type RunRow } from '../../../workflows/service.ts';
import { RunParams, runIdsOf } from './_params.ts';

export default defineRoute<RunIds, { body: RunRow | null }>({
  method: 'GET',
  path: '/workflows/{id}/runs/{runId}/events',
  operationId: 'streamWorkflowRunEvents',
  summary: 'Stream a workflow run\'s progress',
  description:
    'Server-sent events (`text/event-stream`): `status` when the run is pending or running (`data` = the `GET /workflows/{id}/runs/{runId}` body); ' +
    'for each output as it settles, in `results` order, `output` (`data` = its entry of `results`) then `progress` (`data` = `{ "total", "completed" }`); ' +
    'while outputs run, their `delta`, `preview`, `output.progress` and `reset` events (`data` adds `promptNodeId` and `outputNodeId`; docs: API guide, "Streaming"); ' +
    'last, once the run is completed or failed and no output can still settle, `status` with the full run body — then the stream closes. ' +
    'Every event has an `id`; reconnect with `Last-Event-ID` to resume with no gap and no repeat. A comment line every 15 s keeps the connection open. ' +
    'At most `KILN_MAX_STREAMS` (default 100) streams per account are open on one server; beyond, 429 `rate_limited`. ' +
    '404 and 400 as `GET /workflows/{id}/runs/{runId}`.',
  tag: 'Workflows',
  scope: 'read',
  bucket: 'read',
  params: RunParams,
  headers: { 'Last-Event-ID': LastEventId },
  success: { status: 200, description: 'The event stream.', type: 'text/event-stream', schema: EventStreamText, items: WorkflowRunStreamItem },
  errors: [400, 401, 403, 404, 429, 503],
  call: getRunCall,
  prepare: (_ctx, event) => runIdsOf(event),
  async handler(ctx, event, { caller, row, payload }) {
    if (!row?.body) throw errors.notFound('Workflow run');
    return openEventStream(ctx, event, caller.accountId, runFeed(ctx, caller, payload!, event.req.headers.get('last-event-id')));
  },
});
