// GET /openapi.json — the OpenAPI 3.1 description generated from the route definitions.

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';

let cached: string | null = null;

export function openApiRoute(build: () => unknown) {
  return defineRoute({
    method: 'GET',
    path: '/openapi.json',
    operationId: 'getOpenApi',
    summary: 'The OpenAPI 3.1 document',
    tag: 'Meta',
    scope: null,
    success: { status: 200, description: 'OpenAPI 3.1.0 document.' },
    errors: [],
    async handler(_ctx, event) {
      cached ??= JSON.stringify(build());
      return sendJson(event, cached, { raw: true, headers: { 'cache-control': 'public, max-age=300' } });
    },
  });
}
