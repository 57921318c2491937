// POST /images/transforms — convert, compress to a byte target, or trim a stored image. Free.

import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { registerSchemas } from '../../../schemas.ts';
import { TransformRequest, TransformResult } from '../../../transforms/schemas.ts';
import { runTransform } from '../../../transforms/service.ts';

registerSchemas({ ImageTransformRequest: TransformRequest, ImageTransformResult: TransformResult });

export default defineRoute({
  method: 'POST',
  path: '/images/transforms',
  operationId: 'transformImage',
  summary: 'Convert, compress or trim a stored image',
  description:
    'Synchronous and free (never billed). The source must be the caller\'s (a path or a URL of this store) or a shared image under `seed/`. ' +
    '`compress` searches encoder quality for the largest output within `targetBytes`; when unreachable, the smallest encode is stored and `withinTarget` is false. ' +
    'A trim that finds no uniform edges returns `trimmed: false`, every other field null, and stores nothing. ' +
    'While the image store is unavailable the answer is 503 `server_error` with `Retry-After`.',
  tag: 'Images',
  scope: 'write',
  bucket: 'transform',
  body: TransformRequest,
  success: { status: 200, description: 'The stored result (public URL).', schema: TransformResult },
  errors: [400, 401, 403, 404, 413, 415, 429, 500, 503],
  async handler(ctx, event, { caller }) {
    // The body is read only for an authorized key.
    const body = await readJson(event, ctx.config.maxBodyBytes);
    const result = await runTransform(ctx, caller, body);
    return sendJson(event, result);
  },
});
