// kiln.create_generations: create_generation for a batch of already-authorized callers (reserve,
// insert, enqueue in one transaction); each row holds its id or its own error.

import type { Queryable } from '../pool.ts';

// Element types for sql.array: postgres.js cannot infer them from nulls.
const TEXT = 25, INT8 = 20, INT4 = 23, UUID = 2950;

export interface CreateGenerationsRow {
  ord: number;
  id: string | null;
  error_code: string | null;
  error_message: string | null;
}

export interface CreateGenerationsColumns {
  accountIds: string[];
  keyIds: Array<string | null>;
  workspaceIds: Array<string | null>;
  origins: string[];
  types: string[];
  modelIds: string[];
  modelVersions: string[];
  /** JSON text of each stored request. */
  requests: string[];
  reserves: string[];
  maxAttempts: number[];
}

export function createGenerations(sql: Queryable, c: CreateGenerationsColumns) {
  return sql<CreateGenerationsRow[]>`select * from kiln.create_generations(
    ${sql.array(c.accountIds, UUID)}, ${sql.array(c.keyIds, UUID)}, ${sql.array(c.workspaceIds, UUID)},
    ${sql.array(c.origins, TEXT)}, ${sql.array(c.types, TEXT)}, ${sql.array(c.modelIds, TEXT)},
    ${sql.array(c.modelVersions, INT8)}, ${sql.array(c.requests, TEXT)}::jsonb[],
    ${sql.array(c.reserves, INT8)}, ${sql.array(c.maxAttempts, INT4)})`;
}
