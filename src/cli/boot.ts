// Opens the database a command needs: DATABASE_URL's server, or the embedded cluster
// under the data dir. Stops an embedded cluster it started on SIGINT/SIGTERM. Only the commands
// that set a database up (`serve`, `api`, `worker`, `migrate`) create the embedded cluster; the
// others refuse when there is none (docs/operators.md, "Operator commands").

import postgres from 'postgres';
import type { Config } from '../config.ts';
import { hasCluster, startEmbedded } from '../db/embedded.ts';
import { connect, type Sql } from '../db/pool.ts';
import { Replica } from '../db/replica.ts';
import type { Logger } from '../log.ts';

/**
 * Migrates the database (db/migrate.ts), then loads the shared seed images that ship with the
 * code (idempotently) onto the configured store: `config` (KILN_STORE), else the environment's.
 */
export async function migrateAndSeed(url: string, opts: { includeCurrent?: boolean; config?: Config } = {}): Promise<void> {
  // Loaded here, not with the CLI: only the commands that migrate need graphile-migrate and the store.
  const [{ migrate }, { loadSeeds }] = await Promise.all([import('../db/migrate.ts'), import('../storage/seeds.ts')]);
  await migrate(url, { includeCurrent: opts.includeCurrent, auditRetentionSeconds: opts.config?.auditRetentionSeconds });
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await loadSeeds(sql, opts.config);
  } finally {
    await sql.end();
  }
}

/**
 * Refuses (without DATABASE_URL) when the data dir holds no embedded cluster: an operator command
 * run from another directory would otherwise work on a new, empty database of its own.
 */
export function requireEmbeddedCluster(config: Config): void {
  if (config.databaseUrl || hasCluster(config.dataDir)) return;
  throw new Error(
    `no Kiln database found at ${config.dataDir} (no DATABASE_URL set); run this from the project directory, ` +
      'set KILN_DATA_DIR, or start Kiln first with `kiln serve`',
  );
}

export interface Database {
  /** The primary, direct (DATABASE_URL or the embedded cluster). */
  url: string;
  /** Queries: through KILN_DATABASE_POOLER_URL when set, else the direct pool. */
  sql: Sql;
  /** Direct to the primary, for what a transaction-mode pooler cannot carry (LISTEN); `sql` itself without a pooler. */
  direct: Sql;
  embedded: boolean;
  close(): Promise<void>;
}

export async function openDatabase(
  config: Config,
  opts: {
    migrate?: boolean; poolSize?: number; handleSignals?: boolean; /** Make the embedded cluster when there is none. */ create?: boolean;
    /** false: plain pools, without loading telemetry (a one-call CLI command). Default true. */
    observe?: boolean;
  } = {},
): Promise<Database> {
  let url = config.databaseUrl;
  let stopEmbedded: (() => Promise<void>) | null = null;
  if (!url) {
    if (!opts.create) requireEmbeddedCluster(config);
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
    if (opts.migrate) await migrateAndSeed(config.ownerUrl ?? url, { config });
  } catch (e) {
    await stopEmbedded?.();
    throw e;
  }
  const max = opts.poolSize ?? config.dbPoolSize;
  // Behind the pooler the direct pool carries only LISTEN (postgres.js gives each listen its own
  // connection) and the odd NOTIFY: two at most, opened on first use. Pools are observed only
  // where telemetry was started (kiln serve | api | worker); untouched otherwise.
  const observePool = opts.observe === false ? (_name: string, pool: Sql) => pool : (await import('../telemetry/pool.ts')).observePool;
  const direct = observePool(config.poolerUrl ? 'direct' : 'main', connect(url, { max: config.poolerUrl ? 2 : max }));
  const sql = config.poolerUrl ? observePool('main', connect(config.poolerUrl, { max, prepare: false })) : direct;
  return {
    url,
    sql,
    direct,
    embedded: !config.databaseUrl,
    async close() {
      await Promise.all([sql.end({ timeout: 5 }), sql !== direct && direct.end({ timeout: 5 })]);
      await stopEmbedded?.();
    },
  };
}

/**
 * The read replica of an API process (KILN_DATABASE_REPLICA_URL), sampling its lag once a second;
 * null when none is configured. `close` stops the sampling and ends its pool.
 */
export function openReplica(config: Config, primary: Sql, log: Logger): { replica: Replica; close(): Promise<void> } | null {
  if (!config.replicaUrl) return null;
  // A replica that is down must not hold a read for long: it falls back to the primary.
  const replica = new Replica(connect(config.replicaUrl, { max: config.dbPoolSize, appName: 'kiln-replica', connectTimeout: 2 }), primary, config.replicaMaxLagMs, log);
  void replica.start();
  return {
    replica,
    async close() {
      replica.close();
      await replica.sql.end({ timeout: 2 });
    },
  };
}
