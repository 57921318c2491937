// GET /generations/{id}/events — server-sent events: one `status` event per status the generation
// reaches (data = the GET body), the terminal one last, then the stream closes. Opening it is one
// read request for the rate limits (authorization and the read in one round trip, as the GET).

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { errors } from '../../../errors.ts';
import { defineRoute } from '../../route.ts';
import { isUuid, Uuid } from '../../../schemas.ts';
import { pollGenerationCall, type GenerationRow } from '../../../generations/service.ts';
import { generationFeed } from '../../../live/generations.ts';
import { EventStreamText, GenerationStreamItem, LastEventId } from '../../../live/schemas.ts';
import { openEventStream } from '../../../live/stream.ts';

export default defineRoute<string, { body: GenerationRow | null }>({
  method: 'GET',
  path: '/generations/{id}/events',
  operationId: 'streamGenerationEvents',
  summary: 'Stream a generation\'s status changes and its output as it is written',
  description:
    'Server-sent events (`text/event-stream`). Each status the generation reaches is one `status` event whose `data` is the `GET /generations/{id}` body, ' +
    'with `id` 1 (pending), 2 (processing) or 3 (completed or failed); the terminal event is the last, then the stream closes. ' +
    'While it processes, `delta` (output text as the provider writes it), `preview` (partial images), `progress` (the provider\'s status) and ' +
    '`reset` (the execution starts over: drop what was shown) events follow (docs: API guide, "Streaming"). ' +
    'Reconnect with `Last-Event-ID` to resume right after any event, with no gap and no repeat. A comment line every 15 s keeps the connection open. ' +
    'At most `KILN_MAX_STREAMS` (default 100) streams per account are open on one server; beyond, 429 `rate_limited`. ' +
    '404 and 400 as `GET /generations/{id}`.',
  tag: 'Generations',
  scope: 'read',
  bucket: 'read',
  params: { id: v.pipe(Uuid, v.description('Generation id from `POST /generations`.')) },
  headers: { 'Last-Event-ID': LastEventId },
  success: { status: 200, description: 'The event stream.', type: 'text/event-stream', schema: EventStreamText, items: GenerationStreamItem },
  errors: [400, 401, 403, 404, 429, 503],
  call: pollGenerationCall,
  prepare(_ctx, event) {
    const id = getRouterParam(event, 'id');
    if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
    return id.toLowerCase();
  },
  async handler(ctx, event, { caller, row, payload }) {
    if (!row?.body) throw errors.notFound('Generation');
    return openEventStream(ctx, event, caller.accountId, generationFeed(ctx, caller, payload!, event.req.headers.get('last-event-id')));
  },
});
