// Runs graphile-worker with Kiln's tasks.

import { run, Logger, type Runner } from 'graphile-worker';
import type { Context } from './context.ts';
import { taskList } from '../tasks/index.ts';

export async function startWorker(ctx: Context, url: string): Promise<{ runner: Runner; stop(): Promise<void> }> {
  const logger = new Logger((scope) => (level, message, meta) => {
    const fn = level === 'error' ? ctx.log.error : level === 'warning' ? ctx.log.warn : ctx.log.debug;
    fn(message, { scope: scope.label, task: scope.taskIdentifier, jobId: scope.jobId });
  });
  const runner = await run({
    connectionString: url,
    concurrency: ctx.config.workerConcurrency,
    taskList,
    logger,
    noHandleSignals: true,
    pollInterval: 1000,
  });
  return {
    runner,
    async stop() {
      await runner.stop();
    },
  };
}
