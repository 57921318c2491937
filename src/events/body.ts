// The message an outbox event is sent as: the same bytes in every webhook delivery, redelivery
// and GET /events stream of it.

import type { Context } from '../context.ts';
import type { StoredEvent } from '../db/sql/begin_webhook_attempt.ts';
import { freezeEventBody } from '../db/sql/freeze_event_body.ts';
import { renderGeneration, type GenerationRow } from '../generations/service.ts';
import { renderRun, type RunRow } from '../workflows/service.ts';

/**
 * An event's message body `{ type, timestamp, data }`: the stored one, or rendered now (image
 * URLs signed now) and stored first-writer-wins, so every delivery, redelivery and stream of the
 * event sends the same bytes.
 */
export async function eventBody(ctx: Context, ev: StoredEvent): Promise<string> {
  if (ev.body) return ev.body;
  let data: unknown = ev.data;
  if (ev.type.startsWith('generation.')) data = await renderGeneration(ctx, ev.data as GenerationRow);
  else if (ev.type.startsWith('workflow_run.')) {
    const run = ev.data as RunRow;
    // A terminal run is never past its window: the reread is not reached.
    data = await renderRun(ctx, { ...run, expired: false }, async () => run);
  }
  const body = JSON.stringify({ type: ev.type, timestamp: ev.occurredAt, data });
  const [row] = await freezeEventBody(ctx.sql, ev.id, body);
  return row?.body ?? body;
}
