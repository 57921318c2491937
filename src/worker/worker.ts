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
import { run, Logger, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker';
import type { Context } from '../context.ts';
import { errorFields } from '../log.ts';
import { ownedPgPool, type OwnedPgPool } from '../db/pg-pool.ts';
import { attachWorkerPool } from '../db/sql/attach_worker_pool.ts';
import { beatWorker } from '../db/sql/beat_worker.ts';
import { registerWorker } from '../db/sql/register_worker.ts';
import { retireWorker } from '../db/sql/retire_worker.ts';
import { CANCEL_CHANNEL, watchCancels, type CancelWatch } from '../generations/cancel.ts';
import type { Lease } from '../generations/lease.ts';
import { createTaskList } from '../../tasks/index.ts';
import { startStoreSweep, storeSweepCron } from '../../tasks/store__sweep.ts';
import { registerPool, unregisterPool } from '../telemetry/metrics.ts';
import { purgeExpiredIdempotencyKeys, purgeOldAuditEntries, purgeOldEvents, recordExpiredKeys, rollSpendPeriods, sweepDeadWorkers, tendBatches, trimUpstreamCounts, unlockDeadWorkerJobs } from './housekeeping.ts';

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

/** One worker process across its leases: what the parts below share. */
interface Worker {
  readonly ctx: Context;
  readonly url: string;
  readonly logger: Logger;
  /**
   * graphile-worker's connections, on a pool this worker owns and ends itself (../db/pg-pool.ts);
   * the runners of successive leases share it.
   */
  readonly pgPool: OwnedPgPool;
  readonly cancels: CancelWatch;
  stopping: boolean;
  /** The current lease and its runner (unset until the first has begun). */
  term: Term | undefined;
  restarting: Promise<void> | null;
  sweeping: Promise<void> | null;
  lastBeat: number;
}

export async function startWorker(ctx: Context, url: string): Promise<WorkerHandle> {
  const w: Worker = {
    ctx,
    url,
    logger: workerLogger(ctx),
    // graphile-worker's default size (10) unless set.
    pgPool: ownedPgPool(url, { max: ctx.config.workerDbPoolSize, name: 'kiln-worker', onError: (e) => { if (!w.stopping) ctx.log.warn('worker pool connection error', errorFields(e)); } }),
    cancels: watchCancels(ctx),
    stopping: false,
    term: undefined,
    restarting: null,
    sweeping: null,
    lastBeat: 0,
  };
  const p = w.pgPool.pool;
  registerPool('worker', () => ({ max: ctx.config.workerDbPoolSize, busy: p.totalCount - p.idleCount, idle: p.idleCount, waiting: p.waitingCount }));

  try {
    w.term = await begin(w);
  } catch (e) {
    await w.cancels.stop();
    await w.pgPool.close();
    throw e;
  }
  const timer = setInterval(() => tick(w), ctx.config.workerSweepMs);
  timer.unref();

  let stopped: Promise<void> | null = null;
  return {
    get runner() {
      return w.term!.runner;
    },
    workerId: () => w.term!.lease.id,
    stop() {
      stopped ??= (async () => {
        w.stopping = true;
        clearInterval(timer);
        await w.restarting?.catch(() => {});
        try {
          await end(w, w.term!);
        } finally {
          await w.cancels.stop();
          // Every runner has stopped (each lease's in turn): the pool they shared ends last.
          unregisterPool('worker');
          await w.pgPool.close();
        }
      })();
      return stopped;
    },
  };
}

// ------------------------------------------------------------------ the lease and its runner

/** A lease (own connection, advisory lock, registration), then a runner whose tasks run under it. */
async function begin(w: Worker): Promise<Term> {
  const { ctx } = w;
  let t: Term | undefined;
  const conn = leaseConnection(w, () => t);
  try {
    const [{ id }] = await registerWorker(conn, os.hostname(), process.pid);
    await conn.unsafe(`listen "${CANCEL_CHANNEL}"`);
    // What was canceled while no session listened (before this lease, or between two).
    w.cancels.check();
    const abort = new AbortController();
    const lease: Lease = { id, signal: abort.signal };
    const events = new EventEmitter() as WorkerEvents;
    events.on('pool:create', ({ workerPool }) => {
      if (!t) return;
      t.poolId = workerPool.id;
      attachWorkerPool(conn, id, workerPool.id).catch((e) => ctx.log.warn('worker registration failed', errorFields(e)));
      tick(w, true);
    });
    const pending: Partial<Term> = { conn, lease, abort, poolId: null, lost: false };
    t = pending as Term;
    t.runner = await startRunner(w, lease, events);
    // The runner ends by itself when graphile-worker gives up on the database (a failover: it
    // could not complete or fail a job, and stops rather than guess). Its promise then rejects:
    // that is a lost lease like any other, never an unhandled rejection that ends the process.
    const started = t;
    t.runner.promise.then(
      () => { if (!w.stopping && !started.ended) leaseLost(w, started, 'its job runner stopped'); },
      (e) => { if (!w.stopping && !started.ended) leaseLost(w, started, `its job runner stopped: ${(e as Error)?.message ?? e}`); },
    );
    return t;
  } catch (e) {
    t = undefined;
    await conn.end({ timeout: 1 }).catch(() => {});
    throw e;
  }
}

/**
 * The lease's own connection: one that lives as long as the lease (no idle timeout, no maximum
 * lifetime). Its close loses the lease of `term()`; kiln:cancel notifications arrive on it.
 */
function leaseConnection(w: Worker, term: () => Term | undefined): postgres.Sql<{}> {
  return postgres(w.url, {
    max: 1,
    idle_timeout: 0,
    max_lifetime: null,
    onnotice: () => {},
    connection: { application_name: 'kiln-worker-lease' },
    onclose: () => {
      const t = term();
      if (t) leaseLost(w, t, 'its database session closed');
    },
    // kiln:cancel arrives here: the lease's session is direct and lives as long as the lease.
    // postgres.js passes `onnotify` to its connections (the option its own listen() uses) but
    // leaves it out of its types.
    ...({
      onnotify: (channel: string, payload: string) => {
        if (channel === CANCEL_CHANNEL) w.cancels.notified(payload);
      },
    } as {}),
  });
}

/** The flag of batch__run jobs (kiln_private.dispatch_batches). */
const BATCH_FLAG = 'batch';

/**
 * Batch lines take at most KILN_WORKER_CONCURRENCY − KILN_WORKER_INTERACTIVE_SLOTS of the runner's
 * slots (at least one): while that many batch__run jobs run, free slots fetch other jobs only
 * (graphile-worker's forbiddenFlags), so an interactive generation always finds a slot while a
 * batch drains. A batch job picked up past the limit (two slots fetching at once) is handed back
 * under its key, to run when a batch slot frees.
 */
function batchLanes(ctx: Context, lease: Lease): { taskList: TaskList; forbiddenFlags: () => string[] | null } {
  const max = Math.max(1, ctx.config.workerConcurrency - ctx.config.workerInteractiveSlots);
  let running = 0;
  const taskList = createTaskList(ctx, lease);
  const inner = taskList.batch__run!;
  taskList.batch__run = async (payload, helpers) => {
    if (running >= max) {
      const { job } = helpers;
      await helpers.addJob('batch__run', payload as Record<string, unknown>, {
        ...(job.key ? { jobKey: job.key } : {}), priority: job.priority, maxAttempts: job.max_attempts, flags: [BATCH_FLAG],
      });
      return;
    }
    running++;
    try {
      return await inner(payload, helpers);
    } finally {
      running--;
    }
  };
  return { taskList, forbiddenFlags: () => (running >= max ? [BATCH_FLAG] : null) };
}

/** graphile-worker running Kiln's tasks under `lease`, and the store's sweep. */
async function startRunner(w: Worker, lease: Lease, events: WorkerEvents): Promise<Runner> {
  const { ctx } = w;
  const lanes = batchLanes(ctx, lease);
  const runner = await run({
    pgPool: w.pgPool.pool,
    concurrency: ctx.config.workerConcurrency,
    taskList: lanes.taskList,
    forbiddenFlags: lanes.forbiddenFlags,
    // The store's retention and orphan sweep (none when the store needs none).
    parsedCronItems: storeSweepCron(ctx.config),
    logger: w.logger,
    events,
    noHandleSignals: true,
    pollInterval: 1000,
    // Completions and failures through graphile-worker's batcher, whose errors it handles:
    // unbatched (its default), a completion that fails because the database went away (a
    // failover) rejects where nothing awaits it, and that unhandled rejection ended the process.
    // Batched, the failure stops the runner instead, which restarts under a new lease (begin);
    // the job stays locked until the dead-worker sweep frees it, and its task finds the
    // generation already settled when it runs again.
    preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
  });
  await startStoreSweep(ctx.config, runner);
  return runner;
}

/** The lease's session is gone: abort what runs under it, then start again under a new one. */
function leaseLost(w: Worker, t: Term, why: string): void {
  const { ctx } = w;
  if (w.stopping || t.lost || t !== w.term) return;
  t.lost = true;
  ctx.log.warn('worker lost its lease; aborting its jobs and starting again', { worker: t.lease.id, why });
  t.abort.abort(new Error('the worker lost its database lease'));
  w.restarting = (async () => {
    t.ended = true;
    await t.runner.stop().catch((e) => ctx.log.warn('runner stop failed', errorFields(e)));
    await t.conn.end({ timeout: 1 }).catch(() => {});
    for (let i = 0; !w.stopping; i++) {
      try {
        w.term = await begin(w);
        return;
      } catch (e) {
        ctx.log.warn('worker restart failed; retrying', errorFields(e));
        await new Promise((r) => setTimeout(r, RESTART_BACKOFF_MS[Math.min(i, RESTART_BACKOFF_MS.length - 1)]));
      }
    }
  })().finally(() => {
    w.restarting = null;
  });
}

/** Stops a lease's runner, then retires the lease and closes its connection. */
async function end(w: Worker, t: Term): Promise<void> {
  if (t.ended) return;
  t.ended = true;
  try {
    await t.runner.stop();
  } finally {
    await w.sweeping?.catch(() => {});
    await retireWorker(t.conn, t.lease.id).catch(() => {});
    await t.conn.end({ timeout: 5 });
  }
}

// ------------------------------------------------------------------ the housekeeping loop

/**
 * Every sweepMs: unlock dead workers' jobs; every heartbeat interval, instead, beat (which
 * checks that this session still holds the lease) and the full sweep (dead workers' jobs and
 * orphaned generations, expired Idempotency-Key records, old upstream counts, old events).
 * The chores are in ./housekeeping.ts.
 */
function tick(w: Worker, full = false): void {
  const { ctx } = w;
  if (w.sweeping || w.stopping || w.restarting) return;
  const t = w.term;
  if (!t || t.lost) return;
  w.sweeping = (async () => {
    try {
      const now = Date.now();
      if (full || now - w.lastBeat >= ctx.config.workerHeartbeatSeconds * 1000) {
        w.lastBeat = now;
        const [{ held }] = await beatWorker(t.conn, t.lease.id);
        if (!held) {
          leaseLost(w, t, 'its session no longer holds the lease');
          return;
        }
        await sweepDeadWorkers(ctx, t.conn);
        await purgeExpiredIdempotencyKeys(t.conn);
        await trimUpstreamCounts(t.conn);
        await purgeOldEvents(ctx, t.conn, () => w.stopping);
        await recordExpiredKeys(t.conn);
        await purgeOldAuditEntries(t.conn);
        await rollSpendPeriods(t.conn);
        await tendBatches(t.conn);
      } else {
        await unlockDeadWorkerJobs(ctx, t.conn);
      }
    } catch (e) {
      if (!w.stopping) ctx.log.warn('worker sweep failed', errorFields(e));
    } finally {
      w.sweeping = null;
    }
  })();
}
