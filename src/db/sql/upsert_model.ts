// kiln.upsert_model: adds or replaces a catalog entry from its JSON form.

import type postgres from 'postgres';
import type { Queryable } from '../pool.ts';

export interface ModelRow {
  id: string;
  name: string;
  description: string | null;
  category: string;
  provider: string;
  upstream: unknown;
  supports_image_input: boolean;
  input_modalities: string[];
  output_modalities: string[];
  cost: unknown;
  max_output_tokens: number | null;
  markup: string | null;
  batch_markup: string | null;
  enabled: boolean;
  sort_order: number;
  updated_at: Date;
  fallbacks: string[];
}

export function upsertModel(sql: Queryable, entry: unknown) {
  return sql<ModelRow[]>`select * from kiln.upsert_model(${sql.json(entry as postgres.JSONValue)}::jsonb)`;
}
