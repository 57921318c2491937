// Loads the shared seed images shipped in db/seed/ into the store under `seed/<file>`
// (run at migrate time; unchanged images are left alone).

import fs from 'node:fs';
import path from 'node:path';
import type { Sql } from '../db/pool.ts';
import { hasUpsertSeedObject } from '../db/sql/has_upsert_seed_object.ts';
import { upsertSeedObject } from '../db/sql/upsert_seed_object.ts';
import { mediaTypeOf, probeImage } from '../images/transform.ts';

export const SEED_DIR = path.resolve(import.meta.dirname, '..', '..', 'db', 'seed');

export async function loadSeeds(sql: Sql): Promise<string[]> {
  const [{ ok }] = await hasUpsertSeedObject(sql);
  if (!ok) return [];
  const loaded: string[] = [];
  for (const file of fs.readdirSync(SEED_DIR).sort()) {
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*\.(png|jpe?g|webp|avif)$/.test(file)) continue;
    const data = fs.readFileSync(path.join(SEED_DIR, file));
    const info = await probeImage(data);
    const format = info.format === 'gif' || info.format === 'tiff' ? 'png' : info.format;
    await upsertSeedObject(sql, `seed/${file}`, data, mediaTypeOf(info.format), format, info.width, info.height);
    loaded.push(`seed/${file}`);
  }
  return loaded;
}
