// Encoder settings per output format, kept in one place so the chosen efforts and the quality
// mapping are stated once (BENCH.md quotes them) and convert/compress/trim encode identically.
import sharp, { type Sharp } from 'sharp';

export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'avif';
export const IMAGE_FORMATS: readonly ImageFormat[] = ['png', 'jpeg', 'webp', 'avif'];

const MEDIA_TYPES: Record<ImageFormat | 'gif' | 'tiff', string> = {
  png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp', avif: 'image/avif', gif: 'image/gif', tiff: 'image/tiff',
};

export function mediaTypeOf(format: ImageFormat | 'gif' | 'tiff'): string {
  return MEDIA_TYPES[format];
}

/** Decoded pixels, 8 bits per channel, sRGB (or grey), already oriented and resized. */
export interface RawPixels {
  data: Buffer;
  width: number;
  height: number;
  channels: 1 | 2 | 3 | 4;
  /** True when there is no alpha channel or every alpha value is 255, so alpha can be dropped. */
  opaque: boolean;
}

/*
 * Chosen encoder settings (the timings behind them: BENCH.md, "Image encoder settings"):
 * - AVIF: effort 3, the last step before aom's slow presets: sharp's default 4 is several times
 *   slower for a few per cent fewer bytes. Compress searches at effort 1 (much faster, with sizes
 *   close enough to effort 3's to predict them) and makes one final encode at effort 3. Not
 *   effort 0: its sizes drift far from effort 3's on flat art (seed logo). Chroma 4:4:4 (sharp's
 *   default) keeps flat colour edges clean.
 * - WebP: effort 4 (libwebp's default).
 * - JPEG: mozjpeg mode (trellis quantisation: much smaller files than plain libjpeg at the same
 *   quality, well worth its time).
 * - PNG lossless: zlib level 6 with adaptive filtering (level 9 was slower and no smaller).
 *   PNG palette (compress only): libimagequant at effort 4 (the default 7 takes markedly longer
 *   for few fewer bytes, too slow when compress makes several encodes).
 * Quality: the API's quality in (0,1] maps linearly to the encoders' integer 1..100 scale
 * (round(q*100), at least 1) for jpeg, webp and avif. PNG convert and trim are always lossless,
 * so quality does not apply to them; PNG compress uses palette quality as its knob (see below).
 */
export const AVIF_EFFORT = 3;
export const AVIF_SEARCH_EFFORT = 1;
export const WEBP_EFFORT = 4;
export const PNG_PALETTE_EFFORT = 4;

/**
 * PNG "quality" scale used by encode(): 1..100 is a palette (<=256 colours, dithered) PNG at that
 * libimagequant quality; PNG_LOSSLESS (101) is the lossless truecolour PNG. Compress to png
 * returns the lossless PNG whenever it fits the target, otherwise searches the palette quality.
 */
export const PNG_LOSSLESS = 101;

export function encoderQuality(quality: number): number {
  return Math.min(100, Math.max(1, Math.round(quality * 100)));
}

export interface EncodeOptions {
  /** AVIF only: encode at the fast search effort instead of the chosen one. */
  search?: boolean;
}

/** Apply the output settings for `format` at encoder quality `q` to any sharp pipeline. */
export function withEncoder(img: Sharp, format: ImageFormat, q: number, opts: EncodeOptions = {}): Sharp {
  switch (format) {
    case 'jpeg':
      return img.jpeg({ quality: q, mozjpeg: true });
    case 'webp':
      return img.webp({ quality: q, effort: WEBP_EFFORT });
    case 'avif':
      return img.avif({ quality: q, effort: opts.search ? AVIF_SEARCH_EFFORT : AVIF_EFFORT });
    case 'png':
      return q >= PNG_LOSSLESS
        ? img.png({ compressionLevel: 6, adaptiveFiltering: true })
        : img.png({ palette: true, quality: q, effort: PNG_PALETTE_EFFORT });
  }
}

/** Encode raw pixels. `q` is on the encoder's 1..100 scale (png: see PNG_LOSSLESS). */
export async function encode(px: RawPixels, format: ImageFormat, q: number, opts: EncodeOptions = {}): Promise<Buffer> {
  let img = sharp(px.data, { raw: { width: px.width, height: px.height, channels: px.channels } });
  // An all-opaque alpha channel still costs bytes in every format; drop it.
  if (px.opaque && (px.channels === 2 || px.channels === 4)) img = img.removeAlpha();
  return withEncoder(img, format, q, opts).toBuffer();
}
