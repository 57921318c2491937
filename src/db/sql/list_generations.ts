// kiln.list_generations: a keyset page of an account's generations in one billing scope created
// through one origin (the list of an already-authorized caller: MCP's list_generations).

import type { Queryable } from '../pool.ts';
import type { GenerationPage } from './list_generations_for_keys.ts';

/** `beforeAt` and `since` are timestamps (ISO text), `statuses` and `types` comma-separated lists, `metadata` pairs all to match; null = none. */
export function listGenerations(
  sql: Queryable, accountId: string, workspaceId: string | null, origin: string, limit: number,
  beforeAt: string | null, beforeId: string | null, statuses: string | null, types: string | null,
  modelId: string | null, since: string | null, endUser: string | null = null, metadata: Record<string, string> | null = null,
) {
  return sql<Array<{ body: GenerationPage }>>`select kiln.list_generations(
    ${accountId}::uuid, ${workspaceId}::uuid, ${origin}, ${limit}::int, ${beforeAt}::text::timestamptz, ${beforeId}::uuid,
    string_to_array(${statuses}::text, ','), string_to_array(${types}::text, ','), ${modelId}::text, ${since}::text::timestamptz,
    ${endUser}::text, ${metadata ? JSON.stringify(metadata) : null}::text::jsonb) as body`;
}
