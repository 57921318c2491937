// The enabled entries of the model catalog (the kiln.models view), in display order, each with
// its version (updated_at in microseconds, what a price is checked against); one entry when `id`
// is given.

import type { CatalogUpstream } from '../../billing/types.ts';
import type { Queryable } from '../pool.ts';

/** A kiln.models row (also the shape of the models kiln.snapshot_workflow returns as json). */
export interface ModelRow {
  id: string;
  name: string;
  description: string | null;
  category: 'image' | 'text' | 'svg';
  provider: string;
  upstream: CatalogUpstream | null;
  supports_image_input: boolean;
  input_modalities: string[];
  output_modalities: string[];
  cost: { micros_per_image?: number; micros_per_second?: number; input_micros_per_token?: number; output_micros_per_token?: number } | null;
  max_output_tokens: number | null;
  markup: number | string | null;
  enabled: boolean;
  sort_order: number;
  updated_at: Date | string;
  fallbacks: string[];
}

export function enabledModels(sql: Queryable, id: string | null) {
  return sql<Array<ModelRow & { version: string }>>`
    select *, (extract(epoch from updated_at) * 1000000)::bigint::text as version
    from kiln.models where enabled and (${id}::text is null or id = ${id}::text)
    order by sort_order, id`;
}
