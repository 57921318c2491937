// The committed migrations this build ships (db/migrations/committed): where they are and how
// many, without loading graphile-migrate (the API's readiness check compares the count).

import fs from 'node:fs';
import path from 'node:path';

export const MIGRATIONS_FOLDER = path.join(path.resolve(import.meta.dirname, '..', '..'), 'db', 'migrations');

/** How many committed migrations this build ships. */
export function committedMigrationCount(): number {
  return fs.readdirSync(path.join(MIGRATIONS_FOLDER, 'committed')).filter((f) => /^\d{6}[-.].*\.sql$/.test(f)).length;
}
