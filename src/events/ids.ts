// The ids an event goes by outside Kiln: its GET /events id (`<tx>-<id>`, the stream's resume
// point) and its message's Standard Webhooks `webhook-id`. No imports: `kiln listen` derives a
// forward's webhook-id with the same function the delivery task signs with.

export interface EventCursor {
  tx: string;
  id: string;
}

const MAX_XID8 = 2n ** 64n - 1n;
const MAX_BIGINT = 2n ** 63n - 1n;

/** An event id `<tx>-<id>` (both decimal, in range), or null (then the stream starts from now). */
export function parseEventId(raw: string | null | undefined): EventCursor | null {
  const m = /^(\d{1,20})-(\d{1,19})$/.exec(raw?.trim() ?? '');
  if (!m || BigInt(m[1]!) > MAX_XID8 || BigInt(m[2]!) > MAX_BIGINT) return null;
  return { tx: m[1]!, id: m[2]! };
}

export function eventId(row: { tx: string; id: string }): string {
  return `${row.tx}-${row.id}`;
}

/**
 * The `webhook-id` of an event's message (the outbox row's id): one per event, as Standard
 * Webhooks has it — the same at every endpoint the event goes to, on every attempt, redelivery
 * and recovery, and in `kiln listen`'s forwards — so a receiver deduplicates on it alike in
 * development and in production.
 */
export function webhookId(eventRowId: string | number): string {
  return `msg_${eventRowId}`;
}

/** The `webhook-id` of the event a GET /events id names, or null when it is not an event id. */
export function webhookIdOfStreamId(streamId: string): string | null {
  const cursor = parseEventId(streamId);
  return cursor && webhookId(cursor.id);
}
