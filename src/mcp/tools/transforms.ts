// transform_image: the REST transform service (free, synchronous) on the account's transform bucket,
// the same bucket POST /images/transforms and the application's image tools draw on.
import type * as v from 'valibot';
import type { Context } from '../../context.ts';
import { TransformRequest, TransformResult, type TransformResultBody } from '../../transforms/schemas.ts';
import { runTransform } from '../../transforms/service.ts';
import type { ToolDef } from '../tool-server.ts';
import { defineTool } from './common.ts';

export function transformImageTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'transform_image',
    title: 'Transform an image',
    description:
      'Convert (png, jpeg, webp, avif), compress to a byte target (targetBytes, binary search on quality) or trim uniform edges of a stored image: ' +
      'a completed generation\'s image URL, a store path or URL you own, or a shared image under seed/. ' +
      'Free (never billed) and synchronous; stores the result under your account and returns its public URL. ' +
      'A trim that finds nothing to cut returns trimmed: false and stores nothing.',
    input: TransformRequest,
    output: TransformResult,
    // Writes a new object (never overwrites one); purely local image processing.
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false, idempotentHint: false },
    // The transform bucket, shared with POST /images/transforms and the application's image tools.
    bucket: 'transform',
    async handler(caller, args: v.InferInput<typeof TransformRequest>, ctx) {
      const result = await runTransform(ctx, caller, args);
      return { structuredContent: result, text: transformText(result) };
    },
  });
}

function transformText(r: TransformResultBody): string {
  if (!r.url) return 'Nothing to trim: the image has no uniform edges; nothing was stored.';
  const target = r.withinTarget === false ? ' The byte target could not be reached; the smallest possible encode was stored.' : '';
  return `Stored a ${r.width}×${r.height} ${r.format} (${r.bytes} bytes) at ${r.url}.${target}`;
}
