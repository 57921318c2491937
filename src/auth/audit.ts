// Who made a change, for the audit log. Triggers write the entries (the table's changes are the
// record, whatever door they came through); the request that makes a change names its actor in a
// transaction-local setting first. Without one, an entry's actor is the operator.

import type { Context } from '../context.ts';
import type { Queryable } from '../db/pool.ts';
import type { Caller } from './access.ts';

/** The `kiln.actor` setting of a caller: what an audit entry records about who and from where. */
export function actorSetting(caller: Caller): string {
  const type = caller.via ?? (caller.origin === 'mcp' ? 'identity' : 'key');
  return JSON.stringify({
    type,
    id: caller.keyId ?? caller.accountId,
    ip: caller.ip ?? null,
    requestId: caller.requestId ?? null,
  });
}

/**
 * Runs `fn` in a transaction whose changes the audit log attributes to `caller` (set_config with
 * is_local: it ends with the transaction, so a transaction pooler carries it safely).
 */
export function audited<T>(ctx: Context, caller: Caller, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return ctx.sql.begin(async (tx) => {
    await tx`select set_config('kiln.actor', ${actorSetting(caller)}, true)`;
    return fn(tx);
  }) as Promise<T>;
}

/** Names the caller as the actor of the rest of an open transaction. */
export async function actAs(tx: Queryable, caller: Caller): Promise<void> {
  await tx`select set_config('kiln.actor', ${actorSetting(caller)}, true)`;
}
