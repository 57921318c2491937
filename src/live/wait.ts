// Waiting for a job or run to settle without polling: `Prefer: wait=N` on REST, `waitSeconds` on
// MCP. The waiter sleeps on the status hub (no database connection held) and reads the state
// again only when a notification says it may have changed.

import type { Context } from '../context.ts';
import { errorFields } from '../log.ts';
import { hubOf, type Notice } from './hub.ts';

/** `Prefer: wait=N` accepts 1 ≤ N ≤ 60 seconds (as Replicate); anything else is ignored (RFC 7240). */
export const MAX_WAIT_SECONDS = 60;

/**
 * The `wait` preference of a request's Prefer header(s), or null when there is none or it cannot
 * be honoured. RFC 7240, read loosely: comma-separated preferences, each `token[=value]` with
 * optional `;` parameters, case-insensitive names, quoted values; only the first `wait` counts.
 * A value that is not a whole number of seconds from 1 to 60 is ignored, as the RFC says of
 * preferences a server cannot honour (the request is answered as if it had none).
 */
export function preferredWait(header: string | null | undefined): number | null {
  if (!header) return null;
  for (const pref of header.split(',')) {
    const [head = ''] = pref.split(';');
    const eq = head.indexOf('=');
    const name = (eq < 0 ? head : head.slice(0, eq)).trim().toLowerCase();
    if (name !== 'wait') continue;
    const value = eq < 0 ? '' : head.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
    if (!/^\d{1,2}$/.test(value)) return null;
    const n = Number(value);
    return n >= 1 && n <= MAX_WAIT_SECONDS ? n : null;
  }
  return null;
}

export interface WaitSpec<T> {
  /** The hub key watched (hub.ts keyOf). */
  key: string;
  /** hub.mark() taken before `first` was read. */
  mark: number;
  /** The state as last read; it is read again at once if a change may have been missed since `mark`. */
  first: T;
  read(): Promise<T>;
  done(state: T): boolean;
  /** Whether a notice can make `done` true (default: every notice is worth a read). */
  relevant?(notice: Notice): boolean;
  /** The state a notice carries, when it carries all of it: then no read is needed. */
  carried?(notice: Notice): T | undefined;
  ms: number;
  /** Ends the wait early with the state as last read (server shutdown, client gone). */
  signal?: AbortSignal;
}

/**
 * Waits up to `ms` for `done(state)`, reading the state again on each relevant notification (and
 * after a reconnect of the listening connection). Returns the last state read and whether it is
 * done. A failed read ends the wait with the state read before it (the caller answers with what
 * it knows rather than an error: the job itself is unaffected).
 */
export async function waitUntil<T>(ctx: Context, spec: WaitSpec<T>): Promise<{ state: T; done: boolean }> {
  let state = spec.first;
  if (spec.done(state)) return { state, done: true };
  const hub = hubOf(ctx);
  let dirty = false;
  let given = null as { state: T } | null;
  let wake: (() => void) | null = null;
  const off = hub.watch(spec.key, (n) => {
    if (n && (n.x || (spec.relevant && !spec.relevant(n)))) return;
    const carried = n && spec.carried ? spec.carried(n) : undefined;
    // The newest notice decides: without a body (or a reconnect), the state must be read again.
    given = carried !== undefined ? { state: carried } : null;
    dirty = true;
    wake?.();
  });
  const deadline = performance.now() + spec.ms;
  const onAbort = () => wake?.();
  const offShutdown = onShutdown(ctx.shutdown, onAbort);
  spec.signal?.addEventListener('abort', onAbort);
  const signals = [ctx.shutdown, spec.signal].filter((s): s is AbortSignal => !!s);
  try {
    if (hub.missed(spec.key, spec.mark)) dirty = true;
    for (;;) {
      if (given) {
        state = given.state;
        if (spec.done(state)) return { state, done: true };
        given = null;
      }
      if (dirty) {
        dirty = false;
        try {
          state = await spec.read();
        } catch (e) {
          ctx.log.warn('wait: reading the state failed; answering with the last one read', errorFields(e));
          return { state, done: false };
        }
        if (spec.done(state)) return { state, done: true };
        continue;
      }
      const left = deadline - performance.now();
      if (left <= 0 || signals.some((s) => s.aborted)) return { state, done: false };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
    }
  } finally {
    off();
    offShutdown();
    spec.signal?.removeEventListener('abort', onAbort);
  }
}

const shutdownCallbacks = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `fn` when the process's shutdown signal aborts; returns its removal. One listener per
 * signal whatever the number of waiters and streams (thousands would trip Node's listener warning).
 */
export function onShutdown(signal: AbortSignal, fn: () => void): () => void {
  let set = shutdownCallbacks.get(signal);
  if (!set) {
    const callbacks = (set = new Set());
    shutdownCallbacks.set(signal, callbacks);
    signal.addEventListener('abort', () => { for (const cb of [...callbacks]) cb(); }, { once: true });
  }
  set.add(fn);
  return () => set!.delete(fn);
}

/** A generation status that is final. */
export function isTerminal(status: string): boolean {
  return status === 'completed' || status === 'failed';
}
