// Tests for the image transform core (convert, compress, trim, safe decoding) on the seed images
// and on synthetic ones. Run: node --import tsx --test test/images.transform.test.ts
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import {
  transformImage, probeImage, mediaTypeOf, ImageInputError, MAX_SOURCE_BYTES,
  type ImageFormat, type TransformOutput, type TransformOptions,
} from '../src/images/transform.ts';
import { decodeImage } from '../src/images/decode.ts';
import { encode, PNG_LOSSLESS } from '../src/images/encode.ts';
import { logoLike, prng, type RawImage } from '../src/images/synth.ts';

const seed = (name: string) => readFile(new URL(`../db/seed/${name}`, import.meta.url));
const fromRaw = (img: RawImage) => sharp(img.data, { raw: { width: img.width, height: img.height, channels: img.channels } });
const FORMATS: ImageFormat[] = ['png', 'jpeg', 'webp', 'avif'];

async function run(input: Buffer, op: 'convert' | 'compress' | 'trim', options: TransformOptions): Promise<TransformOutput> {
  const r = await transformImage(input, op, options);
  assert.ok('data' in r, `${op} returned no image`);
  return r;
}

/** Re-probe the output with sharp itself: the reported format, size and byte count must be true. */
async function assertOutput(r: TransformOutput, format: ImageFormat, width?: number, height?: number) {
  const m = await sharp(r.data).metadata();
  assert.equal(m.format === 'heif' && m.compression === 'av1' ? 'avif' : m.format, format);
  assert.equal(r.format, format);
  assert.equal(r.bytes, r.data.length);
  assert.equal(m.width, r.width);
  assert.equal(m.height, r.height);
  if (width !== undefined) assert.equal(r.width, width);
  if (height !== undefined) assert.equal(r.height, height);
}

async function rejects(p: Promise<unknown>, pattern?: RegExp) {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof ImageInputError, `expected ImageInputError, got ${err}`);
    if (pattern) assert.match((err as Error).message, pattern);
    return true;
  });
}

test('probeImage and mediaTypeOf', async () => {
  assert.deepEqual(await probeImage(await seed('photo.jpg')), { format: 'jpeg', width: 1200, height: 800 });
  assert.deepEqual(await probeImage(await seed('logo.png')), { format: 'png', width: 640, height: 360 });
  assert.deepEqual(await probeImage(await seed('transparent.png')), { format: 'png', width: 512, height: 512 });
  const avif = await sharp(await seed('logo.png')).avif({ effort: 0 }).toBuffer();
  assert.deepEqual(await probeImage(avif), { format: 'avif', width: 640, height: 360 });
  assert.equal(mediaTypeOf('jpeg'), 'image/jpeg');
  assert.equal(mediaTypeOf('avif'), 'image/avif');
  await rejects(probeImage(Buffer.from('not an image')));
});

test('seed images are present and small', async () => {
  for (const name of ['photo.jpg', 'logo.png', 'transparent.png']) {
    const buf = await seed(name);
    assert.ok(buf.length < 500_000, `${name} is ${buf.length} bytes`);
  }
});

test('convert: every seed to every format keeps dimensions and reports true format and bytes', async () => {
  for (const name of ['photo.jpg', 'logo.png', 'transparent.png']) {
    const input = await seed(name);
    const { width, height } = await probeImage(input);
    for (const format of FORMATS) {
      const r = await run(input, 'convert', { format });
      await assertOutput(r, format, width, height);
      assert.equal(r.withinTarget, null);
      assert.equal(r.trimmed, null);
      assert.equal(r.encodes, 1);
    }
  }
});

test('convert: alpha is kept where the format has it and flattened onto white for jpeg', async () => {
  const input = await seed('transparent.png');
  const png = await run(input, 'convert', { format: 'png' });
  const webp = await run(input, 'convert', { format: 'webp' });
  assert.equal((await sharp(png.data).metadata()).hasAlpha, true);
  assert.equal((await sharp(webp.data).metadata()).hasAlpha, true);
  const jpeg = await run(input, 'convert', { format: 'jpeg' });
  const { data, info } = await sharp(jpeg.data).raw().toBuffer({ resolveWithObject: true });
  assert.equal(info.channels, 3);
  assert.ok(data[0] > 245 && data[1] > 245 && data[2] > 245, 'transparent corner became white');
  // Opaque input with an alpha channel: alpha is dropped, not stored.
  const opaque = await sharp(await seed('logo.png')).ensureAlpha().png().toBuffer();
  const o = await run(opaque, 'convert', { format: 'webp' });
  assert.equal((await sharp(o.data).metadata()).hasAlpha, false);
});

test('convert: maxDimension bounds the longest edge and never enlarges', async () => {
  const input = await seed('photo.jpg');
  await assertOutput(await run(input, 'convert', { format: 'webp', maxDimension: 300 }), 'webp', 300, 200);
  await assertOutput(await run(input, 'convert', { format: 'png', maxDimension: 1200 }), 'png', 1200, 800);
  await assertOutput(await run(input, 'convert', { format: 'jpeg', maxDimension: 5000 }), 'jpeg', 1200, 800);
  const tall = await sharp(await seed('logo.png')).rotate(90).png().toBuffer();
  await assertOutput(await run(tall, 'convert', { format: 'jpeg', maxDimension: 90 }), 'jpeg', 51, 90);
  // Above the 8192 cap the cap applies.
  const wide = await sharp({ create: { width: 9000, height: 20, channels: 3, background: '#369' } }).png().toBuffer();
  await assertOutput(await run(wide, 'convert', { format: 'png', maxDimension: 20000 }), 'png', 8192, 18);
});

test('convert: quality changes size', async () => {
  const input = await seed('photo.jpg');
  for (const format of ['jpeg', 'webp', 'avif'] as const) {
    const low = await run(input, 'convert', { format, quality: 0.3, maxDimension: 600 });
    const dflt = await run(input, 'convert', { format, maxDimension: 600 });
    const high = await run(input, 'convert', { format, quality: 1, maxDimension: 600 });
    assert.ok(low.bytes < dflt.bytes && dflt.bytes < high.bytes, `${format}: ${low.bytes} < ${dflt.bytes} < ${high.bytes}`);
  }
});

test('convert: EXIF orientation is applied, and only the first frame of an animation is used', async () => {
  const sideways = await sharp({ create: { width: 40, height: 20, channels: 3, background: '#c33' } })
    .jpeg().withMetadata({ orientation: 6 }).toBuffer();
  assert.deepEqual(await probeImage(sideways), { format: 'jpeg', width: 20, height: 40 });
  await assertOutput(await run(sideways, 'convert', { format: 'png' }), 'png', 20, 40);

  const frame = (c: string) => sharp({ create: { width: 30, height: 20, channels: 3, background: c } }).png().toBuffer();
  const gif = await sharp([await frame('#00ff00'), await frame('#0000ff')], { join: { animated: true } }).gif().toBuffer();
  const r = await run(gif, 'convert', { format: 'png' });
  await assertOutput(r, 'png', 30, 20);
  const { data } = await sharp(r.data).raw().toBuffer({ resolveWithObject: true });
  assert.ok(data[1] > 200 && data[2] < 50, 'first (green) frame');
});

test('convert: grey, 16-bit, CMYK, TIFF, GIF, WebP and AVIF inputs all decode', async () => {
  const photo = () => sharp(new URL('../db/seed/photo.jpg', import.meta.url).pathname).resize(240);
  const alpha = () => sharp(new URL('../db/seed/transparent.png', import.meta.url).pathname).resize(128);
  const inputs: Record<string, Buffer> = {
    grey: await photo().greyscale().png().toBuffer(),
    greyAlpha: await alpha().greyscale().png().toBuffer(),
    png16: await photo().toColourspace('rgb16').png().toBuffer(),
    cmyk: await photo().toColourspace('cmyk').jpeg().toBuffer(),
    tiff: await photo().tiff().toBuffer(),
    gif: await alpha().gif().toBuffer(),
    webp: await alpha().webp().toBuffer(),
    avif: await alpha().avif({ effort: 0 }).toBuffer(),
  };
  for (const [name, input] of Object.entries(inputs)) {
    const { width, height } = await probeImage(input);
    for (const format of ['png', 'webp'] as const) {
      await assertOutput(await run(input, 'convert', { format }), format, width, height);
    }
    assert.ok(width > 0 && height > 0, name);
  }
});

// Compress is checked against brute force: every integer quality 1..100 of the same encoder on
// the same pixels. Images are kept small so the whole file stays well under a minute.
interface Case { name: string; input: Buffer; maxDimension?: number; format: ImageFormat; targets: number[] }

async function bruteForce(c: Case) {
  const px = await decodeImage(c.input, await probeImage(c.input), { maxDimension: c.maxDimension, flatten: c.format === 'jpeg' });
  const sizes: number[] = [];
  const qs = Array.from({ length: 100 }, (_, i) => i + 1);
  for (let i = 0; i < qs.length; i += 4) {
    // A few at a time: single encodes do not keep both cores busy.
    const batch = await Promise.all(qs.slice(i, i + 4).map((q) => encode(px, c.format, q)));
    sizes.push(...batch.map((b) => b.length));
  }
  const lossless = c.format === 'png' ? (await encode(px, 'png', PNG_LOSSLESS)).length : Infinity;
  return { sizes, lossless };
}

test('compress: result <= target and >= 95% of the best any quality reaches; fewer encodes than bisection', async (t) => {
  const photo = await seed('photo.jpg');
  const cases: Case[] = [
    { name: 'photo 640', input: photo, maxDimension: 640, format: 'webp', targets: [12_000, 30_000, 70_000] },
    { name: 'photo 640', input: photo, maxDimension: 640, format: 'jpeg', targets: [15_000, 45_000, 120_000] },
    { name: 'photo 320', input: photo, maxDimension: 320, format: 'avif', targets: [12_000, 25_000] },
    // png: palette quality is the knob; the lossless PNG wins whenever it fits (second target).
    { name: 'photo 400', input: photo, maxDimension: 400, format: 'png', targets: [40_000, 200_000] },
    { name: 'logo', input: await seed('logo.png'), format: 'jpeg', targets: [12_000, 20_000] },
    { name: 'transparent', input: await seed('transparent.png'), format: 'webp', targets: [12_000] },
  ];
  const encodes: number[] = [];
  for (const c of cases) {
    const { sizes, lossless } = await bruteForce(c);
    for (const target of c.targets) {
      const r = await run(c.input, 'compress', { format: c.format, targetBytes: target, maxDimension: c.maxDimension });
      const label = `${c.name} ${c.format} @${target}: got ${r.bytes}`;
      await assertOutput(r, c.format);
      assert.equal(r.withinTarget, true, label);
      assert.ok(r.bytes <= target, label);
      if (lossless <= target) {
        assert.equal(r.bytes, lossless, `${label}, lossless png fits so it wins`);
        t.diagnostic(`${label} = the lossless png, ${r.encodes} encodes`);
      } else {
        const best = Math.max(...sizes.filter((n) => n <= target));
        assert.ok(r.bytes >= 0.95 * best, `${label}, best of brute force ${best}`);
        t.diagnostic(`${label} = ${(r.bytes / best).toFixed(3)} of brute-force best, ${r.encodes} encodes`);
      }
      assert.ok(r.encodes >= 1 && r.encodes < 7, `${label} in ${r.encodes} encodes`);
      encodes.push(r.encodes);
    }
  }
  const mean = encodes.reduce((a, b) => a + b, 0) / encodes.length;
  t.diagnostic(`mean full-size encodes ${mean.toFixed(2)} (plain bisection: 7)`);
  assert.ok(mean <= 4, `mean ${mean} full-size encodes`);
});

test('compress: defaults to webp, honours maxDimension, never downscales on its own', async () => {
  const input = await seed('photo.jpg');
  const r = await run(input, 'compress', { targetBytes: 10_240 });
  await assertOutput(r, 'webp', 1200, 800);
  assert.equal(r.withinTarget, true);
  const s = await run(input, 'compress', { targetBytes: 50_000, maxDimension: 500 });
  await assertOutput(s, 'webp', 500, 333);
  assert.ok(s.bytes <= 50_000);
});

test('compress: an unreachable target returns the smallest encode with withinTarget false', async () => {
  const rand = prng(5);
  const noise = Buffer.alloc(512 * 512 * 3);
  for (let i = 0; i < noise.length; i++) noise[i] = rand() * 256;
  const input = await sharp(noise, { raw: { width: 512, height: 512, channels: 3 } }).png().toBuffer();
  const px = await decodeImage(input, await probeImage(input));
  for (const format of ['webp', 'png'] as const) {
    const r = await run(input, 'compress', { format, targetBytes: 10_240 });
    await assertOutput(r, format, 512, 512);
    assert.equal(r.withinTarget, false);
    assert.equal(r.bytes, (await encode(px, format, 1)).length, `${format}: the lowest quality's encode`);
    assert.ok(r.encodes <= 2, `${format}: gave up after ${r.encodes} encodes`);
  }
});

test('trim: uniform margins are cut, the format is kept', async () => {
  const logo = await seed('logo.png');
  const r = await run(logo, 'trim', {});
  await assertOutput(r, 'png', 544, 264);
  assert.equal(r.trimmed, true);
  assert.equal(r.withinTarget, null);
  // Lossless png: the content is unchanged pixel for pixel.
  const expected = await sharp(logo).extract({ left: 48, top: 48, width: 544, height: 264 }).raw().toBuffer();
  assert.ok((await sharp(r.data).raw().toBuffer()).equals(expected));

  const jpeg = await fromRaw(logoLike(400, 300, 30, [200, 230, 250])).jpeg({ quality: 95 }).toBuffer();
  const j = await run(jpeg, 'trim', { format: 'webp' }); // format is ignored by trim
  await assertOutput(j, 'jpeg');
  assert.ok(Math.abs(j.width - 340) <= 2 && Math.abs(j.height - 240) <= 2, `${j.width}x${j.height}`);

  const half = await run(logo, 'trim', { maxDimension: 272 });
  await assertOutput(half, 'png', 272, 132);
});

test('trim: nothing to cut gives { trimmed: false }', async () => {
  assert.deepEqual(await transformImage(await seed('photo.jpg'), 'trim', {}), { trimmed: false });
  const flat = await sharp({ create: { width: 50, height: 50, channels: 3, background: '#fff' } }).png().toBuffer();
  assert.deepEqual(await transformImage(flat, 'trim', {}), { trimmed: false });
});

test('trim: transparent margins', async () => {
  const r = await run(await seed('transparent.png'), 'trim', {});
  await assertOutput(r, 'png');
  assert.ok(r.width >= 370 && r.width <= 384 && r.height >= 370 && r.height <= 384, `${r.width}x${r.height}`);
  assert.equal((await sharp(r.data).metadata()).hasAlpha, true);
  const gif = await sharp(await seed('transparent.png')).gif().toBuffer();
  await assertOutput(await run(gif, 'trim', {}), 'png'); // gif is not an output format
});

// A valid 1-bit PNG claiming 20000x20000 (400 MP): ~50 KB, but 1.6 GB once decoded to RGBA.
function pngBomb(size = 20000): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (b: Buffer) => {
    let c = 0xffffffff;
    for (const x of b) c = crcTable[(c ^ x) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([len, body, sum]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 1; // bit depth
  ihdr[9] = 0; // greyscale
  const rows = Buffer.alloc(size * (1 + Math.ceil(size / 8))); // filter byte + zero bits per row
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(rows, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

test('bad input is an ImageInputError, never a crash', async () => {
  const jpeg = await seed('photo.jpg');
  const bomb = pngBomb();
  assert.ok(bomb.length < 200_000);
  await rejects(probeImage(bomb), /megapixel/);
  await rejects(transformImage(bomb, 'convert', { format: 'webp', maxDimension: 100 }), /megapixel/);
  await rejects(transformImage(jpeg.subarray(0, jpeg.length >> 1), 'convert', { format: 'png' }));
  await rejects(transformImage(Buffer.concat([jpeg.subarray(0, 2000), Buffer.alloc(5000, 0x55)]), 'convert', { format: 'png' }));
  await rejects(transformImage(Buffer.from('hello world'), 'trim', {}));
  await rejects(transformImage(Buffer.alloc(0), 'trim', {}));
  const png = await seed('logo.png');
  await rejects(transformImage(png.subarray(0, png.length - 200), 'trim', {}));
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>');
  await rejects(transformImage(svg, 'convert', { format: 'png' }), /unsupported/);
  await rejects(transformImage(Buffer.alloc(MAX_SOURCE_BYTES + 1, 1), 'trim', {}), /10 MB/);
});

test('bad options are an ImageInputError', async () => {
  const png = await seed('logo.png');
  await rejects(transformImage(png, 'convert', {}), /format/);
  await rejects(transformImage(png, 'convert', { format: 'gif' as ImageFormat }), /format/);
  await rejects(transformImage(png, 'compress', {}), /targetBytes/);
  await rejects(transformImage(png, 'compress', { targetBytes: 10_239 }), /targetBytes/);
  await rejects(transformImage(png, 'compress', { targetBytes: 10_485_761 }), /targetBytes/);
  await rejects(transformImage(png, 'compress', { targetBytes: 20_000.5 }), /targetBytes/);
  await rejects(transformImage(png, 'convert', { format: 'png', quality: 0 }), /quality/);
  await rejects(transformImage(png, 'convert', { format: 'png', quality: 1.01 }), /quality/);
  await rejects(transformImage(png, 'convert', { format: 'png', maxDimension: 0 }), /maxDimension/);
  await rejects(transformImage(png, 'convert', { format: 'png', maxDimension: 1.5 }), /maxDimension/);
  await rejects(transformImage(png, 'resize' as 'trim', {}), /op/);
  const wide = await sharp({ create: { width: 17000, height: 10, channels: 3, background: '#000' } }).png().toBuffer();
  await rejects(transformImage(wide, 'convert', { format: 'webp' }), /maxDimension/);
});
