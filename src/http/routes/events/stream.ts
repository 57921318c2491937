// GET /events — the key's billing scope's events (the ones its webhooks receive) as server-sent
// events, resumable with Last-Event-ID over the last 24 h (src/events/feed.ts).

import * as v from 'valibot';
import { eventsFeed, startCursor } from '../../../events/feed.ts';
import { EventStreamText } from '../../../live/schemas.ts';
import { EVENT_TYPES, EventStreamItem } from '../../../webhooks/schemas.ts';
import { openEventStream } from '../../../live/stream.ts';
import { defineRoute } from '../../route.ts';
import { scopeOf } from '../../../webhooks/service.ts';

export default defineRoute({
  method: 'GET',
  path: '/events',
  operationId: 'streamEvents',
  summary: 'Stream every event of the key\'s scope',
  description:
    'Server-sent events (`text/event-stream`) of the key\'s billing scope (the workspace of a workspace-bound key, else the account): ' +
    `${EVENT_TYPES.map((t) => `\`${t}\``).join(', ')} (every type a webhook can receive), ` +
    'each with `event` = its type, `data` = the message a webhook receives (`{ "type", "timestamp", "data" }`, the same bytes) and an `id`. ' +
    'Without `Last-Event-ID` the stream starts now; with one, it resumes after that event with no gap and no repeat, over the last 24 h. ' +
    'Events are sent in commit order, once the transactions that wrote them have ended. A comment line every 15 s keeps the connection open. ' +
    'At most `KILN_MAX_STREAMS` (default 100) streams per account are open on one server; beyond, 429 `rate_limited`.',
  tag: 'Events',
  scope: 'read',
  bucket: 'read',
  headers: {
    'Last-Event-ID': v.pipe(v.string(), v.description('The `id` of the last event received (`<tx>-<n>`): the stream resumes after it. Anything else starts from now.')),
  },
  success: { status: 200, description: 'The event stream.', type: 'text/event-stream', schema: EventStreamText, items: EventStreamItem },
  errors: [401, 403, 429, 503],
  async handler(ctx, event, { caller }) {
    const start = await startCursor(ctx, event.req.headers.get('last-event-id'));
    const stream = openEventStream(ctx, event, caller.accountId, eventsFeed(ctx, scopeOf(caller), start));
    // Headers go out with the first bytes: a quiet scope would otherwise leave the client waiting
    // for the first heartbeat to learn that the stream is open.
    void stream.pushComment('open');
    return stream;
  },
});
