// The generations this process is running, with the controllers that abort their calls: a run
// (./run.ts) is tracked here from before it starts, and a cancel (./cancel.ts) aborts it here.
// One registry per process, shared by every worker (and lease) that the process runs.

/** Generations this process is running (or about to), by id, with the controllers that abort them. */
const running = new Map<string, Set<AbortController>>();

/** Aborts the calls of these generations that run in this process; returns how many it aborted. */
export function abortGenerations(ids: Iterable<string>, reason = 'the generation was canceled'): number {
  let n = 0;
  for (const id of ids) {
    for (const c of running.get(id) ?? []) {
      if (c.signal.aborted) continue;
      c.abort(new Error(reason));
      n++;
    }
  }
  return n;
}

/** The generations this process is running now. */
export function runningGenerations(): string[] {
  return [...running.keys()];
}

/** Tracks `c` as one controller of generation `id` (lower case); the function returned untracks it. */
export function track(id: string, c: AbortController): () => void {
  let set = running.get(id);
  if (!set) running.set(id, (set = new Set()));
  set.add(c);
  return () => {
    set.delete(c);
    if (!set.size && running.get(id) === set) running.delete(id);
  };
}
