// Request and result of POST /images/transforms (also the transform_image MCP tool).

import * as v from 'valibot';
import { MAX_DIMENSION_CAP } from '../images/transform.ts';

const Format = v.picklist(['png', 'jpeg', 'webp', 'avif'], 'must be one of png, jpeg, webp, avif');

export const TransformOptionsSchema = v.strictObject({
  format: v.optional(v.pipe(Format, v.description('Required for `convert`; `compress` defaults to `webp`; ignored by `trim`.'))),
  quality: v.optional(
    v.pipe(v.number('must be a number'), v.gtValue(0, 'must be greater than 0'), v.maxValue(1, 'must be at most 1'), v.description('Encoder quality for `convert`, in (0, 1]. Default 0.9.')),
  ),
  targetBytes: v.optional(
    v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(10_240, 'must be at least 10240'), v.maxValue(10_485_760, 'must be at most 10485760'),
      v.description('Byte budget for `compress` (required there).')),
  ),
  maxDimension: v.optional(
    v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'),
      v.description(`Bounds the longest output edge; capped at ${MAX_DIMENSION_CAP}; never enlarges.`)),
  ),
});

export const TransformRequest = v.pipe(
  v.strictObject({
    source: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'must not be empty'),
      v.maxLength(2048, 'is too long'),
      v.description('A store path, or a public or signed URL of this store, that the caller owns; or a shared image under `seed/`.'),
    ),
    op: v.picklist(['convert', 'compress', 'trim'], 'must be one of convert, compress, trim'),
    options: v.optional(TransformOptionsSchema),
  }),
  v.check((r) => r.op !== 'convert' || !!r.options?.format, 'options.format is required for convert'),
  v.check((r) => r.op !== 'compress' || r.options?.targetBytes !== undefined, 'options.targetBytes is required for compress'),
);
export type TransformRequestInput = v.InferInput<typeof TransformRequest>;

const nullableInt = (d: string) => v.pipe(v.nullable(v.pipe(v.number(), v.integer())), v.description(d));

export const TransformResult = v.object({
  url: v.pipe(v.nullable(v.string()), v.description('Public URL of the stored result; null when a trim found nothing to cut.')),
  path: v.pipe(v.nullable(v.string()), v.description('Bucket-relative storage path.')),
  width: nullableInt('Pixels.'),
  height: nullableInt('Pixels.'),
  bytes: nullableInt('Output size in bytes.'),
  format: v.nullable(v.picklist(['png', 'jpeg', 'webp', 'avif'])),
  withinTarget: v.pipe(v.nullable(v.boolean()), v.description('compress only: false when targetBytes could not be reached and the smallest encode was stored.')),
  trimmed: v.pipe(v.nullable(v.boolean()), v.description('trim only: false when no uniform edges were found (nothing stored).')),
});
export type TransformResultBody = v.InferOutput<typeof TransformResult>;
