// What a unit of work derives from the process's objects, and the way back. Work traced under a
// span (a request, a job) gets its own Context and pool (telemetry/scope.ts): copies that carry the
// span. Caches, batchers and hubs belong to the process, so they are keyed by the root object a
// copy names, never by the copy.

/** Set on a derived Context or pool: the process's object it was derived from. */
export const ROOT = Symbol('kiln.root');

/** The process's object behind `x` (x itself when it is not derived). */
export function rootOf<T extends object>(x: T): T {
  return ((x as { [ROOT]?: T })[ROOT]) ?? x;
}
