// The compress op: decode once, search encoder quality for the largest encode <= targetBytes.
// AVIF searches at a fast effort, then makes one encode at the chosen effort aimed at the target.
import { encode, PNG_LOSSLESS, type ImageFormat, type RawPixels } from './encode.ts';
import { sampleMosaic } from './sample.ts';
import { AIM, PRIOR_DENSITY, searchQuality } from './search.ts';

/** A plain bisection over 1..100 needs 7 encodes; never spend more at full size. */
export const MAX_FULL_ENCODES = 7;
/**
 * Lossless sizes predicted from the sample are trusted only to within this factor: tile borders
 * inflate the mosaic of flat art a lot, and a lossless encode is cheap next to palette ones.
 */
const LOSSLESS_MARGIN = 1 / 3;

export interface CompressResult { data: Buffer; quality: number; withinTarget: boolean; encodes: number; trialEncodes: number }

export async function compressPixels(px: RawPixels, format: ImageFormat, target: number): Promise<CompressResult> {
  const avif = format === 'avif';
  const sample = sampleMosaic(px);
  let spent = 0;
  if (format === 'png') {
    // Lossless PNG is the best quality there is, and for flat art it can even be smaller than
    // any dithered palette, so it wins whenever it fits; the palette search only runs if not.
    // Try it at full size only when the sample says it might fit (photos are far over).
    let mayFit = true;
    if (sample) {
      const [s, o] = await Promise.all([encode(sample.pixels, format, PNG_LOSSLESS), encode(sample.tiny, format, PNG_LOSSLESS)]);
      mayFit = (s.length - o.length) * sample.scale * PRIOR_DENSITY * LOSSLESS_MARGIN + o.length <= target;
    }
    if (mayFit) {
      const data = await encode(px, format, PNG_LOSSLESS);
      spent = 1;
      if (data.length <= target) return { data, quality: PNG_LOSSLESS, withinTarget: true, encodes: 1, trialEncodes: sample ? 1 : 0 };
    }
  }
  const search = await searchQuality({
    target,
    qmin: 1,
    qmax: 100,
    full: (q) => encode(px, format, q, { search: avif }),
    trial: sample ? (q) => encode(sample.pixels, format, q, { search: avif }) : undefined,
    overhead: sample ? (q) => encode(sample.tiny, format, q, { search: avif }) : undefined,
    scale: sample?.scale ?? 1,
    saturates: format === 'png',
    // AVIF keeps one encode for the final effort.
    maxFull: MAX_FULL_ENCODES - spent - (avif ? 1 : 0),
  });
  let result: CompressResult = {
    data: search.data, quality: search.q, withinTarget: search.withinTarget,
    encodes: spent + search.fullEncodes, trialEncodes: search.trialEncodes + (sample && format === 'png' ? 1 : 0),
  };
  if (!avif) return result;

  // The chosen effort packs the same quality into fewer bytes. Estimate how many fewer on the
  // sample, and raise quality along the measured log-bytes slope so the final encode lands
  // near the target instead of wasting the difference.
  let q = search.q;
  if (search.withinTarget) {
    let ratio = 1;
    if (sample) {
      const [slow, fast] = await Promise.all([
        encode(sample.pixels, format, q),
        search.trialBytes.get(q) ?? encode(sample.pixels, format, q, { search: true }).then((b) => b.length),
      ]);
      result.trialEncodes++;
      ratio = slow.length / fast;
    }
    // Only ever raised: the final encode must not be worse than the one it may replace.
    const slope = logSlope(search.fullPoints, search.trialBytes, q);
    if (slope > 0) q = Math.min(100, Math.max(q, Math.floor(q + Math.log((AIM * target) / (ratio * search.data.length)) / slope)));
  }
  const data = await encode(px, format, q);
  result.encodes++;
  const fits = data.length <= target;
  // The final encode wins whenever it fits: it is at the chosen effort and at a quality no lower
  // than the search's. Otherwise keep the search's fitting encode; if nothing fits, the smaller.
  if (fits || (!result.withinTarget && data.length < result.data.length)) {
    result = { ...result, data, quality: q, withinTarget: fits };
  }
  return result;
}

/** d log(bytes) / d quality near q: from the full encodes bracketing q, else from the sample. */
function logSlope(full: Array<[number, number]>, trial: Map<number, number>, q: number): number {
  const slopeOf = (pts: Array<[number, number]>) => {
    const below = pts.filter(([k]) => k <= q).sort((a, b) => b[0] - a[0])[0];
    const above = pts.filter(([k]) => k > q).sort((a, b) => a[0] - b[0])[0];
    if (!below || !above) return 0;
    return (Math.log(above[1]) - Math.log(below[1])) / (above[0] - below[0]);
  };
  return slopeOf(full) || slopeOf([...trial.entries()]) || 0.02;
}
