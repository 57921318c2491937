// Writes the shared seed images (db/seed/*) that migrations load into the store under seed/<name>.
// Deterministic: rerunning gives the same pixels. Run: node --import tsx src/storage/make-seeds.ts
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { logoLike, photoLike, transparentLike, type RawImage } from '../images/synth.ts';

const SEED_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../db/seed');

const raw = (img: RawImage) => sharp(img.data, { raw: { width: img.width, height: img.height, channels: img.channels } });

export async function makeSeeds(dir = SEED_DIR): Promise<Record<string, number>> {
  await mkdir(dir, { recursive: true });
  const files: Record<string, Buffer> = {
    // Photo-like: gradients, texture, soft shapes and grain, so it compresses like a photo.
    'photo.jpg': await raw(photoLike(1200, 800, 20240601)).jpeg({ quality: 85, mozjpeg: true }).toBuffer(),
    // Flat logo with 48 px uniform white margins: trim cuts it to 544x264.
    'logo.png': await raw(logoLike(640, 360, 48)).png({ compressionLevel: 9 }).toBuffer(),
    // RGBA disc with 64 px fully transparent margins; its soft edge fades out, so trim gives 383x383.
    'transparent.png': await raw(transparentLike(512, 512, 64)).png({ compressionLevel: 9 }).toBuffer(),
  };
  const sizes: Record<string, number> = {};
  for (const [name, buf] of Object.entries(files)) {
    await writeFile(join(dir, name), buf);
    sizes[name] = buf.length;
  }
  return sizes;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(JSON.stringify(await makeSeeds(), null, 2));
}
