// The read replica (KILN_DATABASE_REPLICA_URL): how far behind the primary it is, sampled once a
// second per process, and the reads that tolerate that lag. Everything that decides (keys, limits,
// budgets) and every read right after a write stays on the primary; see docs/operators.md.
//
// Lag is measured by WAL position, not by the last commit's time (which says nothing while the
// primary is idle, and is wrong across clocks): each second the primary's pg_current_wal_lsn() is
// noted with the local monotonic time, then the replica's pg_last_wal_replay_lsn() is read. The
// newest noted primary position the replica has replayed tells the time up to which the replica
// holds everything the primary had; the lag at any later moment is the time since then, so it
// grows between samples and while replay is stuck, and a read is sent to the primary as soon as
// it passes KILN_REPLICA_MAX_LAG. A replica that is unreachable or not in recovery (promoted) is
// not used until a sample finds it replaying again.

import type { Logger } from '../log.ts';
import { errorFields } from '../log.ts';
import { errors, fromDatabaseError } from '../errors.ts';
import type { Queryable, Sql } from './pool.ts';
import { withTimeout } from './timeout.ts';

/** Once a second per process, never per request. */
export const SAMPLE_MS = 1000;
/** A sample's queries give up after this long (the replica then counts as unreachable). */
const SAMPLE_TIMEOUT_MS = 1000;
/** A read on the replica gives up after this long at most (then it is read on the primary). */
const REPLICA_READ_TIMEOUT_MS = 2000;

/** `16/B374D848` → a comparable number. */
export function parseLsn(lsn: string): bigint {
  const m = /^([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/i.exec(lsn);
  if (!m) throw new Error('not a WAL position');
  return (BigInt(`0x${m[1]}`) << 32n) | BigInt(`0x${m[2]}`);
}

export type ReplicaState = 'starting' | 'replaying' | 'unreachable' | 'not_in_recovery';

export class Replica {
  /** Primary WAL positions with the monotonic time they were noted at, oldest first. */
  private samples: Array<{ at: number; lsn: bigint }> = [];
  /** The moment (performance.now) up to which the replica holds all the primary had; null: not usable. */
  private heldUntil: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private sampling: Promise<void> | null = null;
  private closed = false;
  state: ReplicaState = 'starting';
  /** For tests, the benchmark and the operator's log. */
  readonly stats = { samples: 0, replicaReads: 0, primaryReads: 0, fallbacks: 0 };

  constructor(
    /** The replica's pool (read-only: the *_for_callers functions and other stable reads). */
    readonly sql: Sql,
    private readonly primary: Sql,
    readonly maxLagMs: number,
    private readonly log: Logger,
  ) {}

  /** Takes a first sample now, then one a second. */
  start(): Promise<void> {
    if (!this.timer && !this.closed) {
      this.timer = setInterval(() => void this.sample(), SAMPLE_MS);
      this.timer.unref();
    }
    return this.sample();
  }

  /** One sample (never two at once). */
  sample(): Promise<void> {
    this.sampling ??= this.takeSample().finally(() => { this.sampling = null; });
    return this.sampling;
  }

  private async takeSample(): Promise<void> {
    const at = performance.now();
    let lsn: bigint;
    try {
      const [row] = await withTimeout(this.primary`select pg_current_wal_lsn()::text as lsn`, SAMPLE_TIMEOUT_MS);
      lsn = parseLsn(row!.lsn);
    } catch {
      // The primary did not answer: nothing new is known about the lag, which keeps growing.
      return;
    }
    this.stats.samples++;
    this.samples.push({ at, lsn });
    // Positions older than the lag that matters (and a margin) can no longer change a decision.
    const horizon = at - this.maxLagMs - 10 * SAMPLE_MS;
    while (this.samples.length > 1 && this.samples[0]!.at < horizon) this.samples.shift();
    let replay: bigint | null = null;
    try {
      const [row] = await withTimeout(
        this.sql`select pg_is_in_recovery() as recovery, pg_last_wal_replay_lsn()::text as replay`,
        SAMPLE_TIMEOUT_MS,
      );
      if (!row!.recovery || !row!.replay) return this.set('not_in_recovery', null);
      replay = parseLsn(row!.replay);
    } catch (e) {
      return this.set('unreachable', null, e);
    }
    // The newest primary position already replayed (positions only grow on one primary).
    let held: number | null = null;
    for (const s of this.samples) {
      if (s.lsn > replay) break;
      held = s.at;
    }
    // Behind every position kept: further behind than any lag that is still allowed.
    this.set('replaying', held ?? -Infinity);
  }

  private set(state: ReplicaState, heldUntil: number | null, e?: unknown): void {
    if (state !== this.state && !this.closed) {
      const fields = { from: this.state, to: state, ...(e ? errorFields(e) : {}) };
      if (state === 'replaying') this.log.info('read replica usable', fields);
      else this.log.warn('read replica not usable; its reads go to the primary', fields);
    }
    this.state = state;
    this.heldUntil = heldUntil;
  }

  /** How far behind the primary the replica is now, ms (Infinity: unreachable, promoted, or not sampled yet). */
  lagMs(): number {
    return this.heldUntil === null ? Infinity : performance.now() - this.heldUntil;
  }

  /** Whether a read that tolerates KILN_REPLICA_MAX_LAG may go to the replica now. */
  fresh(): boolean {
    return this.lagMs() <= this.maxLagMs;
  }

  /** A read on the replica failed for want of it: use the primary until a sample finds it again. */
  failed(e: unknown): void {
    this.stats.fallbacks++;
    this.set('unreachable', null, e);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

/** Whether a failed replica read should be run again on the primary: anything but a business error or a bad value (the primary would answer the same). */
function retryOnPrimary(e: unknown): boolean {
  const mapped = fromDatabaseError(e);
  return !mapped || mapped.status >= 500;
}

/**
 * A read that tolerates the replica's bounded lag: on the replica while it is fresh, else — and
 * when the replica fails it — on the primary, so a read never fails because the replica is down.
 * `timeoutMs` bounds the whole read (Infinity: the primary's read is not bounded, as before a
 * replica); the replica's attempt gets half of it, at most REPLICA_READ_TIMEOUT_MS.
 */
export async function readTolerant<T>(
  ctx: { sql: Sql; replica?: Replica | null },
  read: (sql: Queryable) => Promise<T> & { cancel?: () => unknown },
  timeoutMs = Infinity,
): Promise<T> {
  const replica = ctx.replica;
  const start = performance.now();
  if (replica?.fresh()) {
    try {
      const out = await withTimeout(read(replica.sql), Math.min(timeoutMs / 2, REPLICA_READ_TIMEOUT_MS));
      replica.stats.replicaReads++;
      return out;
    } catch (e) {
      if (!retryOnPrimary(e)) throw e;
      replica.failed(e);
    }
  }
  if (replica) replica.stats.primaryReads++;
  const left = timeoutMs - (performance.now() - start);
  if (left <= 0) throw errors.unavailable();
  return withTimeout(read(ctx.sql), left);
}
