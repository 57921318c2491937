// Who made a change, for the audit log. Triggers write the entries (the table's changes are the
// record, whatever door they came through); the request that makes a change names its actor in a
// transaction-local setting first. Without one, an entry's actor is the operator.

import type { Context } from '../context.ts';
import type { Queryable } from '../db/pool.ts';
import type { Caller } from './access.ts';

/**
 * An actor that is no resolved Caller: the identity an SSO sign-in is for, the session a sign-out
 * ends (kiln.end_session adds its id).
 */
export interface Actor {
  type: 'identity' | 'session';
  id?: string;
  ip?: string;
  requestId?: string;
}

/** The `kiln.actor` setting of a caller: what an audit entry records about who and from where. */
export function actorSetting(who: Caller | Actor): string {
  if (!('accountId' in who)) {
    return JSON.stringify({ type: who.type, ...(who.id === undefined ? {} : { id: who.id }), ip: who.ip ?? null, requestId: who.requestId ?? null });
  }
  const type = who.via ?? (who.origin === 'mcp' ? 'identity' : 'key');
  return JSON.stringify({
    type,
    id: who.keyId ?? who.accountId,
    ip: who.ip ?? null,
    requestId: who.requestId ?? null,
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

/** Names the caller (or an actor without one) as the actor of the rest of an open transaction. */
export async function actAs(tx: Queryable, who: Caller | Actor): Promise<void> {
  await tx`select set_config('kiln.actor', ${actorSetting(who)}, true)`;
}
