// Worker side of cancel: a canceled generation's provider call is aborted wherever it runs. The
// SQL cancel NOTIFYs channel kiln:cancel with the generation id at commit; every worker process
// LISTENs (on its lease connection) and aborts it when it runs there. A notification sent while
// the listening connection was down is lost, so the worker also asks, on every (re)listen and every KILN_WORKER_SWEEP_MS
// while it runs anything, which of its generations have ended, and aborts those. Completion can
// never settle a canceled generation either way (kiln.complete_generation ignores ended ones).

import type { Context } from '../context.ts';
import { filterEndedGenerations } from '../db/sql/filter_ended_generations.ts';
import { errorFields } from '../log.ts';
import { abortGenerations, runningGenerations } from './running.ts';

export const CANCEL_CHANNEL = 'kiln:cancel';

export interface CancelWatch {
  /** A kiln:cancel notification: aborts the generation when it runs here. */
  notified(payload: string): void;
  /** The backstop, also run on every (re)listen: aborts what this process runs that has ended meanwhile. */
  check(): void;
  stop(): Promise<void>;
}

/**
 * The LISTEN itself runs on the worker's lease connection (../worker/worker.ts): a direct session
 * the worker holds anyway, so cancels cost no connection of their own (a LISTEN sent through
 * PgBouncer in transaction mode would not stay on one session). A new lease listens again and
 * calls check() for what it missed meanwhile.
 */
export function watchCancels(ctx: Context): CancelWatch {
  let stopped = false;
  let checking: Promise<void> | null = null;
  const check = () => {
    if (checking || stopped) return;
    const ids = runningGenerations();
    if (!ids.length) return;
    checking = (async () => {
      try {
        const [{ ids: ended }] = await filterEndedGenerations(ctx.sql, ids);
        const n = abortGenerations(ended, 'the generation ended elsewhere (canceled)');
        if (n) ctx.log.info('aborted generations that ended while running here', { count: n });
      } catch (e) {
        if (!stopped) ctx.log.warn('cancel check failed', errorFields(e));
      } finally {
        checking = null;
      }
    })();
  };
  const timer = setInterval(check, ctx.config.workerSweepMs);
  timer.unref();
  return {
    notified(payload) {
      abortGenerations([payload.toLowerCase()]);
    },
    check,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await checking;
    },
  };
}
