// The node-postgres pool graphile-worker runs on, owned by Kiln rather than by graphile-worker.
//
// Given a connection string, graphile-worker makes its own pool and, when the runner stops (or its
// migrations end), removes that pool's error handlers first and then calls `pool.end()` without
// waiting for it. A connection still closing when the database goes away then emits 'error' on a
// pool with no listener, which crashes the process: `kiln serve` on the embedded cluster stops
// Postgres right after the worker and, on a busy machine, exited 1 on a clean SIGTERM. This pool
// keeps its handlers for its whole life, and `close()` returns once every connection has ended.

import pg from 'pg';

export interface OwnedPgPool {
  pool: pg.Pool;
  /** Ends every connection (idle ones now, checked-out ones when released) and resolves once each has closed. */
  close(): Promise<void>;
}

/** `name` is the connections' application_name (what pg_stat_activity shows). */
export function ownedPgPool(url: string, opts: { max?: number; name?: string; onError?: (e: Error) => void } = {}): OwnedPgPool {
  // An idle connection's error reaches both listeners below (pg-pool passes it on): once each.
  const seen = new WeakSet<Error>();
  const onError = (e: Error) => {
    if (seen.has(e)) return;
    seen.add(e);
    opts.onError?.(e);
  };
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 10, application_name: opts.name });
  // An idle connection's error (the server went away): pg drops the connection itself.
  pool.on('error', onError);
  // Each connection: its own error listener (a checked-out connection's error surfaces again at
  // its next query; listening keeps it from being an unhandled 'error' event meanwhile), and
  // tracked until it has closed — pg-pool's end() resolves once its clients are told to end, not
  // once they have.
  const live = new Map<pg.Client, Promise<void>>();
  pool.on('connect', (client) => {
    client.on('error', onError);
    live.set(client, new Promise<void>((resolve) => client.once('end', () => { live.delete(client); resolve(); })));
  });
  let closing: Promise<void> | null = null;
  return {
    pool,
    close() {
      closing ??= (async () => {
        await pool.end().catch(onError);
        // Bounded: a connection whose server never answers is left to the OS after 5 s.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.all(live.values()),
          new Promise<void>((r) => { timer = setTimeout(r, 5000); timer.unref(); }),
        ]);
        clearTimeout(timer);
      })();
      return closing;
    },
  };
}
