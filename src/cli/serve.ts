// `kiln serve | api | worker`: start the database (embedded when DATABASE_URL is unset),
// migrate, then run the HTTP API and/or the worker until SIGINT/SIGTERM.

import http from 'node:http';
import { toNodeHandler } from 'h3/node';
import { openDatabase, openReplica } from './boot.ts';
import type { Config } from '../config.ts';
import { createContext } from '../context.ts';
import { generateKey } from '../auth/secrets.ts';
import { API_PREFIX } from '../http/route.ts';
import { createApp } from '../http/server.ts';
import { extensions } from './mounts.ts';
import { startWorker } from '../worker/worker.ts';
import { createLogger, errorFields } from '../log.ts';
import { parseArgs } from './args.ts';
import { createFirstAccount } from '../db/sql/create_first_account.ts';
import { startTelemetry } from '../telemetry/index.ts';
import { sampleGaugesFrom, watchStore } from '../telemetry/gauges.ts';
import { TASK_IDENTIFIERS } from '../../tasks/index.ts';
import { connectionRole, privilegeWarning } from '../db/roles.ts';

export interface RunOptions {
  api: boolean;
  worker: boolean;
  argv: string[];
}

export async function runServices(config: Config, opts: RunOptions): Promise<undefined> {
  parseArgs(opts.argv, { options: {} });
  const shutdown = new AbortController();
  // Before the pool opens, so that its queries are counted and traced.
  const telemetry = await startTelemetry(config);
  if (telemetry.metricsPort !== null) process.stdout.write(`Kiln metrics on http://${config.metrics.host.includes(':') ? `[${config.metrics.host}]` : config.metrics.host}:${telemetry.metricsPort}/metrics\n`);
  // Migrate on start for the embedded default; with DATABASE_URL operators run `kiln migrate`
  // (as in docker-compose.yml), but `serve` migrates too so one command is enough.
  const db = await openDatabase(config, { migrate: !config.databaseUrl || (opts.api && opts.worker), handleSignals: false, create: true });
  const log = createLogger(config.logLevel);
  // Lists, daily usage and run history read the replica while it keeps up (API processes only).
  const replica = opts.api ? openReplica(config, db.sql, log) : null;
  const ctx = createContext(config, db.sql, shutdown.signal, { direct: db.direct, replica: replica?.replica });
  sampleGaugesFrom(db.sql, ctx.log, TASK_IDENTIFIERS);
  watchStore(config, ctx.log);
  // A service with more rights than kiln_app's says so once (and /readyz keeps saying it).
  const warning = privilegeWarning(await connectionRole(db.direct), db.embedded);
  if (warning) ctx.log.warn(warning);

  let server: http.Server | null = null;
  let worker: Awaited<ReturnType<typeof startWorker>> | null = null;
  let stopping: Promise<void> | null = null;
  const stop = (signal: string) => {
    stopping ??= (async () => {
      ctx.log.info('shutting down', { signal });
      // Work cut short by the shutdown (a heartbeat, a query on a closing pool) may reject with
      // nobody left to await it: log it rather than crash with a non-zero exit.
      process.on('unhandledRejection', (e) => ctx.log.warn('rejection during shutdown', errorFields(e)));
      shutdown.abort();
      await Promise.allSettled([
        server && new Promise<void>((resolve) => {
          // Event streams and waits end on the shutdown signal; their keep-alive connections turn
          // idle a moment later, so idle connections are closed until the server is.
          const idle = setInterval(() => server!.closeIdleConnections(), 50);
          server!.close(() => { clearInterval(idle); resolve(); });
          server!.closeIdleConnections();
          setTimeout(() => server!.closeAllConnections(), 5000).unref();
        }),
        worker?.stop(),
      ]);
      await replica?.close();
      await db.close();
      await telemetry.stop();
    })();
    return stopping;
  };
  const done = new Promise<void>((resolve) => {
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.once(sig, () => {
        stop(sig).then(resolve, (e) => {
          ctx.log.error('shutdown failed', errorFields(e));
          process.stderr.write(`kiln: shutdown failed: ${(e as Error)?.message ?? e}\n`);
          process.exitCode = 1;
          resolve();
        });
      });
    }
  });

  try {
    if (opts.worker) worker = await startWorker(ctx, db.url);
    if (opts.api) {
      const app = createApp(ctx, { extend: extensions });
      server = http.createServer({ keepAliveTimeout: 65_000 }, toNodeHandler(app) as any);
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen(config.port, config.host, () => resolve());
      });
      const addr = server.address() as import('node:net').AddressInfo;
      const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${addr.port}${API_PREFIX}`;
      if (opts.worker) await printDevKey(ctx.sql, base);
      process.stdout.write(`Kiln is listening on ${base}\n`);
    } else {
      process.stdout.write('Kiln worker started\n');
    }
  } catch (e) {
    await stop('startup-failure');
    throw e;
  }
  await done;
  return undefined;
}

/** On an empty database, create a local development account and print one key for it, once. */
async function printDevKey(sql: import('../db/pool.ts').Sql, base: string) {
  const { key, hash, displayPrefix } = generateKey();
  const [created] = await createFirstAccount(sql, 'dev@localhost', hash, displayPrefix);
  if (!created?.id) return;
  process.stdout.write(
    [
      '',
      'Created a local development account (dev@localhost) and an API key for it.',
      'This key is shown once; store it now:',
      '',
      `  ${key}`,
      '',
      `  curl -H "Authorization: Bearer ${key}" ${base}/usage`,
      '',
    ].join('\n') + '\n',
  );
}
