// Structured one-line JSON logs on stderr. Callers pass fields, never SQL parameters or secrets.
// While a span is active (tracing on), each line also carries its trace_id, span_id and the
// request_id of the request being served.

import { context, trace } from '@opentelemetry/api';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type Level = keyof typeof LEVELS;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Whether lines at `level` are written (to skip building fields nobody reads). */
  enabled(level: Level): boolean;
}

export function createLogger(level: string): Logger {
  const min = LEVELS[(level in LEVELS ? level : 'info') as Level];
  const emit = (lvl: Level) => (msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS[lvl] < min) return;
    process.stderr.write(JSON.stringify({ t: new Date().toISOString(), level: lvl, msg, ...correlation(), ...fields }) + '\n');
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error'), enabled: (lvl) => LEVELS[lvl] >= min };
}

/** Set by telemetry/http.ts on a request's server span: the request's id, which log lines carry. */
export const REQUEST_ID_ON_SPAN = Symbol('kiln.request_id');

/** trace_id, span_id and request_id of the active span (none without tracing: no context manager, no span). */
function correlation(): Record<string, string> | undefined {
  const span = trace.getSpan(context.active());
  if (!span) return undefined;
  const sc = span.spanContext();
  // On a request's server span, and on the spans made active under it (telemetry/tracing.ts).
  const id = (span as { [REQUEST_ID_ON_SPAN]?: string })[REQUEST_ID_ON_SPAN];
  return id ? { trace_id: sc.traceId, span_id: sc.spanId, request_id: id } : { trace_id: sc.traceId, span_id: sc.spanId };
}

/** A loggable summary of an error: class, code and message only (no query, parameters or detail). */
export function errorFields(e: unknown): Record<string, unknown> {
  const err = e as any;
  return { err: err?.name ?? typeof e, code: typeof err?.code === 'string' ? err.code : undefined, message: String(err?.message ?? e).slice(0, 500) };
}
