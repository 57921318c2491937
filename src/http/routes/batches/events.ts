// GET /batches/{id}/events — server-sent events: `progress` as lines end, the terminal `status` last.

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { batchId, getBatch } from '../../../batches/service.ts';
import { BatchStreamItem } from '../../../batches/schemas.ts';
import { batchFeed } from '../../../live/batches.ts';
import { EventStreamText, LastEventId } from '../../../live/schemas.ts';
import { openEventStream } from '../../../live/stream.ts';
import { Uuid } from '../../../schemas.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute<string, never>({
  method: 'GET',
  path: '/batches/{id}/events',
  operationId: 'streamBatchEvents',
  summary: 'Stream a batch\'s progress',
  description:
    'Server-sent events (`text/event-stream`): `progress` (`data` = the batch, with its `requestCounts`) when the stream opens and as lines end, ' +
    'and last, once the batch has ended, `status` with the batch; then the stream closes. Event ids count the lines ended (the last one\'s is total + 1): ' +
    'reconnect with `Last-Event-ID` to resume without repeats. At most `KILN_MAX_STREAMS` streams per account on one server.',
  tag: 'Batches',
  scope: 'read',
  bucket: 'read',
  params: { id: v.pipe(Uuid, v.description('Batch id from `POST /batches`.')) },
  headers: { 'Last-Event-ID': LastEventId },
  success: { status: 200, description: 'The event stream.', type: 'text/event-stream', schema: EventStreamText, items: BatchStreamItem },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => batchId(getRouterParam(event, 'id')),
  async handler(ctx, event, { caller, payload }) {
    await getBatch(ctx, caller, payload!);
    return openEventStream(ctx, event, caller.accountId, batchFeed(ctx, caller, payload!, event.req.headers.get('last-event-id')));
  },
});
