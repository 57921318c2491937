// CLI command `kiln store migrate --to s3|postgres` (added to the command table in
// src/cli/commands.ts): moves every object's bytes to the other backend while the service keeps
// serving (src/storage/move.ts). On a terminal it draws a progress bar with the count and the
// rate; elsewhere it prints JSON lines. Ctrl-C stops after the object in hand; run it again to go on.

import { openDatabase } from './boot.ts';
import { oneOf, parseArgs, UsageError } from './args.ts';
import type { Command } from './command.ts';
import type { MoveProgress, MoveResult } from '../storage/move.ts';
import type { Backend } from '../storage/store.ts';

function bar(p: MoveProgress, startedAt: number, width = 30): string {
  const total = Math.max(p.total, 1);
  const done = p.moved + p.skipped;
  const filled = Math.min(width, Math.round((done / total) * width));
  const secs = Math.max((Date.now() - startedAt) / 1000, 0.001);
  const rate = p.moved / secs;
  const mb = p.bytes / 1e6;
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${p.total} objects  ${rate.toFixed(1)}/s  ${mb.toFixed(1)} MB`;
}

export const storeCommands: Record<string, Command> = {
  'store migrate': {
    help: '--to s3|postgres (moves every object\'s bytes; stop with Ctrl-C and run again to resume)',
    async run(argv, config) {
      const { values } = parseArgs(argv, { options: { to: { type: 'string' } } });
      const to = oneOf(values.to, 'to', ['s3', 'postgres'] as const);
      if (!to) throw new UsageError('--to is required');
      if (!config.store.s3) throw new UsageError('set KILN_S3_BUCKET (and the other KILN_S3_* settings) for either direction');
      const tty = process.stdout.isTTY === true;
      const out = (line: string) => process.stdout.write(line);
      const startedAt = Date.now();
      const stop = new AbortController();
      const onSignal = () => {
        // Said at once (stderr, either mode): the object in hand may take a while to finish.
        if (!stop.signal.aborted) process.stderr.write(`${tty ? '\n' : ''}kiln: stopping after the object in hand; run the command again to go on\n`);
        stop.abort();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      const db = await openDatabase(config, { migrate: false, poolSize: 2, handleSignals: false });
      let last = 0;
      let result: MoveResult;
      try {
        const { moveObjects } = await import('../storage/move.ts');
        result = await moveObjects({ sql: db.sql, config }, to as Backend, {
          signal: stop.signal,
          onProgress(p) {
            const now = Date.now();
            if (tty) {
              if (now - last >= 100) out(`\r${bar(p, startedAt)}`);
            } else if (now - last >= 1000) {
              out(`${JSON.stringify({ event: 'progress', to, ...p, rate: Number((p.moved / Math.max((now - startedAt) / 1000, 0.001)).toFixed(2)) })}\n`);
            } else return;
            last = now;
          },
          // The bucket stopped answering: the move waits on the object in hand (docs/storage.md, "When the store is down").
          onPause(reason) {
            if (tty) process.stderr.write(`\nkiln: the image store does not answer (${reason}); paused until it does (Ctrl-C stops)\n`);
            else out(`${JSON.stringify({ event: 'paused', to, reason })}\n`);
          },
          onResume(pausedSeconds) {
            if (tty) process.stderr.write(`kiln: the image store answers again after ${pausedSeconds.toFixed(1)} s; going on\n`);
            else out(`${JSON.stringify({ event: 'resumed', to, pausedSeconds: Number(pausedSeconds.toFixed(3)) })}\n`);
          },
        });
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        await db.close();
      }
      const seconds = (Date.now() - startedAt) / 1000;
      if (tty) {
        out(`\r${bar(result, startedAt)}\n`);
        out(result.stopped
          ? `Stopped: ${result.remaining} objects are still on the other backend; run the command again to go on.\n`
          : `Done: ${result.moved} objects moved to ${to} in ${seconds.toFixed(1)} s (${result.skipped} skipped; ${result.remaining} left elsewhere).\n`);
      } else {
        out(`${JSON.stringify({ event: result.stopped ? 'stopped' : 'done', ...result, seconds: Number(seconds.toFixed(3)) })}\n`);
      }
      if (result.stopped) process.exitCode = 130;
      return undefined;
    },
  },
};
