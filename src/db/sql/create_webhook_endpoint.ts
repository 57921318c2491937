// kiln.create_webhook_endpoint: a new endpoint in the creating key's billing scope.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';

/** An endpoint as kiln_private.webhook_endpoint_json renders it (never a secret). */
export interface WebhookEndpointJson {
  id: string;
  url: string;
  events: string[] | null;
  description: string | null;
  enabled: boolean;
  disabledReason: string | null;
  createdAt: string;
}

export function createWebhookEndpoint(sql: Queryable, accountId: string, workspaceId: string | null, url: string, events: string[] | null, description: string | null, secretEnc: Buffer) {
  return sql<Array<{ e: WebhookEndpointJson }>>`select kiln.create_webhook_endpoint(${accountId}::uuid, ${workspaceId}::uuid, ${url}::text,
    ${events === null ? null : pgArray(sql, events, ARRAY_OID.text)}, ${description}::text, ${secretEnc}::bytea) as e`;
}
