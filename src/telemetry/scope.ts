// The Context of work traced under a span: a request's server span, a job's span, an MCP tool's.
// It is the process's Context (as its prototype) with `span` set, pools bound to the span (their
// queries are traced under it, telemetry/pool.ts), and a logger whose lines carry the span's
// trace_id and span_id (and the request's request_id). It is passed down explicitly like any Context; nothing is held
// in AsyncLocalStorage. Caches keyed by a Context or a pool use rootOf (src/root.ts).

import type { Span } from '@opentelemetry/api';
import type { Context } from '../context.ts';
import { ROOT, rootOf } from '../root.ts';
import { bindPool } from './pool.ts';

/** `ctx` for work under `span` (ctx itself without a span: tracing off). */
export function underSpan(ctx: Context, span: Span | undefined, requestId?: string): Context {
  if (span === undefined) return ctx;
  const root = rootOf(ctx);
  const { traceId, spanId } = span.spanContext();
  // The process's Context as prototype (everything else is read through), its own fields set in
  // one order: cheaper per request than a spread copy.
  const c = Object.create(root) as Context & { [ROOT]: Context };
  c[ROOT] = root;
  c.span = span;
  c.log = root.log.child(requestId === undefined ? { trace_id: traceId, span_id: spanId } : { trace_id: traceId, span_id: spanId, request_id: requestId });
  // An unsampled span records nothing: its queries need no span, so the pools stay the process's.
  if (span.isRecording()) {
    c.sql = bindPool(root.sql, span);
    c.direct = root.direct === root.sql ? c.sql : bindPool(root.direct, span);
  }
  return c;
}
