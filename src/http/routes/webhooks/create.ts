// POST /webhooks — a new endpoint in the creating key's billing scope; the answer holds its
// signing secret, shown only here (and by rotate-secret).

import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { CreateWebhookRequest, WebhookEndpointWithSecret } from '../../../webhooks/schemas.ts';
import { createEndpoint } from '../../../webhooks/service.ts';

export default defineRoute<unknown>({
  method: 'POST',
  path: '/webhooks',
  operationId: 'createWebhook',
  summary: 'Create a webhook endpoint',
  description:
    'The endpoint belongs to the billing scope of the key: the workspace for a workspace-bound key, else the account; it receives the events of jobs and runs billed to that scope. ' +
    '`url` must be https, with a host that resolves only to public addresses and no credentials (400 `invalid_request` otherwise). ' +
    '`events` defaults to every type. The answer carries `secret` (Standard Webhooks, `whsec_…`): store it, it is not shown again.',
  tag: 'Webhooks',
  scope: 'write',
  bucket: null,
  body: CreateWebhookRequest,
  success: { status: 201, description: 'The endpoint, with its signing secret.', schema: WebhookEndpointWithSecret, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 413, 415, 429, 503],
  prepare: (ctx, event) => readJson(event, ctx.config.maxBodyBytes),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await createEndpoint(ctx, caller, payload), { status: 201, headers: { 'cache-control': 'no-store' } });
  },
});
