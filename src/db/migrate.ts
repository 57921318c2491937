// Migrations: graphile-worker's schema, then graphile-migrate's committed migrations (and, in
// development and tests, the uncommitted current one). The shared seed images are loaded by the
// caller that boots (cli/boot.ts migrateAndSeed), which knows the store.

import fs from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import { createRequire } from 'node:module';
import { migrate as gmMigrate } from 'graphile-migrate';
import { Logger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import { MIGRATIONS_FOLDER } from './committed.ts';
import { ownedPgPool } from './pg-pool.ts';

export { MIGRATIONS_FOLDER };

const { clearAllPools } = createRequire(import.meta.url)('graphile-migrate/dist/pgReal.js') as { clearAllPools(): void };

/** db/roles.sql: the cluster-wide roles the migrations grant to (kiln_analyst). */
export const ROLES_FILE = path.join(MIGRATIONS_FOLDER, '..', 'roles.sql');

/**
 * Makes the roles the migrations grant to, before they run (graphile-migrate advises roles
 * outside migrations: they belong to the cluster, not to one database). Idempotent.
 */
export async function ensureRoles(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(fs.readFileSync(ROLES_FILE, 'utf8'));
  } finally {
    await sql.end();
  }
}

/** Makes the roles, then applies graphile-worker's schema and every committed migration. Idempotent. */
export async function migrate(url: string, opts: { includeCurrent?: boolean } = {}): Promise<void> {
  await ensureRoles(url);
  // On a pool of ours, ended before we return (see ./pg-pool.ts).
  const workerPool = ownedPgPool(url, { max: 1 });
  try {
    await runWorkerMigrations({ pgPool: workerPool.pool, logger: quietLogger() });
  } finally {
    await workerPool.close();
  }
  try {
    await gmMigrate({ connectionString: url, migrationsFolder: MIGRATIONS_FOLDER, manageGraphileMigrateSchema: true, logger: gmLogger() } as any);
  } finally {
    // graphile-migrate keeps its pool alive briefly and exits the process if a pooled
    // connection later errors (e.g. when an embedded cluster stops): end it now.
    clearAllPools();
  }
  if (opts.includeCurrent) await applyCurrent(url);
}

/** Runs the uncommitted migration (db/migrations/current*) as-is: development and tests only. */
export async function applyCurrent(url: string): Promise<void> {
  const dir = path.join(MIGRATIONS_FOLDER, 'current');
  const file = path.join(MIGRATIONS_FOLDER, 'current.sql');
  let text = '';
  if (fs.existsSync(dir)) {
    const files = fs.readdirSync(dir).filter((f) => /^\d+.*\.sql$/.test(f)).sort((a, b) => parseInt(a) - parseInt(b));
    text = files.map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).join('\n;\n');
  } else if (fs.existsSync(file)) {
    text = fs.readFileSync(file, 'utf8');
  }
  if (!text.replace(/--.*$/gm, '').trim()) return;
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql.begin((tx) => tx.unsafe(text));
  } finally {
    await sql.end();
  }
}

function quietLogger(): Logger {
  return new Logger(() => () => {});
}

function gmLogger(): Logger {
  return new Logger(() => (level, message) => {
    if (level === 'error') process.stderr.write(`migrate: ${message}\n`);
  });
}
