// Opens the database a command needs: DATABASE_URL's server, or the embedded cluster
// under the data dir. Stops an embedded cluster it started on SIGINT/SIGTERM.

import postgres from 'postgres';
import type { Config } from '../config.ts';
import { startEmbedded } from '../db/embedded.ts';
import { migrate } from '../db/migrate.ts';
import { connect, type Sql } from '../db/pool.ts';
import { loadSeeds } from '../storage/seeds.ts';
import { observePool } from '../telemetry/pool.ts';

/**
 * Migrates the database (db/migrate.ts), then loads the shared seed images that ship with the
 * code (idempotently) onto the configured store: `config` (KILN_STORE), else the environment's.
 */
export async function migrateAndSeed(url: string, opts: { includeCurrent?: boolean; config?: Config } = {}): Promise<void> {
  await migrate(url, { includeCurrent: opts.includeCurrent });
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await loadSeeds(sql, opts.config);
  } finally {
    await sql.end();
  }
}

export interface Database {
  url: string;
  sql: Sql;
  embedded: boolean;
  close(): Promise<void>;
}

export async function openDatabase(
  config: Config,
  opts: { migrate?: boolean; poolSize?: number; handleSignals?: boolean } = {},
): Promise<Database> {
  let url = config.databaseUrl;
  let stopEmbedded: (() => Promise<void>) | null = null;
  if (!url) {
    const pg = await startEmbedded(config.dataDir, { port: config.embeddedPort || undefined });
    url = pg.url;
    stopEmbedded = pg.owned ? pg.stop : null;
    if (stopEmbedded && opts.handleSignals !== false) {
      // Short commands: an interrupt still stops the cluster we started (no orphaned postgres).
      for (const sig of ['SIGINT', 'SIGTERM'] as const) {
        process.once(sig, () => {
          stopEmbedded!().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
        });
      }
    }
  }
  try {
    if (opts.migrate) await migrateAndSeed(url, { config });
  } catch (e) {
    await stopEmbedded?.();
    throw e;
  }
  // Observed only where telemetry was started (kiln serve | api | worker); untouched otherwise.
  const sql = observePool('main', connect(url, { max: opts.poolSize ?? config.dbPoolSize }));
  return {
    url,
    sql,
    embedded: !config.databaseUrl,
    async close() {
      await sql.end({ timeout: 5 });
      await stopEmbedded?.();
    },
  };
}
