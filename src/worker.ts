// Runs graphile-worker with Kiln's tasks, plus crash recovery: the pool heartbeats on its own
// connection, and every worker periodically sweeps — jobs locked by a pool whose heartbeat is
// older than KILN_WORKER_STALE_SECONDS are unlocked (force_unlock_workers) so another worker
// picks them up, instead of waiting for graphile-worker's 4-hour lock expiry.

import { EventEmitter } from 'node:events';
import os from 'node:os';
import { run, Logger, type Runner, type WorkerEvents } from 'graphile-worker';
import type { Context } from './context.ts';
import { connect } from './db.ts';
import { errorFields } from './log.ts';
import { createTaskList } from '../tasks/index.ts';

export interface WorkerHandle {
  runner: Runner;
  /** The graphile-worker pool id: what this process's jobs are locked_by. */
  workerId(): string | null;
  stop(): Promise<void>;
}

export async function startWorker(ctx: Context, url: string): Promise<WorkerHandle> {
  const logger = new Logger((scope) => (level, message) => {
    const fn = level === 'error' ? ctx.log.error : level === 'warning' ? ctx.log.warn : ctx.log.debug;
    fn(message, { scope: scope.label, task: scope.taskIdentifier, jobId: scope.jobId });
  });
  // Heartbeats get their own connection so a busy task pool can never delay them.
  const hb = connect(url, { max: 1, appName: 'kiln-heartbeat' });
  const events = new EventEmitter() as WorkerEvents;
  let poolId: string | null = null;
  let beating: Promise<void> | null = null;

  const beat = async () => {
    if (!poolId) return;
    await hb`select kiln.beat_worker(${poolId}, ${os.hostname()}, ${process.pid}::int)`;
  };
  const tick = () => {
    beating ??= (async () => {
      try {
        await beat();
        const [{ r }] = await hb`select kiln.sweep_workers(${ctx.config.workerStaleSeconds}::int) as r`;
        if (r?.unlocked?.length) ctx.log.warn('unlocked the jobs of unresponsive workers', { workers: r.unlocked });
        if (r?.failed_generations) ctx.log.warn('failed generations no job could finish', { count: r.failed_generations });
      } catch (e) {
        ctx.log.warn('worker heartbeat failed', errorFields(e));
      } finally {
        beating = null;
      }
    })();
  };
  events.on('pool:create', ({ workerPool }) => {
    poolId = workerPool.id;
    tick();
  });

  let runner: Runner;
  try {
    runner = await run({
      connectionString: url,
      concurrency: ctx.config.workerConcurrency,
      taskList: createTaskList(ctx),
      logger,
      events,
      noHandleSignals: true,
      pollInterval: 1000,
    });
  } catch (e) {
    await hb.end({ timeout: 1 });
    throw e;
  }
  const timer = setInterval(tick, ctx.config.workerHeartbeatSeconds * 1000);
  timer.unref();

  let stopping: Promise<void> | null = null;
  return {
    runner,
    workerId: () => poolId,
    stop() {
      stopping ??= (async () => {
        clearInterval(timer);
        try {
          await runner.stop();
        } finally {
          await beating?.catch(() => {});
          if (poolId) await hb`select kiln.retire_worker(${poolId})`.catch(() => {});
          await hb.end({ timeout: 5 });
        }
      })();
      return stopping;
    },
  };
}
