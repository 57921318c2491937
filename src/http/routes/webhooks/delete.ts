// DELETE /webhooks/{id} — remove an endpoint and its delivery log; queued attempts are dropped.

import { defineRoute } from '../../route.ts';
import { deleteEndpoint } from '../../../webhooks/service.ts';
import { EndpointIdParam, endpointId } from './_params.ts';

export default defineRoute<string>({
  method: 'DELETE',
  path: '/webhooks/{id}',
  operationId: 'deleteWebhook',
  summary: 'Delete a webhook endpoint',
  description: 'Pending deliveries are not attempted any more. 404 when it does not exist or belongs to another scope. A workspace\'s endpoint: only the member who made it or a workspace owner or admin (else 403 `forbidden`, nothing changes).',
  tag: 'Webhooks',
  scope: 'write',
  bucket: null,
  params: { id: EndpointIdParam },
  success: { status: 204, description: 'Deleted.' },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => endpointId(event),
  async handler(ctx, event, { caller, payload }) {
    await deleteEndpoint(ctx, caller, payload!);
    event.res.status = 204;
    return '';
  },
});
