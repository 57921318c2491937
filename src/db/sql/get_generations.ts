// kiln.get_generations: get_generation for many (account, id) pairs; rows only for the visible ones.

import type { Queryable } from '../pool.ts';

const TEXT = 25, UUID = 2950;

/** A stored result (kiln_private.generations.result). */
export type GenerationResult =
  | { type: 'image'; path?: string | null; mediaType?: string | null; aspectRatio?: string | null; width?: number; height?: number; model?: string; expiredAt?: string }
  | { type: 'code'; code?: string | null; structuredOutput?: unknown; model?: string };

/** kiln.get_generation's json: a generation's status. */
export interface GenerationBody {
  id: string;
  status: 'pending' | 'processing' | 'completed' | 'failed';
  type: 'image' | 'code';
  result: GenerationResult | null;
  error: string | null;
  cost_micros: number | string | null;
  /** The request's prompt (migration 000039); absent from events stored before it. */
  prompt?: string | null;
  /** A batch line's batch and custom_id (docs/api.md, "Batches"). */
  batch_id?: string | null;
  custom_id?: string | null;
  /** Attribution (docs/api.md, "Attribution"); absent from events stored before it. */
  end_user?: string | null;
  metadata?: Record<string, string> | null;
}

export function getGenerations(sql: Queryable, accountIds: string[], ids: string[], origins: string[]) {
  return sql<Array<{ ord: number; body: GenerationBody }>>`select ord, body from kiln.get_generations(
    ${sql.array(accountIds, UUID)}, ${sql.array(ids, UUID)}, ${sql.array(origins, TEXT)})`;
}
