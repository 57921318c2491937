// The trim op's pixel work: cut uniform edges (colour of the top-left pixel, within a tolerance;
// transparent margins count as uniform too), then apply the maxDimension bound.
import sharp from 'sharp';
import { isOpaque } from './decode.ts';
import type { RawPixels } from './encode.ts';

/** How far (0-255 per channel) a pixel may differ from the corner and still count as margin. */
export const TRIM_THRESHOLD = 10;

const rawInput = (px: RawPixels) => ({ raw: { width: px.width, height: px.height, channels: px.channels } });

/** The trimmed pixels, or null when there is nothing to cut. */
export async function trimPixels(px: RawPixels, maxDimension?: number): Promise<RawPixels | null> {
  const cut = await sharp(px.data, rawInput(px))
    // lineArt skips sharp's smoothing pass: far faster on large images (BENCH.md) and exact on
    // flat margins; the threshold still absorbs JPEG noise in them.
    .trim({ threshold: TRIM_THRESHOLD, lineArt: true })
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (cut.info.width === px.width && cut.info.height === px.height) return null;
  let out: RawPixels = { ...px, data: cut.data, width: cut.info.width, height: cut.info.height };
  if (maxDimension && Math.max(out.width, out.height) > maxDimension) {
    const r = await sharp(out.data, rawInput(out))
      .resize({ width: maxDimension, height: maxDimension, fit: 'inside', withoutEnlargement: true })
      .raw()
      .toBuffer({ resolveWithObject: true });
    out = { ...out, data: r.data, width: r.info.width, height: r.info.height };
  }
  // Cutting transparent margins often leaves an image that is opaque after all.
  out.opaque = px.opaque || isOpaque(out.data, out.channels);
  return out;
}
