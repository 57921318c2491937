// Task webhook__deliver: one attempt of one webhook delivery (src/webhooks/deliver.ts). Jobs run in
// a queue per endpoint (one at a time per endpoint), so a hanging receiver holds at most one
// worker slot for at most KILN_WEBHOOK_TIMEOUT_MS per attempt.

import type { JobHelpers, Task } from 'graphile-worker';
import type { Context } from '../src/context.ts';
import { isUuid } from '../src/schemas.ts';
import { deliver } from '../src/webhooks/deliver.ts';

export default function webhookDeliver(ctx: Context): Task {
  return async (payload: unknown, helpers: JobHelpers) => {
    const p = payload as { d?: unknown; r?: unknown; n?: unknown } | null;
    if (!isUuid(p?.d) || !Number.isInteger(p?.r) || !Number.isInteger(p?.n)) {
      helpers.logger.error('webhook__deliver: malformed payload; dropping the job');
      return;
    }
    await deliver(ctx, { d: p.d, r: p.r as number, n: p.n as number });
  };
}
