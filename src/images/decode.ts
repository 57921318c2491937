// Safe probing and decoding of untrusted image bytes: every failure caused by the input becomes
// an ImageInputError, and pixel bombs are refused from the header before any pixel is decoded.
import sharp, { type Metadata, type OutputInfo } from 'sharp';
import { ImageInputError } from './errors.ts';
import type { ImageFormat, RawPixels } from './encode.ts';

export const MAX_SOURCE_BYTES = 10 * 1024 * 1024;
/** Decoded-size cap: 50 MP is ~200 MB of RGBA, the most one request may make us hold. */
export const MAX_INPUT_PIXELS = 50_000_000;
/** Effective cap of options.maxDimension (spec, Limits). */
export const MAX_DIMENSION_CAP = 8192;

export type InputFormat = ImageFormat | 'gif' | 'tiff';

export interface ImageInfo { format: InputFormat; width: number; height: number }

// failOn 'warning' turns truncated or damaged data into an error instead of a grey half-image;
// pages 1 decodes only the first frame of animated GIF/WebP.
const SAFE_INPUT = { failOn: 'warning', limitInputPixels: MAX_INPUT_PIXELS, pages: 1, autoOrient: true } as const;

function inputFormat(meta: Metadata): InputFormat | null {
  switch (meta.format) {
    case 'jpeg': case 'png': case 'webp': case 'gif': case 'tiff':
      return meta.format;
    // The bundled libheif decodes AV1 only; HEIC (HEVC) would fail later with a less clear error.
    case 'heif':
      return meta.compression === 'av1' ? 'avif' : null;
    default:
      return null; // SVG, PDF and the rest are refused: they render rather than decode.
  }
}

/** Reads only the header. Dimensions are after EXIF orientation, of the first frame. */
export async function probeImage(buf: Buffer): Promise<ImageInfo> {
  if (!Buffer.isBuffer(buf) || buf.length === 0) throw new ImageInputError('empty image');
  let meta: Metadata;
  try {
    // No pixel limit here so a bomb gets the clear message below rather than sharp's.
    meta = await sharp(buf, { failOn: 'warning', limitInputPixels: false }).metadata();
  } catch (err) {
    throw new ImageInputError('not a decodable image', { cause: err });
  }
  const format = inputFormat(meta);
  if (!format) throw new ImageInputError(`unsupported image format: ${meta.format}`);
  const width = meta.autoOrient?.width ?? meta.width;
  const height = meta.autoOrient?.height ?? meta.height;
  if (!(width > 0 && height > 0)) throw new ImageInputError('image has no dimensions');
  if (width * height > MAX_INPUT_PIXELS) {
    throw new ImageInputError(`image is ${width}x${height}, over the ${MAX_INPUT_PIXELS / 1e6} megapixel limit`);
  }
  return { format, width, height };
}

export interface DecodeOptions {
  /** Longest-edge bound; never enlarges. Already validated and capped by the caller. */
  maxDimension?: number;
  /** Composite onto white (for JPEG, which has no alpha). */
  flatten?: boolean;
}

/** True when there is no alpha channel or every alpha value is 255. */
export function isOpaque(data: Buffer, channels: number): boolean {
  if (channels !== 2 && channels !== 4) return true;
  for (let i = channels - 1; i < data.length; i += channels) if (data[i] !== 255) return false;
  return true;
}

/** Decode once to 8-bit raw pixels that every encode starts from; `info` comes from probeImage. */
export async function decodeImage(buf: Buffer, info: ImageInfo, opts: DecodeOptions = {}): Promise<RawPixels> {
  let img = sharp(buf, SAFE_INPUT);
  if (opts.maxDimension && Math.max(info.width, info.height) > opts.maxDimension) {
    img = img.resize({ width: opts.maxDimension, height: opts.maxDimension, fit: 'inside', withoutEnlargement: true });
  }
  if (opts.flatten) img = img.flatten({ background: '#ffffff' });
  let out: { data: Buffer; info: OutputInfo };
  try {
    out = await img.raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
  } catch (err) {
    throw new ImageInputError('image data is corrupt or unsupported', { cause: err });
  }
  const channels = out.info.channels as RawPixels['channels'];
  return { data: out.data, width: out.info.width, height: out.info.height, channels, opaque: isOpaque(out.data, channels) };
}
