// GET /batches — the account's batches, newest first, in keyset pages.

import * as v from 'valibot';
import { listBatchesOf } from '../../../batches/service.ts';
import { BatchList } from '../../../batches/schemas.ts';
import { errors } from '../../../errors.ts';
import { sendJson } from '../../json.ts';
import { defineRoute, queryParam } from '../../route.ts';

export default defineRoute<{ limit: number; cursor: string | null }, never>({
  method: 'GET',
  path: '/batches',
  operationId: 'listBatches',
  summary: 'List batches',
  description: 'The account\'s batches, newest first. Pages follow `nextCursor`.',
  tag: 'Batches',
  scope: 'read',
  bucket: 'read',
  query: {
    limit: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100), v.description('Page size, 1 to 100. Default 20.')),
    cursor: v.pipe(v.string(), v.description('`nextCursor` of the previous page. Opaque; pass it back unchanged.')),
  },
  success: { status: 200, description: 'A page of batches.', schema: BatchList, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 429, 503],
  prepare(_ctx, event) {
    const raw = queryParam(event, 'limit');
    const limit = raw === undefined ? 20 : /^\d{1,3}$/.test(raw) ? Number(raw) : NaN;
    if (!(limit >= 1 && limit <= 100)) throw errors.invalid('limit: must be an integer from 1 to 100');
    return { limit, cursor: queryParam(event, 'cursor') ?? null };
  },
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await listBatchesOf(ctx, caller, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
