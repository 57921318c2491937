// Debian's PgBouncer (apt-get install pgbouncer) in transaction mode on loopback, in front of a
// test database, and helpers shared by the scale-out tests: free ports, a process run as an
// unprivileged user (PgBouncer and PostgreSQL's own tools refuse to run as root), the admin console.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

// What these helpers start is stopped by cleanupServers(): a test file registers it with
// _setup.ts's onCleanup, the soak benchmark calls it itself (it runs outside node:test).
const stops: Array<() => Promise<unknown>> = [];
export function onCleanup(fn: () => Promise<unknown>): void {
  stops.push(fn);
}
export async function cleanupServers(): Promise<void> {
  for (const fn of stops.splice(0).reverse()) await fn().catch(() => {});
}

export const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => fs.existsSync(p)) ?? null;
/** Debian's PostgreSQL client/server binaries (psql, initdb, pg_basebackup, …), when installed. */
export const PG_BIN = ['/usr/lib/postgresql/15/bin', ...(fs.existsSync('/usr/lib/postgresql') ? fs.readdirSync('/usr/lib/postgresql').map((v) => `/usr/lib/postgresql/${v}/bin`) : [])]
  .find((d) => fs.existsSync(path.join(d, 'pg_basebackup'))) ?? null;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** The uid/gid to run servers as: `postgres` (or `nobody`) when we are root, else ourselves. */
export function serverUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ['postgres', 'nobody']) {
    const line = fs.readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${name}:`));
    if (line) {
      const [, , uid, gid] = line.split(':');
      return { uid: Number(uid), gid: Number(gid) };
    }
  }
  throw new Error('no unprivileged user to run servers as');
}

/** A temp dir the server user owns. */
export function serverDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const u = serverUser();
  if (u) fs.chownSync(dir, u.uid, u.gid);
  fs.chmodSync(dir, 0o700);
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs a tool as the server user; rejects with its stderr. */
export async function runAs(bin: string, args: string[], opts: { env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  const u = serverUser();
  const { stdout } = await run(bin, args, { ...(u ?? {}), env: { ...process.env, ...opts.env }, timeout: 60_000 });
  return stdout;
}

export async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); resolve(true); });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`nothing listens on ${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Bouncer {
  port: number;
  /** postgres://…@127.0.0.1:port/kiln: what KILN_DATABASE_POOLER_URL gets. */
  url: string;
  /** Stops it (SIGINT: PgBouncer's immediate shutdown, server connections dropped). */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  /** The running process's pid (CPU accounting), null while stopped. */
  pid(): number | null;
  /** `SHOW <what>` on the admin console, as rows of column → text. */
  show(what: 'STATS' | 'POOLS' | 'SERVERS' | 'CLIENTS'): Promise<Array<Record<string, string>>>;
}

/**
 * PgBouncer in transaction mode in front of `dbUrl`'s database, as database `kiln`. Clients log in
 * with any name (auth_type any: PgBouncer logs in to Postgres with dbUrl's user and password), and
 * the admin console (`pgbouncer`) lets any of them in.
 */
export async function startPgBouncer(dbUrl: string, opts: { poolSize: number }): Promise<Bouncer> {
  if (!PGBOUNCER) throw new Error('pgbouncer is not installed (apt-get install -y pgbouncer)');
  const u = new URL(dbUrl);
  const dir = serverDir('kiln-pgbouncer-');
  const port = await freePort();
  const ini = path.join(dir, 'pgbouncer.ini');
  fs.writeFileSync(ini, [
    '[databases]',
    `kiln = host=${u.hostname} port=${u.port} dbname=${u.pathname.slice(1)} user=${decodeURIComponent(u.username)} password=${decodeURIComponent(u.password)}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = any',
    'pool_mode = transaction',
    `default_pool_size = ${opts.poolSize}`,
    'min_pool_size = 0',
    'reserve_pool_size = 0',
    'max_client_conn = 1000',
    // Clients wait for a server connection rather than fail (the API's own timeouts bound it).
    'query_wait_timeout = 30',
    'server_reset_query =',
    'ignore_startup_parameters = extra_float_digits,options',
    `logfile = ${path.join(dir, 'pgbouncer.log')}`,
    `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
    '',
  ].join('\n'));
  const user = serverUser();
  if (user) fs.chownSync(ini, user.uid, user.gid);
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn(PGBOUNCER, [ini], { ...(user ?? {}), stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (d) => { err += d; });
    const exited = new Promise<never>((_, reject) => child!.once('exit', (c) => reject(new Error(`pgbouncer exited (${c}): ${err.slice(-500)}`))));
    exited.catch(() => {});
    await Promise.race([waitForPort(port), exited]);
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const done = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGINT');
    await done;
  };
  await start();
  onCleanup(stop);
  return {
    port,
    url: `postgres://kiln:kiln@127.0.0.1:${port}/kiln`,
    stop,
    start,
    pid: () => (child as ChildProcess | null)?.pid ?? null,
    async show(what) {
      if (!PG_BIN) throw new Error('psql is not installed');
      // The console speaks only the simple query protocol: psql rather than postgres.js.
      const out = await run(path.join(PG_BIN, 'psql'), ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'admin', '-d', 'pgbouncer', '--csv', '-c', `SHOW ${what}`], { timeout: 10_000 });
      const [head, ...lines] = out.stdout.trim().split('\n');
      const cols = head!.split(',');
      return lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [cols[i], v])));
    },
  };
}
