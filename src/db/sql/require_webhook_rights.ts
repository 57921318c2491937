// kiln.require_webhook_rights: KF002 unless the caller may change a workspace's webhook endpoint
// (the member who made it, or an owner or admin). Run in the change's own transaction.

import type { Queryable } from '../pool.ts';

export function requireWebhookRights(sql: Queryable, accountId: string, workspaceId: string | null, id: string) {
  return sql`select kiln.require_webhook_rights(${accountId}::uuid, ${workspaceId}::uuid, ${id}::uuid)`;
}
