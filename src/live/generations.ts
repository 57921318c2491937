// Waiting on and streaming one generation: `Prefer: wait` on POST and GET /generations/{id},
// MCP's `waitSeconds`, and GET /generations/{id}/events.

import type { EventStreamMessage } from 'h3';
import type { Caller } from '../auth/access.ts';
import type { Context } from '../context.ts';
import type { GenerationBody } from '../db/sql/get_generations.ts';
import { readGeneration, renderGeneration } from '../generations/service.ts';
import { keyOf, type Notice } from './hub.ts';
import type { Feed } from './stream.ts';
import { isTerminal, waitUntil } from './wait.ts';

/**
 * Waits up to `seconds` for a generation the caller was authorized for to complete or fail.
 * `first` is the state read after `mark` was taken (a stand-in `pending` row right after creating
 * it). Returns the last state read and whether it is terminal.
 */
export function waitForGeneration(
  ctx: Context,
  caller: Caller,
  id: string,
  opts: { mark: number; first: GenerationBody | null; seconds: number; signal?: AbortSignal },
): Promise<{ state: GenerationBody | null; done: boolean }> {
  return waitUntil(ctx, {
    key: keyOf('generation', id.toLowerCase()),
    mark: opts.mark,
    first: opts.first,
    read: () => readGeneration(ctx, caller, id),
    done: (row) => !row || isTerminal(row.status),
    // The notice carries the new status: `processing` is not worth a read.
    relevant: (n) => !n.s || isTerminal(n.s),
    carried: carriedBody,
    ms: opts.seconds * 1000,
    signal: opts.signal,
  });
}

/**
 * The body a generation's status notice carries (kiln_private.tg_generations__notify), so its
 * waiters and streams answer without reading it again; undefined when the notice has none.
 */
export function carriedBody(n: Notice): GenerationBody | undefined {
  const b = n.b as GenerationBody | undefined;
  return b && typeof b === 'object' && b.id === n.id && b.status === n.s ? b : undefined;
}

/** A freshly created generation as its waiter first sees it (nothing has been read yet). */
export function pendingRow(id: string, type: 'image' | 'code'): GenerationBody {
  return { id, status: 'pending', type, result: null, error: null, cost_micros: null };
}

/** Event ids of a generation: its status ordinal. A retry's move back to `pending` is not an event (docs/api.md, "Waiting and live events": one event per status reached). */
const ORDINAL: Record<GenerationBody['status'], number> = { pending: 1, processing: 2, completed: 3, failed: 3 };
export const GENERATION_LAST_EVENT_ID = 3;

/**
 * GET /generations/{id}/events: one `status` event per status the generation reaches (id = its
 * ordinal: 1 pending, 2 processing, 3 completed or failed; data = the GET body); the terminal one
 * is last. `after` is the client's Last-Event-ID (events up to it are not sent again).
 */
export function generationFeed(ctx: Context, caller: Caller, id: string, after: number | null): Feed<GenerationBody | null, number> {
  return {
    key: keyOf('generation', id),
    cursor: Math.min(after ?? 0, GENERATION_LAST_EVENT_ID),
    read: () => readGeneration(ctx, caller, id),
    carried: carriedBody,
    async step(row, cursor) {
      if (!row) return { events: [], cursor, done: true };
      const ord = ORDINAL[row.status];
      const events: EventStreamMessage[] = [];
      if (ord > cursor) events.push({ id: String(ord), event: 'status', data: JSON.stringify(await renderGeneration(ctx, row)) });
      return { events, cursor: Math.max(ord, cursor), done: ord === GENERATION_LAST_EVENT_ID };
    },
  };
}
