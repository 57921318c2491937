// kiln.models (view): every catalog entry, enabled or not, in catalog order (operators).

import type { Queryable } from '../pool.ts';
import type { ModelRow } from './upsert_model.ts';

export function allModels(sql: Queryable) {
  return sql<ModelRow[]>`select * from kiln.models order by sort_order, id`;
}

/** One catalog entry, locked until the transaction ends (`kiln model upsert` merges a file into it). */
export function modelForUpdate(sql: Queryable, id: string) {
  return sql<ModelRow[]>`select * from kiln.models where id = ${id} for update`;
}
