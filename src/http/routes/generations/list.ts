// GET /generations — the caller's jobs in its key's billing scope, newest first, in keyset pages.

import { sendJson } from '../../json.ts';
import { defineRoute, queryParam } from '../../route.ts';
import type { GenerationPage } from '../../../db/sql/list_generations_for_keys.ts';
import { parseAttributionFilter } from '../../../generations/attribution.ts';
import { GenerationList, listBatchLines, ListGenerationsQuery, listGenerationsCall, listGenerationsReplica, parseListQuery, renderPage, type ListQuery } from '../../../generations/list.ts';

export default defineRoute<ListQuery, { body: GenerationPage | null }>({
  method: 'GET',
  path: '/generations',
  operationId: 'listGenerations',
  summary: 'List generations',
  description:
    'The key\'s account\'s generations created through the API, in the key\'s billing scope (the personal budget for a key without a workspace, ' +
    'the workspace for a workspace-bound key; other members\' jobs are not listed), newest first. Each item is exactly the `GET /generations/{id}` body. ' +
    'Pages follow `nextCursor` (keyset: no gaps or repeats while new jobs arrive). Generations made over MCP, by the application or as workflow outputs are not listed. ' +
    '`endUser` and `metadata[key]=value` (several pairs: all must match) filter by attribution, combined with the other filters.',
  tag: 'Generations',
  scope: 'read',
  bucket: 'read',
  query: ListGenerationsQuery,
  success: { status: 200, description: 'A page of generations.', schema: GenerationList, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 429, 503],
  // Authorization, rate limit and the read in one round trip; a bad query still answers 401/403/429 first.
  call: listGenerationsCall,
  // With a read replica that keeps up: authorized on the primary, read there (docs/operators.md).
  replicaRead: listGenerationsReplica,
  prepare: (ctx, event) => parseListQuery(ctx, Object.fromEntries(
    (['limit', 'cursor', 'status', 'type', 'model', 'since', 'batchId'] as const).map((n) => [n, queryParam(event, n)]),
  ), parseAttributionFilter(event.url.searchParams)),
  async handler(ctx, event, { row, caller, payload }) {
    // A batch's lines are a page of their own (docs/api.md, "Batches").
    const page = payload?.batchId ? await listBatchLines(ctx, caller, payload) : await renderPage(ctx, row!.body ?? { data: [], next: null });
    return sendJson(event, page, { headers: { 'cache-control': 'no-store' } });
  },
});
