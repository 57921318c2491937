// A small mosaic of full-resolution tiles cut from the decoded image, which compress encodes to learn
// how bytes vary with quality. Tiles keep the image's real detail and grain per pixel; a downscaled
// copy would average the grain away and mispredict the curve's shape.
import type { RawPixels } from './encode.ts';

/** Below this many pixels the image itself is cheap enough to be its own model. */
export const MIN_SAMPLED_PIXELS = 16_384;

export interface Sample {
  pixels: RawPixels;
  /** An 8x8 corner of the image: its encode size is the format's fixed per-file overhead. */
  tiny: RawPixels;
  /** full pixels / sample pixels */
  scale: number;
}

function corner(px: RawPixels, t: number): RawPixels {
  const data = Buffer.alloc(t * t * px.channels);
  for (let y = 0; y < t; y++) px.data.copy(data, y * t * px.channels, y * px.width * px.channels, (y * px.width + t) * px.channels);
  return { data, width: t, height: t, channels: px.channels, opaque: px.opaque };
}

export function sampleMosaic(px: RawPixels, fraction = 1 / 20): Sample | null {
  const { width: w, height: h, channels: c } = px;
  const total = w * h;
  if (total < MIN_SAMPLED_PIXELS) return null;
  // Small images get a larger share (up to a quarter): their encodes are cheap anyway.
  const want = Math.min(262_144, Math.max(Math.min(16_384, total / 4), total * fraction));
  // Largest tile that still gives 16+ tiles spread over the image; 64 matches AVIF superblocks
  // and is a multiple of JPEG MCUs and WebP macroblocks, so tile borders fall on block borders.
  for (const t of [64, 32, 16]) {
    const cols = Math.floor(w / t);
    const rows = Math.floor(h / t);
    const n = Math.round(want / (t * t));
    if (n < 16 && t > 16) continue;
    const sc = Math.min(cols, Math.max(1, Math.round(Math.sqrt((n * w) / h))));
    const sr = Math.min(rows, Math.max(1, Math.round(n / sc)));
    if (sc * sr < 4 || sc * sr * t * t > total / 2) continue;
    const mw = sc * t;
    const mh = sr * t;
    const data = Buffer.alloc(mw * mh * c);
    const rowBytes = t * c;
    for (let j = 0; j < sr; j++) {
      // Stratified: one tile from the middle of each grid cell, aligned to 16 px.
      const y0 = Math.min(h - t, Math.max(0, Math.round(((j + 0.5) * h) / sr - t / 2) & ~15));
      for (let i = 0; i < sc; i++) {
        const x0 = Math.min(w - t, Math.max(0, Math.round(((i + 0.5) * w) / sc - t / 2) & ~15));
        for (let y = 0; y < t; y++) {
          const src = ((y0 + y) * w + x0) * c;
          px.data.copy(data, ((j * t + y) * mw + i * t) * c, src, src + rowBytes);
        }
      }
    }
    return {
      pixels: { data, width: mw, height: mh, channels: c, opaque: px.opaque },
      tiny: corner(px, 8),
      scale: total / (mw * mh),
    };
  }
  return null;
}
