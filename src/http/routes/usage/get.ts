// GET /usage — tier, personal budget and, for workspace-bound keys, the Team pool.

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { Usage, usageCall } from '../../../billing/usage.ts';


export default defineRoute({
  method: 'GET',
  path: '/usage',
  operationId: 'getUsage',
  summary: 'Read plan tier, budget and usage',
  description: 'Intended as a pre-flight check before generating.',
  tag: 'Usage',
  scope: 'read',
  bucket: 'read',
  // Authorization, rate limit and the usage read in one round trip.
  call: usageCall,
  success: { status: 200, description: 'Usage for the key\'s billing scope.', schema: Usage, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [401, 403, 429, 503],
  async handler(_ctx, event, { row }) {
    return sendJson(event, row!.usage, { raw: true, headers: { 'cache-control': 'no-store' } });
  },
});
