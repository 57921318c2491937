// POST /batches — a JSON Lines file of generation requests (OpenAI's batch input format), validated
// all or nothing while the batch and its lines are stored, a chunk at a time, in one transaction. Lines reserve their worst case
// only when they start (docs/api.md, "Batches").

import { ALONE } from '../../../auth/access.ts';
import { createBatch } from '../../../batches/create.ts';
import { Batch, BATCH_MEDIA_TYPES, BatchInputLine, MAX_BATCH_BYTES, MAX_BATCH_LINES } from '../../../batches/schemas.ts';
import { IDEMPOTENCY_HEADER, IdempotencyKeySchema, REPLAYED_HEADER } from '../../../idempotency.ts';
import { readIdempotencyKey } from '../../idempotency-header.ts';
import { readRaw, sendJson } from '../../json.ts';
import { apiUrl, defineRoute } from '../../route.ts';

export default defineRoute<never, never>({
  method: 'POST',
  path: '/batches',
  operationId: 'createBatch',
  summary: 'Start a batch of generations',
  description:
    `A JSON Lines body (\`Content-Type: application/jsonl\` or \`application/x-ndjson\`), up to ${MAX_BATCH_LINES} lines and 100 MB: ` +
    `each line \`{ "custom_id", "method": "POST", "url": "/api/v1/generations", "body": <a POST /generations body> }\` (OpenAI's batch input format). ` +
    'Validation is all or nothing: any problem is a 400 `invalid_request` whose `error.details` lists every problem as a JSON pointer into the lines ' +
    '(`/lines/17/body/model`, lines counted from 1), and nothing is created. A valid batch answers 202 with the batch. Each line becomes a generation ' +
    '(`batchId` on it; `GET /generations?batchId=` lists them) that reserves its worst case only when it starts, in a lane behind interactive work and ' +
    'taking turns with other accounts\' batches. `Idempotency-Key` is honoured as on `POST /generations`.',
  tag: 'Batches',
  scope: 'write',
  bucket: null,
  headers: { [IDEMPOTENCY_HEADER]: IdempotencyKeySchema },
  body: BatchInputLine,
  bodyTypes: BATCH_MEDIA_TYPES,
  success: {
    status: 202, description: 'Accepted; the batch is in progress (replayed: accepted earlier with this Idempotency-Key).', schema: Batch,
    headers: { location: 'The batch\'s URL.', 'cache-control': 'Always `no-store`.', [REPLAYED_HEADER]: '`true` when this is the batch of an earlier request with the same Idempotency-Key and body.' },
  },
  errors: [400, 401, 403, 409, 413, 415, 422, 429, 503],
  // The body (up to 100 MB) is read only for an authorized key.
  prepare: () => ALONE,
  async handler(ctx, event, { caller }) {
    const key = readIdempotencyKey(event);
    const raw = await readRaw(event, MAX_BATCH_BYTES, BATCH_MEDIA_TYPES);
    const created = await createBatch(ctx, caller, raw, key);
    const headers: Record<string, string> = { 'cache-control': 'no-store', location: apiUrl(ctx, `/batches/${created.batch.id}`) };
    if (created.replayed) headers[REPLAYED_HEADER] = 'true';
    return sendJson(event, created.batch, { status: 202, headers });
  },
});
