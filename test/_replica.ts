// A PostgreSQL primary and a streaming standby of it on loopback, made with Debian's PostgreSQL
// tools (initdb, pg_ctl, pg_basebackup -R): the embedded cluster ships no pg_basebackup. Run as an
// unprivileged user (PostgreSQL refuses root); stopped when the test file ends.

import path from 'node:path';
import postgres from 'postgres';
import { migrateAndSeed } from '../src/cli/boot.ts';
import { freePort, onCleanup, PG_BIN, runAs, serverDir } from './_pgbouncer.ts';

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

/** A fresh primary with Kiln migrated into database `kiln` (committed migrations and current.sql, as the test template). */
export async function startPrimary(opts: { durable?: boolean } = {}): Promise<Cluster> {
  if (!PG_BIN) throw new Error('Debian\'s PostgreSQL tools are not installed');
  const dir = serverDir('kiln-pg-');
  const data = path.join(dir, 'primary');
  await runAs(bin('initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
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
