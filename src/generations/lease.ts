// The worker lease a generation runs under (src/worker/worker.ts takes it; ./run.ts and tasks/
// read it): its own module so the tasks need not import the worker that loads them.

/** What a task runs under: the id work is leased to, and a signal that fires when the lease is lost. */
export interface Lease {
  readonly id: string;
  readonly signal: AbortSignal;
}
