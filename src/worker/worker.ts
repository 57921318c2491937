// Runs graphile-worker with Kiln's tasks under a lease: before it runs any job, the process takes
// a session-level advisory lock on a dedicated connection (kiln.register_worker). Postgres frees
// it the moment the process or that connection dies, so every other worker's once-a-second sweep
// (kiln.unlock_dead_workers) unlocks a dead worker's jobs within seconds, while a live worker's
// jobs are never taken over, however slow the provider. A worker that loses its lease session
// aborts its in-flight calls at once (another worker may now take them over) and starts again
// under a new lease. Canceled generations are aborted wherever they run (../generations/cancel.ts).

import { EventEmitter } from 'node:events';
import os from 'node:os';
import postgres from 'postgres';
import { run, Logger, type Runner, type WorkerEvents } from 'graphile-worker';
import type { Context } from '../context.ts';
import { errorFields } from '../log.ts';
import { ownedPgPool } from '../db/pg-pool.ts';
import { attachWorkerPool } from '../db/sql/attach_worker_pool.ts';
import { beatWorker } from '../db/sql/beat_worker.ts';
import { registerWorker } from '../db/sql/register_worker.ts';
import { retireWorker } from '../db/sql/retire_worker.ts';
import { CANCEL_CHANNEL, watchCancels } from '../generations/cancel.ts';
import type { Lease } from '../generations/lease.ts';
import { createTaskList } from '../../tasks/index.ts';
import { startStoreSweep, storeSweepCron } from '../../tasks/store__sweep.ts';
import { registerPool, unregisterPool } from '../telemetry/metrics.ts';
import { purgeExpiredIdempotencyKeys, purgeOldAuditEntries, purgeOldEvents, recordExpiredKeys, rollSpendPeriods, sweepDeadWorkers, trimUpstreamCounts, unlockDeadWorkerJobs } from './housekeeping.ts';

export interface WorkerHandle {
  /** The graphile-worker runner of the current lease. */
  readonly runner: Runner;
  /** The current lease's worker id: what generations and workflow outputs being run are leased to. */
  workerId(): string;
  stop(): Promise<void>;
}

interface Term {
  conn: postgres.Sql<{}>;
  lease: Lease;
  abort: AbortController;
  runner: Runner;
  poolId: string | null;
  lost: boolean;
  ended?: boolean;
}

const RESTART_BACKOFF_MS = [100, 500, 1000, 2000, 5000];

/**
 * graphile-worker's note that its pool is smaller than its concurrency: true of a graphile-worker
 * whose tasks query through its pool, not of Kiln's, whose tasks query through their own (pooled)
 * client while graphile-worker's pool only fetches and completes jobs (docs/operators.md).
 */
const POOL_SMALLER_THAN_CONCURRENCY = /^WARNING: having maxPoolSize \(\d+\) smaller than concurrency/;

/** graphile-worker's log lines through Kiln's log: errors as errors, warnings as warnings, the rest as debug. */
function workerLogger(ctx: Context): Logger {
  return new Logger((scope) => (level, message) => {
    const warn = level === 'warning' && !POOL_SMALLER_THAN_CONCURRENCY.test(message);
    const fields = { scope: scope.label, task: scope.taskIdentifier, jobId: scope.jobId };
    if (level === 'error') ctx.log.error(message, fields);
    else if (warn) ctx.log.warn(message, fields);
    else ctx.log.debug(message, fields);
  });
}

export async function startWorker(ctx: Context, url: string): Promise<WorkerHandle> {
  const logger = workerLogger(ctx);
  let stopping = false;
  // graphile-worker's connections, on a pool this worker owns and ends itself (../db/pg-pool.ts);
  // the runners of successive leases share it. graphile-worker's default size (10) unless set.
  const pgPool = ownedPgPool(url, { max: ctx.config.workerDbPoolSize, name: 'kiln-worker', onError: (e) => { if (!stopping) ctx.log.warn('worker pool connection error', errorFields(e)); } });
  const p = pgPool.pool;
  registerPool('worker', () => ({ max: ctx.config.workerDbPoolSize, busy: p.totalCount - p.idleCount, idle: p.idleCount, waiting: p.waitingCount }));
  let term: Term;
  let restarting: Promise<void> | null = null;
  const cancels = watchCancels(ctx);

  /** A lease (own connection, advisory lock, registration), then a runner whose tasks run under it. */
  const begin = async (): Promise<Term> => {
    let t: Term | undefined;
    // One connection that lives as long as the lease: no idle timeout, no maximum lifetime.
    const conn = postgres(url, {
      max: 1,
      idle_timeout: 0,
      max_lifetime: null,
      onnotice: () => {},
      connection: { application_name: 'kiln-worker-lease' },
      onclose: () => {
        if (t) leaseLost(t, 'its database session closed');
      },
      // kiln:cancel arrives here: the lease's session is direct and lives as long as the lease.
      // postgres.js passes `onnotify` to its connections (the option its own listen() uses) but
      // leaves it out of its types.
      ...({
        onnotify: (channel: string, payload: string) => {
          if (channel === CANCEL_CHANNEL) cancels.notified(payload);
        },
      } as {}),
    });
    try {
      const [{ id }] = await registerWorker(conn, os.hostname(), process.pid);
      await conn.unsafe(`listen "${CANCEL_CHANNEL}"`);
      // What was canceled while no session listened (before this lease, or between two).
      cancels.check();
      const abort = new AbortController();
      const lease: Lease = { id, signal: abort.signal };
      const events = new EventEmitter() as WorkerEvents;
      events.on('pool:create', ({ workerPool }) => {
        if (!t) return;
        t.poolId = workerPool.id;
        attachWorkerPool(conn, id, workerPool.id).catch((e) => ctx.log.warn('worker registration failed', errorFields(e)));
        tick(true);
      });
      const pending: Partial<Term> = { conn, lease, abort, poolId: null, lost: false };
      t = pending as Term;
      t.runner = await run({
        pgPool: pgPool.pool,
        concurrency: ctx.config.workerConcurrency,
        taskList: createTaskList(ctx, lease),
        // The store's retention and orphan sweep (none when the store needs none).
        parsedCronItems: storeSweepCron(ctx.config),
        logger,
        events,
        noHandleSignals: true,
        pollInterval: 1000,
        // Completions and failures through graphile-worker's batcher, whose errors it handles:
        // unbatched (its default), a completion that fails because the database went away (a
        // failover) rejects where nothing awaits it, and that unhandled rejection ended the
        // process. Batched, the failure stops the runner instead, which restarts under a new lease
        // (below); the job stays locked until the dead-worker sweep frees it, and its task finds
        // the generation already settled when it runs again.
        preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
      });
      // The runner ends by itself when graphile-worker gives up on the database (a failover: it
      // could not complete or fail a job, and stops rather than guess). Its promise then rejects:
      // that is a lost lease like any other, never an unhandled rejection that ends the process.
      const started = t;
      t.runner.promise.then(
        () => { if (!stopping && !started.ended) leaseLost(started, 'its job runner stopped'); },
        (e) => { if (!stopping && !started.ended) leaseLost(started, `its job runner stopped: ${(e as Error)?.message ?? e}`); },
      );
      await startStoreSweep(ctx.config, t.runner);
      return t;
    } catch (e) {
      t = undefined;
      await conn.end({ timeout: 1 }).catch(() => {});
      throw e;
    }
  };

  /** The lease's session is gone: abort what runs under it, then start again under a new one. */
  const leaseLost = (t: Term, why: string) => {
    if (stopping || t.lost || t !== term) return;
    t.lost = true;
    ctx.log.warn('worker lost its lease; aborting its jobs and starting again', { worker: t.lease.id, why });
    t.abort.abort(new Error('the worker lost its database lease'));
    restarting = (async () => {
      t.ended = true;
      await t.runner.stop().catch((e) => ctx.log.warn('runner stop failed', errorFields(e)));
      await t.conn.end({ timeout: 1 }).catch(() => {});
      for (let i = 0; !stopping; i++) {
        try {
          term = await begin();
          return;
        } catch (e) {
          ctx.log.warn('worker restart failed; retrying', errorFields(e));
          await new Promise((r) => setTimeout(r, RESTART_BACKOFF_MS[Math.min(i, RESTART_BACKOFF_MS.length - 1)]));
        }
      }
    })().finally(() => {
      restarting = null;
    });
  };

  // Every sweepMs: unlock dead workers' jobs; every heartbeat interval, instead, beat (which
  // checks that this session still holds the lease) and the full sweep (dead workers' jobs and
  // orphaned generations, expired Idempotency-Key records, old upstream counts, old events).
  // The chores are in ./housekeeping.ts.
  let sweeping: Promise<void> | null = null;
  let lastBeat = 0;
  const tick = (full = false) => {
    if (sweeping || stopping || restarting) return;
    const t = term;
    if (!t || t.lost) return;
    sweeping = (async () => {
      try {
        const now = Date.now();
        if (full || now - lastBeat >= ctx.config.workerHeartbeatSeconds * 1000) {
          lastBeat = now;
          const [{ held }] = await beatWorker(t.conn, t.lease.id);
          if (!held) {
            leaseLost(t, 'its session no longer holds the lease');
            return;
          }
          await sweepDeadWorkers(ctx, t.conn);
          await purgeExpiredIdempotencyKeys(t.conn);
          await trimUpstreamCounts(t.conn);
          await purgeOldEvents(ctx, t.conn, () => stopping);
          await recordExpiredKeys(t.conn);
          await purgeOldAuditEntries(t.conn);
          await rollSpendPeriods(t.conn);
        } else {
          await unlockDeadWorkerJobs(ctx, t.conn);
        }
      } catch (e) {
        if (!stopping) ctx.log.warn('worker sweep failed', errorFields(e));
      } finally {
        sweeping = null;
      }
    })();
  };

  const end = async (t: Term) => {
    if (t.ended) return;
    t.ended = true;
    try {
      await t.runner.stop();
    } finally {
      await sweeping?.catch(() => {});
      await retireWorker(t.conn, t.lease.id).catch(() => {});
      await t.conn.end({ timeout: 5 });
    }
  };

  try {
    term = await begin();
  } catch (e) {
    await cancels.stop();
    await pgPool.close();
    throw e;
  }
  const timer = setInterval(tick, ctx.config.workerSweepMs);
  timer.unref();

  let stopped: Promise<void> | null = null;
  return {
    get runner() {
      return term.runner;
    },
    workerId: () => term.lease.id,
    stop() {
      stopped ??= (async () => {
        stopping = true;
        clearInterval(timer);
        await restarting?.catch(() => {});
        try {
          await end(term);
        } finally {
          await cancels.stop();
          // Every runner has stopped (each lease's in turn): the pool they shared ends last.
          unregisterPool('worker');
          await pgPool.close();
        }
      })();
      return stopped;
    },
  };
}
