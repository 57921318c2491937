// Loads the shared seed images shipped in db/seed/ into the store under `seed/<file>`, on the
// configured backend (run at migrate time; unchanged images are left alone).

import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, type Config } from '../config.ts';
import type { Sql } from '../db/pool.ts';
import { hasRecordSeedObject } from '../db/sql/has_record_seed_object.ts';
import { hasUpsertSeedObject } from '../db/sql/has_upsert_seed_object.ts';
import { recordSeedObject } from '../db/sql/record_seed_object.ts';
import { upsertSeedObject } from '../db/sql/upsert_seed_object.ts';
import { mediaTypeOf, probeImage } from '../images/transform.ts';
import { locateObject, sha256, stageObject } from './store.ts';

export const SEED_DIR = path.resolve(import.meta.dirname, '..', '..', 'db', 'seed');

export async function loadSeeds(sql: Sql, config?: Config): Promise<string[]> {
  const [{ ok }] = await hasUpsertSeedObject(sql);
  if (!ok) return [];
  const [{ ok: stores }] = await hasRecordSeedObject(sql);
  const ctx = { sql, config: config ?? loadConfig() };
  const loaded: string[] = [];
  for (const file of fs.readdirSync(SEED_DIR).sort()) {
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*\.(png|jpe?g|webp|avif)$/.test(file)) continue;
    const data = fs.readFileSync(path.join(SEED_DIR, file));
    const info = await probeImage(data);
    const format = info.format === 'gif' || info.format === 'tiff' ? 'png' : info.format;
    const seedPath = `seed/${file}`;
    loaded.push(seedPath);
    if (!stores) {
      // A schema from before the store had backends.
      await upsertSeedObject(sql, seedPath, data, mediaTypeOf(info.format), format, info.width, info.height);
      continue;
    }
    const hash = sha256(data);
    const found = await locateObject(ctx, seedPath);
    if (found?.state === 'stored') {
      const o = found.object;
      const stored = o.sha256 ?? (o.data ? sha256(o.data) : null);
      if (o.bytes === data.byteLength && stored?.equals(hash)) continue;
    }
    const staged = await stageObject(ctx, {
      path: seedPath, owner: null, data, contentType: mediaTypeOf(info.format), format, width: info.width, height: info.height, visibility: 'public',
    });
    await recordSeedObject(sql, staged);
  }
  return loaded;
}
