// GET /batches/{id}/events (docs/api.md, "Batches"): `progress` with the batch (its requestCounts)
// whenever lines have ended, and the terminal `status` last. Ids are the number of lines ended
// (the terminal event's: total + 1), so Last-Event-ID resumes with no repeat.

import type { EventStreamMessage } from 'h3';
import type { Caller } from '../auth/access.ts';
import type { Context } from '../context.ts';
import { getBatch, type BatchJson } from '../db/sql/batches.ts';
import { keyOf } from './hub.ts';
import type { Feed } from './stream.ts';

const ENDED = new Set(['completed', 'canceled', 'expired']);

export function batchFeed(ctx: Context, caller: Caller, id: string, after: string | null): Feed<BatchJson | null, number> {
  const cursor = after !== null && /^\d{1,9}$/.test(after.trim()) ? Number(after.trim()) : -1;
  return {
    key: keyOf('batch', id),
    cursor,
    read: async () => (await getBatch(ctx.sql, caller.accountId, id))[0]?.b ?? null,
    async step(b, cur) {
      if (!b) return { events: [], cursor: cur, done: true };
      const c = b.requestCounts;
      const ended = c.completed + c.failed + c.canceled;
      const events: EventStreamMessage[] = [];
      if (ENDED.has(b.status)) {
        if (cur <= c.total) events.push({ id: String(c.total + 1), event: 'status', data: JSON.stringify(b) });
        return { events, cursor: c.total + 1, done: true };
      }
      if (ended > cur) events.push({ id: String(ended), event: 'progress', data: JSON.stringify(b) });
      return { events, cursor: Math.max(cur, ended), done: false };
    },
  };
}
