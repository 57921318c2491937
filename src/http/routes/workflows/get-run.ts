// GET /workflows/{id}/runs/{runId} — a run's status, progress and the results settled so far.
// Never cached: results grow while the run is in flight. With `Prefer: wait=N`, answers as soon as
// the run is completed or failed, or after N seconds.

import type { H3Event } from 'h3';
import { json } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { hubOf } from '../../../live/hub.ts';
import { waitForRun } from '../../../live/runs.ts';
import { PREFERENCE_APPLIED, PreferWait } from '../../../live/schemas.ts';
import { preferredWait } from '../../../live/wait.ts';
import { WorkflowRun } from '../../../workflows/schemas.ts';
import { getRunCall, readRun, renderRun, type RunIds, type RunRow } from '../../../workflows/service.ts';
import { RunParams, runIdsOf } from './_params.ts';

/** The honoured wait of a request and the hub mark taken before its read. */
const waits = new WeakMap<H3Event, { seconds: number; mark: number }>();

export default defineRoute<RunIds, { body: RunRow | null }>({
  method: 'GET',
  path: '/workflows/{id}/runs/{runId}',
  operationId: 'getWorkflowRun',
  summary: 'Poll a workflow run',
  description:
    'Never cached. `results` gain an entry as each output settles (image outputs carry a signed `url`; code, screen and design outputs carry `code`). ' +
    '404 when the run does not exist, belongs to another account, or is not a run of that workflow. ' +
    'With `Prefer: wait=N` (1–60), answers as soon as the run is completed or failed, or after N seconds with its state then.',
  tag: 'Workflows',
  scope: 'read',
  bucket: 'read',
  params: RunParams,
  headers: { Prefer: PreferWait },
  success: {
    status: 200, description: 'The run.', schema: WorkflowRun,
    headers: { 'cache-control': 'Always `no-store`.', 'preference-applied': PREFERENCE_APPLIED },
  },
  errors: [400, 401, 403, 404, 429, 503],
  // Authorization, rate limit and the read in one round trip (once per request, however long it waits).
  call: getRunCall,
  prepare(ctx, event) {
    const ids = runIdsOf(event);
    const seconds = preferredWait(event.req.headers.get('prefer'));
    if (seconds) waits.set(event, { seconds, mark: hubOf(ctx).mark() });
    return ids;
  },
  async handler(ctx, event, { caller, row, payload }) {
    const wait = waits.get(event);
    let found = row!.body;
    if (wait && found) {
      const { state } = await waitForRun(ctx, caller, payload!, { mark: wait.mark, first: found, seconds: wait.seconds, signal: event.req.signal });
      found = state ?? found;
    }
    const body = await renderRun(ctx, found, () => readRun(ctx, caller, payload!));
    return json(body, 200, { 'cache-control': 'no-store', ...(wait ? { 'preference-applied': `wait=${wait.seconds}` } : {}) });
  },
});
