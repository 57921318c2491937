// Timing of the image transform ops on a 2000x2000 photo-like image, and how compress compares
// with one plain encode. Run: node --import tsx test/bench/images.ts (prints JSON).
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { transformImage, probeImage, type ImageFormat } from '../../src/images/transform.ts';
import { decodeImage } from '../../src/images/decode.ts';
import { compressPixels } from '../../src/images/compress.ts';
import { withEncoder, AVIF_EFFORT, AVIF_SEARCH_EFFORT, WEBP_EFFORT } from '../../src/images/encode.ts';
import { photoLike } from '../../src/images/synth.ts';

const SIZE = 2000;
const COMPRESS_TARGETS: Array<[ImageFormat, number[]]> = [
  ['webp', [120_000, 400_000]],
  ['jpeg', [200_000, 700_000]],
  ['avif', [80_000, 300_000]],
];

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const r = await f();
  return [r, Math.round(performance.now() - t0)];
}

export async function benchImages(): Promise<Record<string, unknown>> {
  const img = photoLike(SIZE, SIZE, 2024);
  const source = await sharp(img.data, { raw: { width: SIZE, height: SIZE, channels: 3 } }).jpeg({ quality: 92 }).toBuffer();
  await transformImage(source, 'convert', { format: 'jpeg', maxDimension: 64 }); // warm-up: load codecs

  const convertMs: Record<string, number> = {};
  const convertBytes: Record<string, number> = {};
  for (const format of ['jpeg', 'webp', 'avif', 'png'] as const) {
    const [r, ms] = await timed(() => transformImage(source, 'convert', { format }));
    convertMs[format] = ms;
    if ('bytes' in r) convertBytes[format] = r.bytes;
  }

  // Compress runs the same path as transformImage (probe, decode once, search) but through the
  // module that reports the chosen quality, so one plain encode at that quality can be timed.
  const runs: Array<Record<string, unknown>> = [];
  const perFormat: Record<string, { encodes: number[]; ratio: number[] }> = {};
  for (const [format, targets] of COMPRESS_TARGETS) {
    for (const target of targets) {
      const [r, ms] = await timed(async () => {
        const info = await probeImage(source);
        const px = await decodeImage(source, info, { flatten: format === 'jpeg' });
        return compressPixels(px, format, target);
      });
      const [, plainMs] = await timed(() => withEncoder(sharp(source), format, r.quality).toBuffer());
      const ratio = Math.round((ms / plainMs) * 100) / 100;
      runs.push({
        format, target, bytes: r.data.length, ofTarget: Math.round((r.data.length / target) * 1000) / 1000,
        withinTarget: r.withinTarget, quality: r.quality, fullEncodes: r.encodes, sampleEncodes: r.trialEncodes,
        ms, plainEncodeMs: plainMs, timeVsPlainEncode: ratio,
      });
      const f = (perFormat[format] ??= { encodes: [], ratio: [] });
      f.encodes.push(r.encodes);
      f.ratio.push(ratio);
    }
  }
  const mean = (xs: number[]) => Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 100) / 100;
  const compressSummary = Object.fromEntries(
    Object.entries(perFormat).map(([f, v]) => [f, { meanFullEncodes: mean(v.encodes), meanTimeVsPlainEncode: mean(v.ratio), maxTimeVsPlainEncode: Math.max(...v.ratio) }]),
  );

  // Trim: the photo inside a 100 px white frame, and the photo itself (nothing to cut).
  const framed = await sharp(source).extend({ top: 100, bottom: 100, left: 100, right: 100, background: '#ffffff' }).jpeg({ quality: 92 }).toBuffer();
  const [cut, trimMs] = await timed(() => transformImage(framed, 'trim', {}));
  const [, trimNothingMs] = await timed(() => transformImage(source, 'trim', {}));

  return {
    image: `${SIZE}x${SIZE} photo-like jpeg, ${source.length} bytes`,
    encoderSettings: { avifEffort: AVIF_EFFORT, avifSearchEffort: AVIF_SEARCH_EFFORT, webpEffort: WEBP_EFFORT, jpeg: 'mozjpeg', png: 'lossless zlib 6 + adaptive filtering' },
    convertMs,
    convertBytes,
    compress: runs,
    compressSummary,
    trimMs: { framed: trimMs, nothingToCut: trimNothingMs, framedResult: 'width' in cut ? `${cut.width}x${cut.height}` : 'not trimmed' },
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(JSON.stringify(await benchImages(), null, 2));
}
