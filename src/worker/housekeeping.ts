// What a worker keeps tidy besides running jobs, one function a chore, on its lease's connection:
// the tick of ./worker.ts calls them, the quick unlock every KILN_WORKER_SWEEP_MS and the rest in
// the full sweep of every heartbeat. Each is one SQL function, or a few short rounds of one.

import type { Context } from '../context.ts';
import type { Queryable } from '../db/pool.ts';
import { rollAccountSpend } from '../db/sql/admin.ts';
import { dispatchBatches, endBatchLines, expireBatches } from '../db/sql/batches.ts';
import { purgeAuditLog } from '../db/sql/audit.ts';
import { recordKeyExpiries } from '../db/sql/keys.ts';
import { purgeEvents } from '../db/sql/purge_events.ts';
import { purgeIdempotencyKeys } from '../db/sql/purge_idempotency_keys.ts';
import { sweepWorkers } from '../db/sql/sweep_workers.ts';
import { countEnded } from '../telemetry/metrics.ts';
import { trimUpstreamMinutes } from '../db/sql/trim_upstream_minutes.ts';
import { unlockDeadWorkers } from '../db/sql/unlock_dead_workers.ts';

/** Expired Idempotency-Key records deleted per full sweep, at most (a backlog drains over a few sweeps). */
const IDEMPOTENCY_PURGE_LIMIT = 5000;
/**
 * Events past KILN_EVENT_RETENTION removed per statement, and statements per sweep: up to 10,000
 * events a heartbeat (5 s by default), far above any steady rate of events, in short transactions.
 */
const EVENT_PURGE_LIMIT = 1000;
const EVENT_PURGE_ROUNDS = 10;

/** Between full sweeps: unlocks the jobs of workers whose lease session has ended. */
export async function unlockDeadWorkerJobs(ctx: Context, conn: Queryable): Promise<void> {
  const [{ dead }] = await unlockDeadWorkers(conn, ctx.config.workerStaleSeconds);
  if (dead?.length) ctx.log.warn('unlocked the jobs of dead workers', { workers: dead });
}

/** The full sweep's first chore: unlocks dead workers' jobs and fails the generations no job can finish any more. */
export async function sweepDeadWorkers(ctx: Context, conn: Queryable): Promise<void> {
  const [{ r, ended }] = await sweepWorkers(conn, ctx.config.workerStaleSeconds);
  countEnded(ended);
  if (r?.unlocked?.length) ctx.log.warn('unlocked the jobs of dead workers', { workers: r.unlocked });
  if (r?.failed_generations) ctx.log.warn('failed generations no job could finish', { count: r.failed_generations });
}

/** Expired Idempotency-Key records (a BRIN range scan when there are none). */
export async function purgeExpiredIdempotencyKeys(conn: Queryable): Promise<void> {
  await purgeIdempotencyKeys(conn, IDEMPOTENCY_PURGE_LIMIT);
}

/** Per-minute upstream counts older than the hour kiln.provider_health looks at. */
export async function trimUpstreamCounts(conn: Queryable): Promise<void> {
  await trimUpstreamMinutes(conn);
}

/** Events and the webhook delivery log past KILN_EVENT_RETENTION (none when unset); `stopping` ends it between rounds. */
export async function purgeOldEvents(ctx: Context, conn: Queryable, stopping: () => boolean): Promise<void> {
  const age = ctx.config.eventRetentionSeconds;
  if (age === undefined) return;
  for (let round = 0; round < EVENT_PURGE_ROUNDS && !stopping(); round++) {
    const [{ n }] = await purgeEvents(conn, age, EVENT_PURGE_LIMIT);
    if (n < EVENT_PURGE_LIMIT) break;
  }
}

/** key.expired in the audit log for keys whose expiry passed (expiry itself needs no sweep: such a key already gets 401). */
export async function recordExpiredKeys(conn: Queryable): Promise<void> {
  await recordKeyExpiries(conn);
}

/**
 * Audit entries past the retention the owner recorded (`kiln migrate` with KILN_AUDIT_RETENTION;
 * none when unset: kept forever). The service never chooses what is old (docs/security.md).
 */
export async function purgeOldAuditEntries(conn: Queryable): Promise<void> {
  await purgeAuditLog(conn);
}

/** Accounts whose budget period ended without a charge: their spend back to 0 in the admin page's index. */
export async function rollSpendPeriods(conn: Queryable): Promise<void> {
  await rollAccountSpend(conn);
}

/**
 * Batches (docs/api.md, "Batches"): lines not started by their batch's expiry end expired, and
 * lines that free slots now allow are queued (a slot an interactive generation freed; lines are
 * otherwise queued when their batch is created and as its lines end).
 */
export async function tendBatches(conn: Queryable): Promise<void> {
  for (const { id } of await expireBatches(conn, 10)) await endBatchLines(conn, id);
  await dispatchBatches(conn, 200);
}
