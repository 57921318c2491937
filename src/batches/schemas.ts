// Schemas of the batch API (docs/api.md, "Batches"), for the OpenAPI document and the typed client.

import * as v from 'valibot';
import { GenerationRequest, GenerationStatus } from '../generations/schemas.ts';
import { registerSchemas, Uuid } from '../schemas.ts';

/** The most lines and bytes one batch may have. */
export const MAX_BATCH_LINES = 50_000;
export const MAX_BATCH_BYTES = 100 * 1024 * 1024;
/** The path every line posts to (OpenAI's batch input format: `url`). */
export const BATCH_LINE_URL = '/api/v1/generations';
export const BATCH_MEDIA_TYPES = ['application/jsonl', 'application/x-ndjson', 'application/jsonlines', 'application/x-jsonlines'] as const;

export const BatchInputLine = v.pipe(
  v.object({
    custom_id: v.pipe(v.string(), v.minLength(1), v.maxLength(64), v.description('Yours, 1–64 characters, unique within the batch: the results name each line by it.')),
    method: v.pipe(v.literal('POST'), v.description('Always `POST`.')),
    url: v.pipe(v.literal(BATCH_LINE_URL), v.description(`Always \`${BATCH_LINE_URL}\`.`)),
    body: GenerationRequest,
  }),
  v.description('One line of a `POST /batches` body (JSON Lines): OpenAI\'s batch input format, with a `POST /generations` body.'),
);

export const BatchStatus = v.picklist(['in_progress', 'completed', 'canceling', 'canceled', 'expired']);

export const Batch = v.pipe(
  v.object({
    id: Uuid,
    status: v.pipe(BatchStatus, v.description('`in_progress`; `completed` once every line ended (whatever each outcome); `canceling` then `canceled` after a cancel; `expired` when lines were still waiting at `expiresAt`.')),
    requestCounts: v.object({
      total: v.number(),
      completed: v.number(),
      failed: v.pipe(v.number(), v.description('Lines that failed, expired ones included.')),
      canceled: v.number(),
    }),
    createdAt: v.string(),
    startedAt: v.pipe(v.nullable(v.string()), v.description('When its first line started.')),
    completedAt: v.pipe(v.nullable(v.string()), v.description('When its last line ended.')),
    expiresAt: v.pipe(v.string(), v.description('24 hours after creation: lines not started by then end `expired`, uncharged.')),
    spentMicros: v.pipe(v.number(), v.description('What its completed lines were charged, in microdollars.')),
  }),
  v.description('A batch of generations (`POST /batches`).'),
);
export type BatchBody = v.InferOutput<typeof Batch>;

export const BatchList = v.object({
  data: v.pipe(v.array(Batch), v.description('Newest first.')),
  nextCursor: v.pipe(v.nullable(v.string()), v.description('Pass as `cursor` for the next page; null on the last page.')),
});

export const BatchResultLine = v.pipe(
  v.object({
    custom_id: v.string(),
    generationId: Uuid,
    response: v.optional(v.pipe(
      v.object({ status_code: v.literal(200), body: GenerationStatus }),
      v.description('Completed lines: the generation\'s `GET /generations/{id}` body.'),
    )),
    error: v.optional(v.pipe(
      v.object({ code: v.string(), message: v.string() }),
      v.description('Lines that did not complete: `canceled`, `expired`, `insufficient_quota`, `payment_required` or `generation_failed`, and the generation\'s error.'),
    )),
  }),
  v.description('One line of `GET /batches/{id}/results` (JSON Lines).'),
);

export const BatchStreamItem = v.pipe(
  v.variant('event', [
    v.pipe(v.object({ event: v.literal('progress'), id: v.string(), data: Batch }), v.description('The batch after lines ended (its `requestCounts`).')),
    v.pipe(v.object({ event: v.literal('status'), id: v.string(), data: Batch }), v.description('The batch once it ended: the last event.')),
  ]),
  v.description('One event of `GET /batches/{id}/events`, its `data` line parsed as JSON.'),
);

registerSchemas({ BatchInputLine, Batch, BatchList, BatchResultLine, BatchStreamItem });
