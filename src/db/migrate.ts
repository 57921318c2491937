// Migrations: graphile-worker's schema, then graphile-migrate's committed migrations (and, in
// development and tests, the uncommitted current one). The shared seed images are loaded by the
// caller that boots (cli/boot.ts migrateAndSeed), which knows the store.

import fs from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import { createRequire } from 'node:module';
import { migrate as gmMigrate } from 'graphile-migrate';
import { Logger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import { committedMigrationCount, MIGRATIONS_FOLDER } from './committed.ts';
import { expandIncludes } from './definitions.ts';
import { ownedPgPool } from './pg-pool.ts';
import { connectionRole } from './roles.ts';

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

export interface MigrateOptions {
  includeCurrent?: boolean;
  /** KILN_AUDIT_RETENTION in seconds (undefined = forever), recorded for the purge (kiln.set_audit_retention). */
  auditRetentionSeconds?: number;
}

/**
 * Makes the roles, then applies graphile-worker's schema and every committed migration, and records
 * the audit log's retention. Idempotent. Migrating is the owner's (or a superuser's): on a connection
 * that is neither (the service as a kiln_app member), it only checks that the database already holds
 * this build's migrations, and says how to migrate when it does not.
 */
export async function migrate(url: string, opts: MigrateOptions = {}): Promise<void> {
  if (!(await mayMigrate(url))) return;
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
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const seconds = opts.auditRetentionSeconds;
    await sql`select kiln.set_audit_retention(${seconds === undefined ? null : `${seconds} seconds`}::interval)`;
  } finally {
    await sql.end();
  }
}

/**
 * Whether this connection migrates: the owner of schema kiln or a superuser, or anyone on a database
 * not migrated yet (its first migration makes it the owner). Otherwise it must find the database
 * current, or the caller learns to run `kiln migrate` as the owner.
 */
async function mayMigrate(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const role = await connectionRole(sql);
    if (role.owner || role.superuser) return true;
    if (!role.migrated) {
      // The first migration makes its role the owner: it needs CREATE on the database.
      const [{ create }] = await sql<Array<{ create: boolean }>>`select pg_catalog.has_database_privilege(current_database(), 'CREATE') as create`;
      if (create) return true;
      throw new Error(`The database is not migrated yet, and ${role.name} cannot migrate it (it may not create schemas there): ` +
        'run `kiln migrate` as the owner (KILN_DATABASE_OWNER_URL, docs/operators.md "Database roles") first.');
    }
    const expected = committedMigrationCount();
    const [row] = await sql<Array<{ n: number | null }>>`
      select case when to_regclass('graphile_migrate.migrations') is null then null
                  else (select count(*)::int from graphile_migrate.migrations) end as n`.catch(() => [{ n: null }]);
    if (row?.n != null && row.n >= expected) return false;
    throw new Error(
      `The database holds ${row?.n ?? 'none'} of this build's ${expected} migrations, and ${role.name} is not the owner of its schemas, so it cannot migrate: ` +
      'run `kiln migrate` as the owner (KILN_DATABASE_OWNER_URL, docs/operators.md "Database roles") first.');
  } finally {
    await sql.end();
  }
}

/**
 * Runs the uncommitted migration (db/migrations/current*), its `--! include`s expanded
 * (src/db/definitions.ts): development and tests only.
 */
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
  text = expandIncludes(text);
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
