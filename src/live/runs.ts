// Waiting on and streaming one workflow run: `Prefer: wait` on GET /workflows/{id}/runs/{runId},
// MCP's `waitSeconds`, and GET /workflows/{id}/runs/{runId}/events.

import type { EventStreamMessage } from 'h3';
import type { Caller } from '../auth/access.ts';
import type { Context } from '../context.ts';
import { watchWorkflowRun, type WatchedRunJson } from '../db/sql/watch_workflow_run.ts';
import { errors } from '../errors.ts';
import { readRun, renderRun, type RunIds, type RunRow } from '../workflows/service.ts';
import type { WorkflowRunBody } from '../workflows/schemas.ts';
import { keyOf } from './hub.ts';
import type { Feed } from './stream.ts';
import { isTerminal, waitUntil } from './wait.ts';

/**
 * Waits up to `seconds` for a run the caller was authorized for to complete or fail (or to be
 * found past its window, which rendering it then settles). `first` was read after `mark`.
 */
export function waitForRun(
  ctx: Context,
  caller: Caller,
  ids: RunIds,
  opts: { mark: number; first: RunRow | null; seconds: number; signal?: AbortSignal },
): Promise<{ state: RunRow | null; done: boolean }> {
  return waitUntil(ctx, {
    key: keyOf('run', ids.runId),
    mark: opts.mark,
    first: opts.first,
    read: () => readRun(ctx, caller, ids),
    done: (row) => !row || isTerminal(row.status) || row.expired,
    ms: opts.seconds * 1000,
    signal: opts.signal,
  });
}

interface RunState {
  body: WorkflowRunBody;
  /** Some output can still settle (a failed run's in-flight outputs may still record). */
  open: boolean;
}

/**
 * GET /workflows/{id}/runs/{runId}/events. Events, in order: `status` when the run is (or becomes)
 * pending or running (data = the GET body); per settled output, in `results` order, `output`
 * (data = its entry of `results`) then `progress` (data = { total, completed }); last, once the
 * run is completed or failed and no output can still settle, `status` with the full GET body.
 *
 * Event ids encode what the client has seen: 4 × (output and progress events sent) + status
 * ordinal (1 pending, 2 running, 3 terminal). Both parts only grow, and `results` keeps its order
 * (outputs settle one at a time under the run's row lock), so Last-Event-ID resumes with no gap
 * and no duplicate.
 */
export function runFeed(ctx: Context, caller: Caller, ids: RunIds, after: number | null): Feed<RunState, number> {
  const watch = async () => (await watchWorkflowRun(ctx.sql, caller.accountId, ids.workflowId, ids.runId))[0]?.r ?? null;
  return {
    key: keyOf('run', ids.runId),
    cursor: after ?? 0,
    async read() {
      let row: WatchedRunJson | null = await watch();
      if (!row) throw errors.notFound('Workflow run');
      const body = await renderRun(ctx, row, async () => (row = await watch()));
      return { body, open: row?.open ?? false };
    },
    async step({ body, open }, cursor) {
      let sent = Math.floor(cursor / 4);
      let status = cursor % 4;
      const events: EventStreamMessage[] = [];
      const id = () => String(sent * 4 + status);
      const now = body.status === 'pending' ? 1 : body.status === 'running' ? 2 : 0;
      if (now > status) {
        status = now;
        events.push({ id: id(), event: 'status', data: JSON.stringify(body) });
      }
      while (status < 3 && sent < 2 * body.results.length) {
        const odd = sent % 2 === 1;
        sent++;
        events.push(odd
          ? { id: id(), event: 'progress', data: JSON.stringify({ total: body.progress.total, completed: sent / 2 }) }
          : { id: id(), event: 'output', data: JSON.stringify(body.results[(sent - 1) / 2]) });
      }
      if (status < 3 && isTerminal(body.status) && !open) {
        status = 3;
        events.push({ id: id(), event: 'status', data: JSON.stringify(body) });
      }
      return { events, cursor: sent * 4 + status, done: status === 3 };
    },
  };
}
