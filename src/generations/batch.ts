// Micro-batching: calls that arrive in the same event-loop turn go to Postgres as one
// array-taking SQL call (one round trip, one commit), as src/http.ts does for authorization.

export type BatchResult<O> = { ok: O } | { error: unknown };

export class Batcher<I, O> {
  private pending: Array<{ item: I; resolve(v: O): void; reject(e: unknown): void }> = [];
  private scheduled = false;

  constructor(
    private readonly max: number,
    /** Must return one result per item, in order; a rejection fails the whole batch. */
    private readonly run: (items: I[]) => Promise<Array<BatchResult<O>>>,
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.max) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending.splice(0, this.max);
    if (this.pending.length && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    if (!batch.length) return;
    this.run(batch.map((b) => b.item)).then(
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
    );
  }
}
