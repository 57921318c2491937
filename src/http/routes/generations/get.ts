// GET /generations/{id} — status, result (image with a freshly signed URL, or code) and error.
// Never cached. Only the caller's own generations created through the REST API are visible.
// With `Prefer: wait=N`, answers as soon as the job is completed or failed, or after N seconds.

import { getRouterParam, type H3Event } from 'h3';
import * as v from 'valibot';
import { errors } from '../../../errors.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { isUuid, Uuid } from '../../../schemas.ts';
import { GenerationStatus } from '../../../generations/schemas.ts';
import { pollGenerationCall, renderGeneration } from '../../../generations/service.ts';
import { partialOf } from '../../../live/generations.ts';
import { waitForGeneration } from '../../../live/generations.ts';
import { hubOf } from '../../../live/hub.ts';
import { PREFERENCE_APPLIED, PreferWait } from '../../../live/schemas.ts';
import { preferredWait } from '../../../live/wait.ts';

/** The honoured wait of a request and the hub mark taken before its read. */
const waits = new WeakMap<H3Event, { seconds: number; mark: number }>();

export default defineRoute<string, { body: import('../../../generations/service.ts').GenerationRow | null }>({
  method: 'GET',
  path: '/generations/{id}',
  operationId: 'getGeneration',
  summary: 'Poll a generation',
  description:
    'Never cached. 404 when the id does not exist, belongs to another account, or was not created through the API. ' +
    'With `Prefer: wait=N` (1–60), answers as soon as the generation is completed or failed, or after N seconds with its state then.',
  tag: 'Generations',
  scope: 'read',
  bucket: 'read',
  params: { id: v.pipe(Uuid, v.description('Generation id from `POST /generations`.')) },
  headers: { Prefer: PreferWait },
  success: {
    status: 200, description: 'The generation.', schema: GenerationStatus,
    headers: { 'cache-control': 'Always `no-store`.', 'preference-applied': PREFERENCE_APPLIED },
  },
  errors: [400, 401, 403, 404, 429, 503],
  // Authorization, rate limits and the read in one round trip (once per request, however long it waits).
  call: pollGenerationCall,
  prepare(ctx, event) {
    const id = getRouterParam(event, 'id');
    if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
    const seconds = preferredWait(event.req.headers.get('prefer'));
    if (seconds) waits.set(event, { seconds, mark: hubOf(ctx).mark() });
    return id.toLowerCase();
  },
  async handler(ctx, event, { caller, row, payload }) {
    if (!row?.body) throw errors.notFound('Generation');
    const wait = waits.get(event);
    let body = row.body;
    if (wait) {
      const { state } = await waitForGeneration(ctx, caller, payload!, { mark: wait.mark, first: body, seconds: wait.seconds, signal: event.req.signal });
      body = state ?? body;
    }
    const rendered = await renderGeneration(ctx, body);
    const partial = await partialOf(ctx, caller.accountId, body);
    if (partial) rendered.partial = partial;
    return sendJson(event, rendered, {
      headers: { 'cache-control': 'no-store', ...(wait ? { 'preference-applied': `wait=${wait.seconds}` } : {}) },
    });
  },
});
