// Micro-batching: calls that arrive together go to Postgres as one array-taking SQL call (one
// round trip, one commit). A batch leaves on the next event-loop turn, or at `max` items; with
// `maxInFlight` batches already out, new calls wait for one to return and leave together — so
// batches stay tiny when idle and grow with load, spreading each call's fixed cost.

export type BatchResult<O> = { ok: O } | { error: unknown };

export class Batcher<I, O> {
  private pending: Array<{ item: I; resolve(v: O): void; reject(e: unknown): void }> = [];
  private scheduled = false;
  private inFlight = 0;
  /** Batches sent and items carried (the benchmark reports the mean batch size). */
  readonly stats = { batches: 0, items: 0 };

  constructor(
    private readonly max: number,
    /** Must return one result per item, in order; a rejection fails the whole batch. */
    private readonly run: (items: I[]) => Promise<Array<BatchResult<O>>>,
    private readonly maxInFlight = Infinity,
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.max) this.flush();
      else this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || !this.pending.length) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.pending.length && this.inFlight < this.maxInFlight) {
      const batch = this.pending.splice(0, this.max);
      this.inFlight++;
      this.stats.batches++;
      this.stats.items += batch.length;
      this.run(batch.map((b) => b.item))
        .then(
          (results) => {
            batch.forEach((b, i) => {
              const r = results[i];
              if (!r) b.reject(new Error('batch returned no result'));
              else if ('ok' in r) b.resolve(r.ok);
              else b.reject(r.error);
            });
          },
          (e) => {
            for (const b of batch) b.reject(e);
          },
        )
        .finally(() => {
          this.inFlight--;
          // What queued meanwhile leaves at once, as one batch.
          this.flush();
        });
      // Flushing at `max` mid-turn sends only full batches; a partial rest waits for the turn's end.
      if (this.pending.length < this.max) break;
    }
    if (this.pending.length && this.inFlight < this.maxInFlight) this.schedule();
  }
}

/**
 * One batcher per owner (a Context or a pool), created on first use: `perOwner(100, (ctx) =>
 * (items) => …)` returns the lookup.
 */
export function perOwner<K extends object, I, O>(
  max: number,
  make: (owner: K) => (items: I[]) => Promise<Array<BatchResult<O>>>,
  maxInFlight = Infinity,
): (owner: K) => Batcher<I, O> {
  const batchers = new WeakMap<K, Batcher<I, O>>();
  return (owner) => {
    let b = batchers.get(owner);
    if (!b) batchers.set(owner, (b = new Batcher(max, make(owner), maxInFlight)));
    return b;
  };
}

/**
 * Results in item order from SQL rows that carry their item's 1-based `ord`; an item without
 * a row fails.
 */
export function byOrd<R extends { ord: number }, O>(count: number, rows: Iterable<R>, result: (row: R) => BatchResult<O> = (row) => ({ ok: row as unknown as O })): Array<BatchResult<O>> {
  const out: Array<BatchResult<O>> = Array.from({ length: count }, () => ({ error: new Error('no result for this item') }));
  for (const row of rows) out[row.ord - 1] = result(row);
  return out;
}
