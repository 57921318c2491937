// The parent span of the queries a batcher builds for several requests: a batch's query joins the
// trace of its first traced call (db/batch.ts names it; telemetry/pool.ts reads it as each query
// is built). Only synchronous building sees it.

import type { Span } from '@opentelemetry/api';

let current: Span | undefined;

/** Runs `build` with `parent` as the parent span of every query built during it (synchronously). */
export function withQueryParent<T>(parent: Span | undefined, build: () => T): T {
  if (parent === undefined) return build();
  const prev = current;
  current = parent;
  try {
    return build();
  } finally {
    current = prev;
  }
}

/** The parent withQueryParent names now (read synchronously, e.g. at the start of a batcher's call). */
export function currentQueryParent(): Span | undefined {
  return current;
}
