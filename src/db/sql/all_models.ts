// kiln.models (view): every catalog entry, enabled or not, in catalog order (operators).

import type { Queryable } from '../pool.ts';
import type { ModelRow } from './upsert_model.ts';

export function allModels(sql: Queryable) {
  return sql<ModelRow[]>`select * from kiln.models order by sort_order, id`;
}

/**
 * One catalog entry, read under a transaction-scoped advisory lock on its id, so two `kiln model
 * upsert`s of one entry merge their files one after the other. (Not `for update`: the service role
 * reads kiln.models and may not lock its rows.)
 */
export function modelForUpdate(sql: Queryable, id: string) {
  return sql<ModelRow[]>`select m.* from (select pg_advisory_xact_lock(hashtextextended('kiln.model_upsert:' || ${id}::text, 0))) l, kiln.models m where m.id = ${id}`;
}
