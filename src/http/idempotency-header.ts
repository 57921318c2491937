// The Idempotency-Key request header, checked by the rules in ../idempotency.ts.

import type { H3Event } from 'h3';
import { checkIdempotencyKey, IDEMPOTENCY_HEADER } from '../idempotency.ts';

export { IDEMPOTENCY_HEADER, REPLAYED_HEADER } from '../idempotency.ts';

/** The request's Idempotency-Key header, checked (null when absent). */
export function readIdempotencyKey(event: H3Event): string | null {
  const raw = event.req.headers.get(IDEMPOTENCY_HEADER);
  return raw === null ? null : checkIdempotencyKey(IDEMPOTENCY_HEADER, raw);
}
