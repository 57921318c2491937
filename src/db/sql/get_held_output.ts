// kiln.get_held_output: the provider's output a generation holds while the object store could not
// take it (docs/storage.md, "When the store is down"); no row when none is held.

import type { Queryable } from '../pool.ts';

export interface HeldOutput {
  data: Buffer;
  result: Record<string, unknown>;
  format: string;
  cost_micros: string | number;
  provider_request_id: string | null;
  model_id: string;
  store_failing_since: Date;
  store_failures: number;
}

export function getHeldOutput(sql: Queryable, id: string) {
  return sql<HeldOutput[]>`select * from kiln.get_held_output(${id}::uuid)`;
}
