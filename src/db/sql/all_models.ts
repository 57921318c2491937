// kiln.models (view): every catalog entry, enabled or not, in catalog order (operators).

import type { Queryable } from '../pool.ts';
import type { ModelRow } from './upsert_model.ts';

export function allModels(sql: Queryable) {
  return sql<ModelRow[]>`select * from kiln.models order by sort_order, id`;
}
