// Pure image-processing core of POST /images/transforms: convert, compress, trim on bytes in,
// bytes out. No HTTP or storage here; input problems surface as ImageInputError (a 400).
import { compressPixels } from './compress.ts';
import { decodeImage, MAX_DIMENSION_CAP, MAX_SOURCE_BYTES, probeImage } from './decode.ts';
import { encode, encoderQuality, IMAGE_FORMATS, PNG_LOSSLESS, type ImageFormat, type RawPixels } from './encode.ts';
import { ImageInputError } from './errors.ts';
import { trimPixels } from './trim.ts';

export { ImageInputError } from './errors.ts';
export { probeImage, MAX_SOURCE_BYTES, MAX_INPUT_PIXELS, MAX_DIMENSION_CAP, type ImageInfo, type InputFormat } from './decode.ts';
export { mediaTypeOf, IMAGE_FORMATS, type ImageFormat } from './encode.ts';
export { TRIM_THRESHOLD } from './trim.ts';

export type TransformOp = 'convert' | 'compress' | 'trim';
export const TRANSFORM_OPS: readonly TransformOp[] = ['convert', 'compress', 'trim'];

export interface TransformOptions { format?: ImageFormat; quality?: number; targetBytes?: number; maxDimension?: number }

export interface TransformOutput {
  data: Buffer;
  format: ImageFormat;
  width: number;
  height: number;
  bytes: number;
  /** compress only: false when even the lowest quality is over targetBytes (data is then the smallest encode). */
  withinTarget: boolean | null;
  /** trim only: true (a trim that cuts nothing returns { trimmed: false } instead). */
  trimmed: boolean | null;
  /**
   * Encoder calls made at full size: 1 for convert and trim; for compress every full-size try,
   * AVIF's fast-effort search encodes included. Compress also encodes a small tile sample of the
   * image a few times to steer the search; those cheap calls are not counted here.
   */
  encodes: number;
}

export const DEFAULT_QUALITY = 0.9;
export const MIN_TARGET_BYTES = 10_240;
export const MAX_TARGET_BYTES = 10_485_760;

// Largest edge each encoder accepts (measured on the bundled libvips).
const MAX_EDGE: Record<ImageFormat, number> = { webp: 16383, avif: 16384, jpeg: 65500, png: 1 << 30 };

interface Checked { format?: ImageFormat; quality: number; targetBytes?: number; maxDimension?: number }

function checkOptions(op: TransformOp, o: TransformOptions | undefined): Checked {
  const opts = o ?? {};
  if (typeof opts !== 'object') throw new ImageInputError('options must be an object');
  const out: Checked = { quality: DEFAULT_QUALITY };
  if (op !== 'trim' && opts.format !== undefined) {
    if (!IMAGE_FORMATS.includes(opts.format)) throw new ImageInputError(`format must be one of ${IMAGE_FORMATS.join(', ')}`);
    out.format = opts.format;
  }
  if (opts.quality !== undefined) {
    if (typeof opts.quality !== 'number' || !(opts.quality > 0 && opts.quality <= 1)) {
      throw new ImageInputError('quality must be greater than 0 and at most 1');
    }
    out.quality = opts.quality;
  }
  if (opts.maxDimension !== undefined) {
    if (!Number.isInteger(opts.maxDimension) || opts.maxDimension < 1) throw new ImageInputError('maxDimension must be an integer of at least 1');
    out.maxDimension = Math.min(opts.maxDimension, MAX_DIMENSION_CAP);
  }
  if (op === 'convert' && !out.format) throw new ImageInputError('options.format is required for convert');
  if (op === 'compress') {
    const t = opts.targetBytes;
    if (t === undefined) throw new ImageInputError('options.targetBytes is required for compress');
    if (!Number.isInteger(t) || t < MIN_TARGET_BYTES || t > MAX_TARGET_BYTES) {
      throw new ImageInputError(`targetBytes must be an integer from ${MIN_TARGET_BYTES} to ${MAX_TARGET_BYTES}`);
    }
    out.targetBytes = t;
    out.format ??= 'webp';
  }
  return out;
}

/** Output size after the maxDimension bound (sharp's fit 'inside' rounding), refused if the encoder cannot write it. */
function checkOutputSize(info: { width: number; height: number }, format: ImageFormat, maxDimension?: number): void {
  let { width, height } = info;
  if (maxDimension && Math.max(width, height) > maxDimension) {
    const s = maxDimension / Math.max(width, height);
    width = Math.max(1, Math.round(width * s));
    height = Math.max(1, Math.round(height * s));
  }
  if (Math.max(width, height) > MAX_EDGE[format]) {
    throw new ImageInputError(`${format} output is limited to ${MAX_EDGE[format]} px per edge; set maxDimension`);
  }
}

function output(data: Buffer, format: ImageFormat, px: RawPixels, extra: Pick<TransformOutput, 'withinTarget' | 'trimmed' | 'encodes'>): TransformOutput {
  return { data, format, width: px.width, height: px.height, bytes: data.length, ...extra };
}

export async function transformImage(
  input: Buffer,
  op: TransformOp,
  options: TransformOptions,
): Promise<TransformOutput | { trimmed: false }> {
  if (!TRANSFORM_OPS.includes(op)) throw new ImageInputError(`op must be one of ${TRANSFORM_OPS.join(', ')}`);
  const opts = checkOptions(op, options);
  if (!Buffer.isBuffer(input) || input.length === 0) throw new ImageInputError('empty image');
  if (input.length > MAX_SOURCE_BYTES) throw new ImageInputError('source image is larger than 10 MB');
  const info = await probeImage(input);

  if (op === 'convert' || op === 'compress') {
    const format = opts.format!;
    checkOutputSize(info, format, opts.maxDimension);
    const px = await decodeImage(input, info, { maxDimension: opts.maxDimension, flatten: format === 'jpeg' });
    if (op === 'convert') {
      const data = await encode(px, format, format === 'png' ? PNG_LOSSLESS : encoderQuality(opts.quality));
      return output(data, format, px, { withinTarget: null, trimmed: null, encodes: 1 });
    }
    const r = await compressPixels(px, format, opts.targetBytes!);
    return output(r.data, format, px, { withinTarget: r.withinTarget, trimmed: null, encodes: r.encodes });
  }

  // trim: keep the input's format when we can write it; gif/tiff become png.
  const format: ImageFormat = (IMAGE_FORMATS as readonly string[]).includes(info.format) ? (info.format as ImageFormat) : 'png';
  const px = await decodeImage(input, info, { flatten: format === 'jpeg' });
  const trimmed = await trimPixels(px, opts.maxDimension);
  if (!trimmed) return { trimmed: false };
  checkOutputSize(trimmed, format);
  // Trim re-encodes at the default quality (quality applies to convert only); png stays lossless.
  const data = await encode(trimmed, format, format === 'png' ? PNG_LOSSLESS : encoderQuality(DEFAULT_QUALITY));
  return output(data, format, trimmed, { withinTarget: null, trimmed: true, encodes: 1 });
}
