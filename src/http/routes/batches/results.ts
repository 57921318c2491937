// GET /batches/{id}/results — JSON Lines, one per line that has ended, streamed page by page.

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { batchId, getBatch, resultLines } from '../../../batches/service.ts';
import { BatchResultLine } from '../../../batches/schemas.ts';
import { Uuid } from '../../../schemas.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute<string, never>({
  method: 'GET',
  path: '/batches/{id}/results',
  operationId: 'getBatchResults',
  summary: 'Download a batch\'s results',
  description:
    'JSON Lines (`application/jsonl`), one line per batch line that has ended, in line order: `{ "custom_id", "generationId", "response": { "status_code": 200, "body": <GET /generations/{id} body> } }` ' +
    'for completed lines, `{ "custom_id", "generationId", "error": { "code", "message" } }` for the rest. Available while the batch runs (what has ended so far), ' +
    'complete once it has ended. Streamed: the server reads it page by page as it writes.',
  tag: 'Batches',
  scope: 'read',
  bucket: 'read',
  params: { id: v.pipe(Uuid, v.description('Batch id from `POST /batches`.')) },
  success: { status: 200, description: 'The results.', type: 'application/jsonl', schema: v.string(), items: BatchResultLine, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => batchId(getRouterParam(event, 'id')),
  async handler(ctx, _event, { caller, payload }) {
    const id = payload!;
    const batch = await getBatch(ctx, caller, id); // 404 before any byte
    const lines = resultLines(ctx, caller, id, batch.requestCounts.total);
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await lines.next();
          if (next.done) controller.close();
          else controller.enqueue(encoder.encode(next.value));
        } catch (e) {
          // The client sees a cut stream; the log says why.
          ctx.log.warn('batch results: reading failed', { batch: id, error: String(e) });
          controller.error(e);
        }
      },
      async cancel() {
        await lines.return(undefined);
      },
    }, { highWaterMark: 1 });
    return new Response(body, { status: 200, headers: { 'content-type': 'application/jsonl; charset=utf-8', 'cache-control': 'no-store' } });
  },
});
