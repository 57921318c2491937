// The per-process service context handed to routes, MCP tools and tasks.

import type { Config } from './config.ts';
import type { Sql } from './db/pool.ts';
import { createLogger, type Logger } from './log.ts';

export interface Context {
  config: Config;
  sql: Sql;
  log: Logger;
  /** Aborted when the process shuts down; long provider calls listen to it. */
  shutdown: AbortSignal;
}

export function createContext(config: Config, sql: Sql, shutdown = new AbortController().signal): Context {
  return { config, sql, log: createLogger(config.logLevel), shutdown };
}
