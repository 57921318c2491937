// The status hub of a process: ONE listening connection per pool (postgres.js `sql.listen`, which
// reconnects) on the `kiln_status` channel that the database's triggers notify
// (db/migrations: tg_generations__notify, tg_workflow_runs__notify), and in-memory watchers keyed
// by what they watch. No connection is held per waiter.
//
// Nothing may make a watcher sleep through a change it cares about:
//  - a watcher registers after reading the state, so a notification may arrive in between:
//    `mark()` before the read and `missed(key, mark)` after registering tell it to read again;
//  - a notification sent while the listening connection is down is lost: every (re)connect wakes
//    every watcher to read again;
//  - postgres.js gives up re-listening when the reconnect itself fails: a watchdog pings the
//    channel while anyone watches and listens afresh when its ping does not come back.

import { randomUUID } from 'node:crypto';
import type { Sql } from '../db/pool.ts';
import { pgNotify } from '../db/sql/pg_notify.ts';
import type { Logger } from '../log.ts';
import { errorFields } from '../log.ts';
import { rootOf } from '../root.ts';

export const CHANNEL = 'kiln_status';

/**
 * A notification: a generation's new status, "this run changed" (status, counters, an output
 * settled), or "this billing scope has new events" (id = the scope; GET /events).
 */
export interface Notice {
  k: 'generation' | 'run' | 'events' | 'batch' | 'ping';
  id: string;
  /** The account it belongs to. */
  a?: string;
  /** A generation's new status. */
  s?: string;
  /** A terminal generation's body as the API reads it, when it fits in a notification. */
  b?: unknown;
  /** What a running generation just wrote (kiln.stream_generation): not a change of state. */
  x?: StreamNotice;
  /** On a run's stream notice: the output's generation. */
  g?: string;
}

/** kiln_private.stream_notify's `x`: a flush of a generation's stream (docs/api.md, "Streaming"). */
export interface StreamNotice {
  /** The session (execution) written. */
  e: number;
  /** Text and the characters before it in the session. */
  o?: number;
  t?: string;
  /** The session was cut off: a new one follows. */
  c?: boolean;
  /** A partial image already in the store. */
  v?: { i: number; path: string; type: string };
  /** Progress, `n` counting the session's progress reports. */
  g?: { n: number; p: number | null; m: string | null };
}

/** Called with a notice for the watched key, or with null: "read again, something may have been missed". */
export type Watcher = (notice: Notice | null) => void;

/** How long notices are remembered for `missed` (a read between mark and watch takes far less). */
const REMEMBER_MS = 10_000;
/** While anyone watches: ping this often, and listen afresh when a ping is not back within PING_TIMEOUT_MS. */
const WATCHDOG_MS = 10_000;
const PING_TIMEOUT_MS = 5_000;

export function keyOf(kind: 'generation' | 'run' | 'events' | 'batch', id: string): string {
  return `${kind}:${id}`;
}

export class Hub {
  /** Bumped by every notice and every (re)connect; marks compare against it. */
  private seq = 0;
  /** seq at the last (re)connect of the listening connection (0: never listened). */
  private listenedAt = -1;
  private recent = new Map<string, number>();
  private older = new Map<string, number>();
  /** Marks below this are too old for the remembered notices: assume something was missed. */
  private olderFrom = 0;
  private recentFrom = 0;
  private readonly watchers = new Map<string, Set<Watcher>>();
  private count = 0;
  private listening: Promise<void> | null = null;
  private handle: { unlisten(): Promise<unknown> } | null = null;
  private timers: NodeJS.Timeout[] = [];
  private ping: { nonce: string; timer: NodeJS.Timeout } | null = null;
  /** Counters for tests and the benchmark. */
  readonly stats = { notices: 0, flushes: 0, listens: 0, relistens: 0 };

  /**
   * `sql` listens (a direct pool); `notifySql` sends the watchdog's pings, through the pooler when
   * there is one: a NOTIFY needs no session of its own, so the ping costs no second direct connection.
   */
  constructor(private readonly sql: Sql, private readonly log: Logger, private readonly notifySql: Sql = sql) {}

  /** The current position: pass it to `missed` after watching, to learn whether a read is stale. */
  mark(): number {
    return this.seq;
  }

  /** Whether `key` may have changed since `mark` without its watcher hearing of it. */
  missed(key: string, mark: number): boolean {
    if (this.listenedAt < 0 || this.listenedAt > mark || mark < this.olderFrom) return true;
    const at = this.recent.get(key) ?? this.older.get(key);
    return at !== undefined && at > mark;
  }

  /** Registers a watcher (starting the listening connection on first use); returns its removal. */
  watch(key: string, fn: Watcher): () => void {
    this.start();
    let set = this.watchers.get(key);
    if (!set) this.watchers.set(key, (set = new Set()));
    set.add(fn);
    this.count++;
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      this.count--;
      set!.delete(fn);
      if (!set!.size && this.watchers.get(key) === set) this.watchers.delete(key);
    };
  }

  /** Watchers registered now (tests, the benchmark). */
  get size(): number {
    return this.count;
  }

  /** Resolves once the listening connection is up (tests; watchers need not wait for it). */
  ready(): Promise<void> {
    this.start();
    return this.listening!;
  }

  private start(): void {
    if (this.listening) return;
    this.listening = this.listen();
    this.listening.catch(() => {});
    const rotate = setInterval(() => {
      this.older = this.recent;
      this.olderFrom = this.recentFrom;
      this.recent = new Map();
      this.recentFrom = this.seq;
    }, REMEMBER_MS);
    const watchdog = setInterval(() => this.watchdog(), WATCHDOG_MS);
    rotate.unref();
    watchdog.unref();
    this.timers.push(rotate, watchdog);
  }

  private async listen(): Promise<void> {
    try {
      this.handle = await this.sql.listen(CHANNEL, (payload) => this.onNotice(payload), () => this.onListen());
    } catch (e) {
      // The watchdog tries again while anyone watches; watchers meanwhile wait out their time.
      this.log.warn('status hub: listen failed', errorFields(e));
      throw e;
    }
  }

  /** The connection (re)started listening: anything may have been missed meanwhile. */
  private onListen(): void {
    this.stats.listens++;
    this.listenedAt = ++this.seq;
    for (const set of this.watchers.values()) for (const fn of [...set]) fn(null);
  }

  private onNotice(payload: string): void {
    let n: Notice;
    try {
      n = JSON.parse(payload);
    } catch {
      return;
    }
    if (n.k === 'ping') {
      if (this.ping && n.id === this.ping.nonce) {
        clearTimeout(this.ping.timer);
        this.ping = null;
      }
      return;
    }
    if ((n.k !== 'generation' && n.k !== 'run' && n.k !== 'events' && n.k !== 'batch') || typeof n.id !== 'string') return;
    this.stats.notices++;
    const key = keyOf(n.k, n.id);
    // A stream flush changes no state a read returns: readers need not read again for it.
    if (n.x) this.stats.flushes++;
    else this.recent.set(key, ++this.seq);
    const set = this.watchers.get(key);
    if (set) for (const fn of [...set]) fn(n);
  }

  private watchdog(): void {
    if (!this.count || this.ping) return;
    const nonce = randomUUID();
    const timer = setTimeout(() => {
      this.ping = null;
      void this.relisten();
    }, PING_TIMEOUT_MS);
    timer.unref();
    this.ping = { nonce, timer };
    pgNotify(this.notifySql, CHANNEL, JSON.stringify({ k: 'ping', id: nonce })).catch(() => {
      // The database is unreachable: the missing echo listens afresh.
    });
  }

  /** The ping did not come back: drop the (possibly dead) listener and listen again. */
  private async relisten(): Promise<void> {
    this.stats.relistens++;
    this.log.warn('status hub: the listening connection did not answer; listening afresh');
    const old = this.handle;
    this.handle = null;
    await old?.unlisten().catch(() => {});
    this.listening = this.listen();
    this.listening.catch(() => {});
  }

  /** Stops the timers (the pool's end closes the listening connection). */
  close(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    if (this.ping) clearTimeout(this.ping.timer);
  }
}

const hubs = new WeakMap<Sql, Hub>();

/**
 * The hub of a pool (one listening connection per pool, shared by every context on it): the
 * direct pool, never the pooler's — PgBouncer in transaction mode does not keep a LISTEN.
 */
export function hubOf(of: { sql: Sql; direct?: Sql; log: Logger }): Hub {
  // A request's Context shares its process's hub (and the hub logs with the process's logger).
  const ctx = rootOf(of);
  const sql = ctx.direct ?? ctx.sql;
  let hub = hubs.get(sql);
  if (!hub) hubs.set(sql, (hub = new Hub(sql, ctx.log, ctx.sql)));
  return hub;
}
