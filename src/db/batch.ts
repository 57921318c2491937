// Micro-batching: calls that arrive together go to Postgres as one array-taking SQL call (one
// round trip, one commit). A batch leaves on the next event-loop turn, or at `max` items; with
// `maxInFlight` batches already out, new calls wait for one to return and leave together — so
// batches stay tiny when idle and grow with load, spreading each call's fixed cost.

import type { Span } from '@opentelemetry/api';
import { isUnavailable } from '../errors.ts';
import { rootOf } from '../root.ts';
import { withQueryParent } from './query-parent.ts';

export type BatchResult<O> = { ok: O } | { error: unknown };

export interface BatcherOptions {
  /** Batches out at once; calls arriving meanwhile queue and leave together when one returns. */
  maxInFlight?: number;
  /**
   * A bound on each call's whole wait, queueing included: a call still queued behind busy
   * batches at its deadline is rejected with a BatchWaitTimeout (nothing is sent for it), and
   * each batch is run with the time its oldest call has left, which `run` must honour. So a
   * stalled database fails callers within one timeout instead of queueing them without end.
   */
  timeoutMs?: number;
}

/**
 * Batches in flight for the request-path calls (authorize, poll, start): while one batch runs,
 * the next gathers; more concurrent batches only contend for the same index pages and rows, so
 * capping them makes batches larger and cheaper per call (measured: BENCH.md, "Two batches in
 * flight"). Two slots carry up to 2 × 100 calls per round trip, more than one process can serve.
 */
export const REQUEST_BATCHES_IN_FLIGHT = 2;

/** Items of a failed batch run again at once, each alone (see Batcher.runEach). */
const SPLIT_LANES = 4;

/**
 * A call reached its `timeoutMs` while queued for a free batch slot (nothing was sent for it),
 * or before its turn to run again alone after its batch failed.
 */
export class BatchWaitTimeout extends Error {
  readonly code = 'KILN_TIMEOUT';
  constructor(ms: number) {
    super(`no free batch slot within ${ms} ms`);
  }
}

interface Pending<I, O> {
  item: I;
  at: number;
  /** The span of the request that made the call, when traced. */
  parent: Span | undefined;
  resolve(v: O): void;
  reject(e: unknown): void;
}

export class Batcher<I, O> {
  private pending: Array<Pending<I, O>> = [];
  private scheduled = false;
  private inFlight = 0;
  private waitTimer: NodeJS.Timeout | undefined;
  private readonly maxInFlight: number;
  private readonly timeoutMs: number;
  /**
   * Batches sent and items carried (the benchmark reports the mean batch size), and batches
   * that failed as a whole and were run again one item at a time.
   */
  readonly stats = { batches: 0, items: 0, splits: 0 };

  constructor(
    private readonly max: number,
    /**
     * Must return one result per item, in order. A rejection that means the database is
     * unavailable (errors.ts isUnavailable: a timeout, a lost connection, …) fails the whole
     * batch; any other rejection of a batch of several runs each item again alone (so `run` must
     * be safe to repeat after a rejection: one transaction). `timeLeftMs` is what the batch's
     * oldest call has left of `timeoutMs` (Infinity without one).
     */
    private readonly run: (items: I[], timeLeftMs: number) => Promise<Array<BatchResult<O>>>,
    opts: BatcherOptions = {},
  ) {
    this.maxInFlight = opts.maxInFlight ?? Infinity;
    this.timeoutMs = opts.timeoutMs ?? Infinity;
  }

  /**
   * Queues a call. `parent`: the caller's span (its Context's `span`), when traced: the batch's
   * query joins the trace of its first traced call.
   */
  add(item: I, parent?: Span): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, at: performance.now(), parent, resolve, reject });
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
      this.expire();
      if (!this.pending.length) break;
      const batch = this.pending.splice(0, this.max);
      this.inFlight++;
      this.stats.batches++;
      this.stats.items += batch.length;
      const timeLeft = batch[0]!.at + this.timeoutMs - performance.now();
      withQueryParent(batch.find((b) => b.parent !== undefined)?.parent, () => this.run(batch.map((b) => b.item), timeLeft))
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
            if (batch.length > 1 && !isUnavailable(e)) return this.runEach(batch);
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
    if (!this.pending.length) this.clearWaitTimer();
    else if (this.inFlight < this.maxInFlight) this.schedule();
    else this.armWaitTimer();
  }

  /**
   * A batch failed as a whole for a reason that is not the database's unavailability (a value
   * one member carries, typically): the call was one rolled-back transaction, so each member is
   * run again as a batch of one, and only the offender fails. A few at a time, within each
   * call's own deadline; the slot stays taken meanwhile. A member whose time is up fails with a
   * timeout (fail closed).
   */
  private async runEach(batch: Array<Pending<I, O>>): Promise<void> {
    this.stats.splits++;
    let next = 0;
    const lane = async () => {
      while (next < batch.length) {
        const b = batch[next++]!;
        const timeLeft = b.at + this.timeoutMs - performance.now();
        if (timeLeft <= 0) {
          b.reject(new BatchWaitTimeout(this.timeoutMs));
          continue;
        }
        try {
          const r = (await withQueryParent(b.parent, () => this.run([b.item], timeLeft)))[0];
          if (!r) b.reject(new Error('batch returned no result'));
          else if ('ok' in r) b.resolve(r.ok);
          else b.reject(r.error);
        } catch (e) {
          b.reject(e);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(SPLIT_LANES, batch.length) }, lane));
  }

  /** Rejects the queued calls whose deadline has passed (FIFO: they are at the front). */
  private expire(): void {
    if (!Number.isFinite(this.timeoutMs)) return;
    const now = performance.now();
    while (this.pending.length && now - this.pending[0]!.at >= this.timeoutMs) {
      this.pending.shift()!.reject(new BatchWaitTimeout(this.timeoutMs));
    }
  }

  /** While calls queue behind busy slots: one timer, for the oldest call's deadline. */
  private armWaitTimer(): void {
    if (this.waitTimer || !this.pending.length || !Number.isFinite(this.timeoutMs)) return;
    const due = Math.max(0, this.pending[0]!.at + this.timeoutMs - performance.now());
    this.waitTimer = setTimeout(() => {
      this.waitTimer = undefined;
      this.expire();
      if (this.inFlight < this.maxInFlight) this.schedule();
      else this.armWaitTimer();
    }, due);
  }

  private clearWaitTimer(): void {
    if (this.waitTimer) clearTimeout(this.waitTimer);
    this.waitTimer = undefined;
  }
}

/**
 * One batcher per owner (a Context or a pool: the process's, see rootOf), created on first use: `perOwner(100, (ctx) =>
 * (items) => …)` returns the lookup. Options may depend on the owner (its configured timeouts).
 */
export function perOwner<K extends object, I, O>(
  max: number,
  make: (owner: K) => (items: I[], timeLeftMs: number) => Promise<Array<BatchResult<O>>>,
  opts: BatcherOptions | ((owner: K) => BatcherOptions) = {},
): (owner: K) => Batcher<I, O> {
  const batchers = new WeakMap<K, Batcher<I, O>>();
  return (of) => {
    // A request's or job's Context (or pool) shares its process's batcher.
    const owner = rootOf(of);
    let b = batchers.get(owner);
    if (!b) batchers.set(owner, (b = new Batcher(max, make(owner), typeof opts === 'function' ? opts(owner) : opts)));
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
