// Waiting on and streaming one workflow run: `Prefer: wait` on GET /workflows/{id}/runs/{runId},
// MCP's `waitSeconds`, and GET /workflows/{id}/runs/{runId}/events.

import type { EventStreamMessage } from 'h3';
import type { Caller } from '../auth/access.ts';
import type { Context } from '../context.ts';
import { watchWorkflowRun, type WatchedRunJson } from '../db/sql/watch_workflow_run.ts';
import { errors } from '../errors.ts';
import { readRun, renderRun, type RunIds, type RunRow } from '../workflows/service.ts';
import type { WorkflowRunBody } from '../workflows/schemas.ts';
import { getRunStreams, type RunStreamRow } from '../db/sql/get_generation_stream.ts';
import { flushEvents, streamEvents, type GenerationCursor } from './generations.ts';
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
  /** What its outputs in flight have written so far. */
  streams: RunStreamRow[];
}

/** Per output in flight (by ordinal): where the client stands in its stream. */
type OutputCursors = Record<number, GenerationCursor>;

/**
 * Where a client of a run's stream stands: `base` counts the output and progress events sent and
 * the status ordinal (4 × sent + status: 1 pending, 2 running, 3 terminal), and `outs` the stream
 * of each output in flight.
 */
export interface RunCursor {
  base: number;
  outs: OutputCursors;
}

/** `base`, then `:ordinal.S.C.P.G` per output in flight. */
export function runCursorId(c: RunCursor): string {
  const outs = Object.entries(c.outs).filter(([, o]) => o.session > 0).map(([ord, o]) => `:${ord}.${o.session}.${o.chars}.${o.preview}.${o.progress}`);
  return `${c.base}${outs.join('')}`;
}

/** A Last-Event-ID of a run's stream; the start for anything else. */
export function parseRunCursor(raw: string | null | undefined): RunCursor {
  const m = raw ? /^(\d{1,9})((?::\d{1,6}\.\d{1,9}\.\d{1,9}\.\d{1,9}\.\d{1,9}){0,256})$/.exec(raw.trim()) : null;
  if (!m) return { base: 0, outs: {} };
  const outs: OutputCursors = {};
  for (const part of m[2]!.split(':').slice(1)) {
    const [ord, session, chars, preview, progress] = part.split('.').map(Number) as [number, number, number, number, number];
    outs[ord] = { ord: 2, session, chars, preview, progress };
  }
  return { base: Number(m[1]), outs };
}

/** An output's stream event in a run's stream: its provider's progress is `output.progress` (the run's own is `progress`). */
function outputEvent(e: EventStreamMessage): EventStreamMessage {
  return e.event === 'progress' ? { ...e, event: 'output.progress' } : e;
}

const OUTPUT_START: GenerationCursor = { ord: 2, session: 0, chars: 0, preview: 0, progress: 0 };

/**
 * GET /workflows/{id}/runs/{runId}/events. Events, in order: `status` when the run is (or becomes)
 * pending or running (data = the GET body); per settled output, in `results` order, `output`
 * (data = its entry of `results`) then `progress` (data = { total, completed }); while outputs run,
 * their `delta`, `preview`, `output.progress` and `reset` events (data names the output's promptNodeId and
 * outputNodeId; docs/api.md, "Streaming"); last, once the run is completed or failed and no output
 * can still settle, `status` with the full GET body.
 *
 * Event ids encode what the client has seen (runCursorId): 4 × (output and progress events sent)
 * + status ordinal, then where each output in flight stands. `results` keeps its order (outputs
 * settle one at a time under the run's row lock), so Last-Event-ID resumes with no gap and no
 * duplicate.
 */
export function runFeed(ctx: Context, caller: Caller, ids: RunIds, after: string | null): Feed<RunState, RunCursor> {
  const watch = async () => (await watchWorkflowRun(ctx.sql, caller.accountId, ids.workflowId, ids.runId))[0]?.r ?? null;
  /** Outputs by generation id, as last read: a flush of one not known here reads the state. */
  const nodes = new Map<string, { ordinal: number; extra: Record<string, unknown> }>();
  let running = false;
  return {
    key: keyOf('run', ids.runId),
    cursor: parseRunCursor(after),
    async read() {
      let row: WatchedRunJson | null = await watch();
      if (!row) throw errors.notFound('Workflow run');
      const body = await renderRun(ctx, row, async () => (row = await watch()));
      const streams = isTerminal(body.status) && !row?.open ? [] : await getRunStreams(ctx.sql, caller.accountId, ids.runId);
      for (const s of streams) nodes.set(s.generation_id, { ordinal: s.ordinal, extra: { promptNodeId: s.prompt_node_id, outputNodeId: s.output_node_id } });
      return { body, open: row?.open ?? false, streams };
    },
    async step({ body, open, streams }, cursor) {
      let sent = Math.floor(cursor.base / 4);
      let status = cursor.base % 4;
      let outs: OutputCursors = { ...cursor.outs };
      const events: EventStreamMessage[] = [];
      const id = () => runCursorId({ base: sent * 4 + status, outs });
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
      // Outputs no longer in flight are forgotten; those in flight send what the client has not seen.
      const inFlight = new Set(streams.map((s) => s.ordinal));
      outs = Object.fromEntries(Object.entries(outs).filter(([ord]) => inFlight.has(Number(ord))));
      if (status < 3) {
        for (const s of streams) {
          const extra = { promptNodeId: s.prompt_node_id, outputNodeId: s.output_node_id };
          outs[s.ordinal] = await streamEvents(ctx, { row: null, stream: s }, outs[s.ordinal] ?? OUTPUT_START, (e) => events.push(outputEvent(e)), {
            extra, idOf: (c) => runCursorId({ base: sent * 4 + status, outs: { ...outs, [s.ordinal]: c } }),
          });
        }
      }
      if (status < 3 && isTerminal(body.status) && !open) {
        status = 3;
        outs = {};
        events.push({ id: id(), event: 'status', data: JSON.stringify(body) });
      }
      running = status === 2;
      return { events, cursor: { base: sent * 4 + status, outs }, done: status === 3 };
    },
    async take(n, cursor) {
      const node = n.g ? nodes.get(n.g) : undefined;
      if (!node || !running) return null;
      const events: EventStreamMessage[] = [];
      const base = cursor.base;
      const outs = { ...cursor.outs };
      const cur = await flushEvents(ctx, n.x!, outs[node.ordinal] ?? OUTPUT_START, (e) => events.push(outputEvent(e)), {
        extra: node.extra, idOf: (c) => runCursorId({ base, outs: { ...outs, [node.ordinal]: c } }),
      });
      if (!cur) return null;
      outs[node.ordinal] = cur;
      return { events, cursor: { base, outs } };
    },
  };
}
