// Structured one-line JSON logs on stderr. Callers pass fields, never SQL parameters or secrets.
// Work traced under a span logs through a child logger (telemetry/scope.ts): each of its lines
// carries the span's trace_id and span_id, and the request_id of the request being served.

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type Level = keyof typeof LEVELS;
/** What KILN_LOG accepts (docs/configuration.md). */
export const LOG_LEVELS = Object.keys(LEVELS) as Level[];

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
  return new JsonLogger(LEVELS[(level in LEVELS ? level : 'info') as Level], base);
}

// A class, not closures: a traced request makes a child logger, and closures cost more to make.
class JsonLogger implements Logger {
  constructor(
    private readonly min: number,
    private readonly base: Record<string, unknown> | undefined,
  ) {}

  private write(lvl: Level, msg: string, fields: Record<string, unknown> | undefined): void {
    if (LEVELS[lvl] < this.min) return;
    process.stderr.write(JSON.stringify({ t: new Date().toISOString(), level: lvl, msg, ...this.base, ...fields }) + '\n');
  }

  debug(msg: string, fields?: Record<string, unknown>): void {
    this.write('debug', msg, fields);
  }

  info(msg: string, fields?: Record<string, unknown>): void {
    this.write('info', msg, fields);
  }

  warn(msg: string, fields?: Record<string, unknown>): void {
    this.write('warn', msg, fields);
  }

  error(msg: string, fields?: Record<string, unknown>): void {
    this.write('error', msg, fields);
  }

  enabled(lvl: Level): boolean {
    return LEVELS[lvl] >= this.min;
  }

  child(fields: Record<string, unknown>): Logger {
    return new JsonLogger(this.min, this.base ? { ...this.base, ...fields } : fields);
  }
}

/** A loggable summary of an error: class, code and message only (no query, parameters or detail). */
export function errorFields(e: unknown): Record<string, unknown> {
  const err = e as any;
  return { err: err?.name ?? typeof e, code: typeof err?.code === 'string' ? err.code : undefined, message: String(err?.message ?? e).slice(0, 500) };
}
