// Structured one-line JSON logs on stderr. Callers pass fields, never SQL parameters or secrets.
// Work traced under a span logs through a child logger (telemetry/scope.ts): each of its lines
// carries the span's trace_id and span_id, and the request_id of the request being served.

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type Level = keyof typeof LEVELS;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Whether lines at `level` are written (to skip building fields nobody reads). */
  enabled(level: Level): boolean;
  /** A logger whose every line also carries `fields` (after the message, before the line's own). */
  child(fields: Record<string, unknown>): Logger;
}

export function createLogger(level: string, base?: Record<string, unknown>): Logger {
  const min = LEVELS[(level in LEVELS ? level : 'info') as Level];
  const emit = (lvl: Level) => (msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS[lvl] < min) return;
    process.stderr.write(JSON.stringify({ t: new Date().toISOString(), level: lvl, msg, ...base, ...fields }) + '\n');
  };
  return {
    debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error'),
    enabled: (lvl) => LEVELS[lvl] >= min,
    child: (fields) => createLogger(level, base ? { ...base, ...fields } : fields),
  };
}

/** A loggable summary of an error: class, code and message only (no query, parameters or detail). */
export function errorFields(e: unknown): Record<string, unknown> {
  const err = e as any;
  return { err: err?.name ?? typeof e, code: typeof err?.code === 'string' ? err.code : undefined, message: String(err?.message ?? e).slice(0, 500) };
}
