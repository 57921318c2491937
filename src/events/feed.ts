// GET /events: every event of a billing scope as server-sent events, read from the outbox.
//
// Ordering without gaps: event ids come from a sequence, and concurrent transactions can commit
// out of id order (id 7 may become visible after id 8). The stream therefore orders events by
// (writing transaction id, id) and sends only events of transactions that have ended (below the
// snapshot's xmin): no event can appear behind one already sent, so `Last-Event-ID` = "tx-id"
// resumes with no gap and no duplicate, on any API process. Committed events held back by an
// older open transaction are read again shortly (not only on the next notice).

import type { EventStreamMessage } from 'h3';
import type { Context } from '../context.ts';
import { eventId, parseEventId, type EventCursor } from './ids.ts';
import { eventsHorizon } from '../db/sql/events_horizon.ts';
import { readEvents, type EventRow } from '../db/sql/read_events.ts';
import { keyOf } from '../live/hub.ts';
import type { Feed } from '../live/stream.ts';
import { eventBody } from './body.ts';

/** How far back Last-Event-ID resumes. */
export const RESUME_WINDOW_MS = 24 * 3600_000;
const PAGE = 100;
/** While committed events wait for an older transaction: read again this often. */
const HELD_BACK_POLL_MS = 100;

/** Where a stream starts: after Last-Event-ID, or (none given) at the oldest open transaction. */
export async function startCursor(ctx: Context, lastEventId: string | null): Promise<EventCursor> {
  const given = parseEventId(lastEventId);
  if (given) return given;
  const [row] = await eventsHorizon(ctx.sql);
  return { tx: row!.tx, id: '0' };
}

export function eventsFeed(ctx: Context, scopeId: string, start: EventCursor): Feed<EventRow[], EventCursor> {
  let cursor = start;
  let again: number | null = null;
  return {
    key: keyOf('events', scopeId),
    cursor: start,
    async read() {
      // Held events come after every row read (their transactions are newer than the snapshot's
      // horizon, the rows' older), so the flag says whether to read again soon.
      const { rows, held } = await readEvents(ctx.sql, scopeId, cursor, new Date(Date.now() - RESUME_WINDOW_MS), PAGE);
      again = rows.length === PAGE ? 0 : held ? HELD_BACK_POLL_MS : null;
      return rows;
    },
    async step(rows, from) {
      const events: EventStreamMessage[] = [];
      let next = from;
      for (const r of rows) {
        const data = await eventBody(ctx, { id: r.id, type: r.type, occurredAt: r.occurred_at, data: r.data, body: r.body });
        events.push({ id: eventId(r), event: r.type, data });
        next = { tx: r.tx, id: r.id };
      }
      cursor = next;
      return { events, cursor: next, done: false };
    },
    again: () => again,
  };
}
