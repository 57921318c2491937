// What a CLI command is, and the database a command opens for its one call: shared by the
// command table (commands.ts) and the command groups it assembles (mcp.ts, workflows.ts).

import type { Config } from '../config.ts';
import type { Sql } from '../db/pool.ts';
import { openDatabase } from './boot.ts';

export interface Command {
  help: string;
  /** Its arguments go to another program (`kiln gm`): only a leading `--help`/`-h` is kiln's. */
  passthrough?: boolean;
  /**
   * The arguments after the command's name: declare and read them with `parseArgs` (args.ts)
   * first thing. What it resolves with is printed as JSON (nothing when undefined).
   */
  run(argv: string[], config: Config): Promise<unknown>;
}

export async function withDb<T>(config: Config, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const db = await openDatabase(config, { migrate: !config.databaseUrl, poolSize: 2, observe: false });
  try {
    return await fn(db.sql);
  } finally {
    await db.close();
  }
}
