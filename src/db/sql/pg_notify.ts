// pg_notify: sends a notification (the status hub's liveness ping on its own channel).

import type { Queryable } from '../pool.ts';

export function pgNotify(sql: Queryable, channel: string, payload: string) {
  return sql`select pg_notify(${channel}::text, ${payload}::text)`;
}
