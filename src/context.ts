// The per-process service context handed to routes, MCP tools and tasks.

import type { Span } from '@opentelemetry/api';
import type { Config } from './config.ts';
import type { Sql } from './db/pool.ts';
import type { Replica } from './db/replica.ts';
import { createLogger, type Logger } from './log.ts';

export interface Context {
  config: Config;
  /** Queries and SQL functions: through the pooler when KILN_DATABASE_POOLER_URL is set (no session state), else direct. */
  sql: Sql;
  /** Direct to the primary (DATABASE_URL): LISTEN/NOTIFY. The same pool as `sql` without a pooler. */
  direct: Sql;
  /** The read replica, when configured: reads that tolerate its bounded lag go through db/replica.ts readTolerant. */
  replica: Replica | null;
  log: Logger;
  /** Aborted when the process shuts down; long provider calls listen to it. */
  shutdown: AbortSignal;
  /**
   * The span this work is traced under (a request's, a job's), when tracing is on: the parent of
   * the spans it starts. Set by telemetry/scope.ts underSpan, with `sql` and `log` bound to it.
   */
  span?: Span;
}

export function createContext(
  config: Config,
  sql: Sql,
  shutdown = new AbortController().signal,
  pools: { direct?: Sql; replica?: Replica | null } = {},
): Context {
  return { config, sql, direct: pools.direct ?? sql, replica: pools.replica ?? null, log: createLogger(config.logLevel), shutdown };
}
