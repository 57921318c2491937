// Reading and canceling batches (docs/api.md, "Batches"), and their results as JSON Lines read page
// by page from the generations table: the API's memory does not grow with the batch.

import type { Caller } from '../auth/access.ts';
import type { Context } from '../context.ts';
import { batchResults, cancelBatch as cancelBatchSql, endBatchLines, getBatch as getBatchSql, listBatches, type BatchJson } from '../db/sql/batches.ts';
import { errors } from '../errors.ts';
import { decodeCursor, encodeCursor } from '../generations/list.ts';
import { renderGeneration } from '../generations/service.ts';
import { isUuid } from '../schemas.ts';

export function batchId(raw: string | undefined): string {
  if (!isUuid(raw)) throw errors.invalid('id: must be a uuid');
  return raw.toLowerCase();
}

export async function getBatch(ctx: Context, caller: Caller, id: string): Promise<BatchJson> {
  const [row] = await getBatchSql(ctx.sql, caller.accountId, id);
  if (!row?.b) throw errors.notFound('Batch');
  return row.b;
}

export async function listBatchesOf(ctx: Context, caller: Caller, q: { limit: number; cursor: string | null }): Promise<{ data: BatchJson[]; nextCursor: string | null }> {
  const before = q.cursor ? await decodeCursor(ctx, q.cursor) : null;
  const rows = await listBatches(ctx.sql, caller.accountId, before, q.limit + 1);
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  return { data: page.map((r) => r.body), nextCursor: rows.length > q.limit && last ? await encodeCursor(ctx, { at: last.at, id: last.id }) : null };
}

/**
 * Cancels a batch: canceling at once (no line is queued or started any more), then its lines end
 * in a transaction of their own (the worker's sweep finishes that after a crash in between).
 */
export async function cancelBatch(ctx: Context, caller: Caller, id: string): Promise<BatchJson> {
  const [{ r }] = await cancelBatchSql(ctx.sql, caller.accountId, id);
  if (r.outcome === 'missing') throw errors.notFound('Batch');
  if (r.outcome === 'conflict') throw errors.conflict(`The batch has already ended (${r.batch!.status}); only a batch in progress can be canceled.`);
  await endBatchLines(ctx.sql, id);
  return (await getBatchSql(ctx.sql, caller.accountId, id))[0]?.b ?? r.batch!;
}

/** A line's error code, from its generation's error (docs/api.md, "Batches"). */
export function lineErrorCode(error: string | null): string {
  if (error === 'canceled') return 'canceled';
  const m = /^(expired|insufficient_quota|payment_required)\b/.exec(error ?? '');
  return m ? m[1]! : 'generation_failed';
}

const PAGE = 1000;

/**
 * GET /batches/{id}/results: one JSON line per ended line of the batch's `total`, read PAGE lines
 * at a time and written as they are read (a slow reader holds back the reads, not memory).
 */
export async function* resultLines(ctx: Context, caller: Caller, id: string, total: number): AsyncGenerator<string> {
  for (let after = 0; after < total; after += PAGE) {
    const rows = await batchResults(ctx.sql, caller.accountId, id, after, PAGE);
    let out = '';
    for (const r of rows) {
      const body = await renderGeneration(ctx, r.body);
      const line = r.body.status === 'completed'
        ? { custom_id: r.custom_id, generationId: r.body.id, response: { status_code: 200, body } }
        : { custom_id: r.custom_id, generationId: r.body.id, error: { code: lineErrorCode(r.body.error), message: r.body.error ?? 'generation failed' } };
      out += `${JSON.stringify(line)}\n`;
    }
    if (out) yield out;
  }
}
