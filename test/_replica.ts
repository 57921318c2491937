// A PostgreSQL primary and a streaming standby of it on loopback, made with Debian's PostgreSQL
// tools (initdb, pg_ctl, pg_basebackup -R): the embedded cluster ships no pg_basebackup. Run as an
// unprivileged user (PostgreSQL refuses root); stopped when the test file ends. Also a primary
// that archives its WAL, a base backup of it, and a point-in-time restore of that backup into a
// new cluster (docs/operators.md, "Backups and restore").

import fs from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import { migrateAndSeed } from '../src/cli/boot.ts';
import { freePort, onCleanup, PG_BIN, runAs, serverDir, serverUser } from './_pgbouncer.ts';

export interface Cluster {
  port: number;
  data: string;
  /** postgres://postgres@127.0.0.1:port/kiln */
  url: string;
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  promote(): Promise<void>;
}

const bin = (name: string) => path.join(PG_BIN!, name);

/** `durable`: commits wait as configured (synchronous replication), not `synchronous_commit=off`. */
async function startCluster(data: string, port: number, log: string, durable = false): Promise<void> {
  const opts = [
    `-p ${port}`, '-c listen_addresses=127.0.0.1', `-c unix_socket_directories=${path.dirname(data)}`,
    '-c wal_level=replica', '-c max_wal_senders=5', '-c hot_standby=on', '-c fsync=off', ...(durable ? [] : ['-c synchronous_commit=off']),
    '-c full_page_writes=off', '-c max_connections=100',
  ].join(' ');
  await runAs(bin('pg_ctl'), ['-D', data, '-o', opts, '-l', log, '-w', '-t', '60', 'start']);
}

function cluster(data: string, port: number, stopped: { v: boolean }): Cluster {
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    if (stopped.v) return;
    stopped.v = true;
    await runAs(bin('pg_ctl'), ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']).catch(() => {});
  };
  onCleanup(() => stop('immediate'));
  return {
    port, data, url: `postgres://postgres@127.0.0.1:${port}/kiln`, stop,
    async promote() { await runAs(bin('pg_ctl'), ['-D', data, '-w', 'promote']); },
  };
}

/** Lines added to a cluster's postgresql.conf (a later line wins over an earlier one). */
function configure(data: string, lines: string[]): void {
  fs.appendFileSync(path.join(data, 'postgresql.conf'), `\n${lines.join('\n')}\n`);
}

/** A directory the server user owns, for a WAL archive (removed when the test file ends). */
export function walArchive(): string {
  return serverDir('kiln-wal-');
}

/**
 * A fresh primary with Kiln migrated into database `kiln` (committed migrations and current.sql,
 * as the test template). `archive`: a directory its WAL is archived into (archive_mode=on, an
 * archive_command that copies each finished segment there, never over an existing file).
 */
export async function startPrimary(opts: { durable?: boolean; archive?: string } = {}): Promise<Cluster> {
  if (!PG_BIN) throw new Error('Debian\'s PostgreSQL tools are not installed');
  const dir = serverDir('kiln-pg-');
  const data = path.join(dir, 'primary');
  await runAs(bin('initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  if (opts.archive) configure(data, ['archive_mode = on', `archive_command = 'test ! -f ${opts.archive}/%f && cp %p ${opts.archive}/%f'`]);
  const port = await freePort();
  await startCluster(data, port, path.join(dir, 'primary.log'), opts.durable);
  const c = cluster(data, port, { v: false });
  const admin = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {} });
  await admin.unsafe('create database kiln');
  await admin.end();
  await migrateAndSeed(c.url, { includeCurrent: true });
  return c;
}

/** A hot standby streaming from `primary` (pg_basebackup -R), up and in recovery. */
export async function startStandby(primary: Cluster, opts: { durable?: boolean } = {}): Promise<Cluster> {
  const dir = path.dirname(primary.data);
  const data = path.join(dir, `standby-${Date.now()}`);
  await runAs(bin('pg_basebackup'), ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', data, '-R', '-X', 'stream', '-c', 'fast', '--no-sync']);
  const port = await freePort();
  await startCluster(data, port, `${data}.log`, opts.durable);
  return cluster(data, port, { v: false });
}

/**
 * A base backup of `primary` taken while it runs (`pg_basebackup -X none -c fast`): no WAL in the
 * backup, so it restores only from the archive; pg_basebackup returns once the backup's last WAL
 * segment is archived. Returns the backup's directory.
 */
export async function baseBackup(primary: Cluster): Promise<string> {
  const data = path.join(path.dirname(primary.data), `backup-${Date.now()}`);
  await runAs(bin('pg_basebackup'), ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', data, '-X', 'none', '-c', 'fast', '--no-sync']);
  return data;
}

/**
 * Point-in-time recovery of a base backup into a new cluster: WAL replayed from `archive`
 * (restore_command) up to the end of the backup (recovery_target = 'immediate'), then promoted
 * (recovery_target_action = 'promote'); resolves once it accepts writes.
 */
export async function restoreCluster(backup: string, archive: string): Promise<Cluster> {
  const data = path.join(path.dirname(backup), `restored-${Date.now()}`);
  fs.cpSync(backup, data, { recursive: true });
  configure(data, [
    `restore_command = 'cp ${archive}/%f %p'`,
    "recovery_target = 'immediate'",
    "recovery_target_action = 'promote'",
    'archive_mode = off',
  ]);
  fs.writeFileSync(path.join(data, 'recovery.signal'), '');
  const u = serverUser();
  if (u) {
    for (const f of [data, ...fs.readdirSync(data, { recursive: true, encoding: 'utf8' }).map((f) => path.join(data, f))]) fs.chownSync(f, u.uid, u.gid);
  }
  fs.chmodSync(data, 0o700);
  const port = await freePort();
  await startCluster(data, port, `${data}.log`);
  const c = cluster(data, port, { v: false });
  const admin = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {} });
  try {
    for (let i = 0; ; i++) {
      const [{ r }] = await admin`select pg_is_in_recovery() as r`;
      if (!r) break;
      if (i > 600) throw new Error(`the restored cluster is still in recovery: ${fs.readFileSync(`${data}.log`, 'utf8').slice(-2000)}`);
      await new Promise((res) => setTimeout(res, 100));
    }
  } finally {
    await admin.end();
  }
  return c;
}
