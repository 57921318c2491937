// POST /images/transforms and the transform_image tool: resolve the source in the store
// (owned or seed), run the sharp pipeline, store the result as a public object. Never billed.

import type { Context } from '../context.ts';
import { ApiError, errors } from '../errors.ts';
import { ImageInputError, MAX_SOURCE_BYTES, mediaTypeOf, transformImage } from '../images/transform.ts';
import { parseWith } from '../schemas.ts';
import { getObject, objectPath, publicUrl, putObject, resolveSource } from '../storage/store.ts';
import { TransformRequest, type TransformResultBody } from './schemas.ts';
import { rootOf } from '../root.ts';

/** Bounds concurrent decodes per process: image work is CPU- and memory-heavy. */
class Semaphore {
  private waiting: Array<() => void> = [];
  private active = 0;
  constructor(private limit: number) {}
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((r) => this.waiting.push(r));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}
const gates = new WeakMap<Context, Semaphore>();

const NOT_FOUND = 'Source image not found.';

export async function runTransform(ctx: Context, caller: { accountId: string }, input: unknown): Promise<TransformResultBody> {
  const req = parseWith(TransformRequest, input);
  const path = resolveSource(ctx, caller.accountId, req.source);
  if (!path) throw errors.notFound('Source image');
  const source = await getObject(ctx, path);
  if (!source) throw new ApiError('not_found', NOT_FOUND);
  if (source.bytes > MAX_SOURCE_BYTES) {
    throw errors.invalid(`Source image is larger than 10 MB (${source.bytes} bytes).`);
  }
  let gate = gates.get(rootOf(ctx));
  if (!gate) gates.set(rootOf(ctx), (gate = new Semaphore(ctx.config.transformConcurrency)));
  let out;
  try {
    out = await gate.run(() => transformImage(source.data, req.op, req.options ?? {}));
  } catch (e) {
    if (e instanceof ImageInputError) throw errors.invalid(e.message);
    throw e;
  }
  if (!('data' in out)) {
    return { url: null, path: null, width: null, height: null, bytes: null, format: null, withinTarget: null, trimmed: false };
  }
  const stored = await putObject(ctx, {
    path: objectPath(caller.accountId, 'transforms', out.format),
    owner: caller.accountId,
    data: out.data,
    contentType: mediaTypeOf(out.format),
    format: out.format,
    width: out.width,
    height: out.height,
    visibility: 'public',
  });
  return {
    url: publicUrl(ctx, stored.path),
    path: stored.path,
    width: out.width,
    height: out.height,
    bytes: out.bytes,
    format: out.format,
    withinTarget: req.op === 'compress' ? out.withinTarget : null,
    trimmed: req.op === 'trim' ? true : null,
  };
}
