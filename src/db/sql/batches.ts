// The batch functions (docs/api.md, "Batches"): create (kiln.create_batch), read, list, cancel,
// results pages, and the worker's sweep (dispatch and expiry).

import type { Queryable } from '../pool.ts';

// Element types for sql.array: postgres.js cannot infer them from nulls.
const TEXT = 25, INT8 = 20;

/** kiln_private.batch_body. */
export interface BatchJson {
  id: string;
  status: 'in_progress' | 'completed' | 'canceling' | 'canceled' | 'expired';
  requestCounts: { total: number; completed: number; failed: number; canceled: number };
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  expiresAt: string;
  spentMicros: number;
}

export interface CreateBatchColumns {
  accountId: string;
  workspaceId: string | null;
  keyId: string | null;
  origin: string;
  customIds: string[];
  types: string[];
  modelIds: string[];
  /** JSON text of each line's stored request. */
  requests: string[];
  reserves: string[];
  maxAttempts: number;
  idemKey: string | null;
  fingerprint: Uint8Array | null;
  idemTtlSeconds: number;
}

export function createBatch(sql: Queryable, c: CreateBatchColumns) {
  return sql<Array<{ r: { outcome: 'created' | 'replayed' | 'conflict' | 'pending' | 'end_user_required'; batch?: BatchJson; lines?: number[] } }>>`select kiln.create_batch(
    ${c.accountId}::uuid, ${c.workspaceId}::uuid, ${c.keyId}::uuid, ${c.origin},
    ${sql.array(c.customIds, TEXT)}, ${sql.array(c.types, TEXT)}, ${sql.array(c.modelIds, TEXT)},
    ${sql.array(c.requests, TEXT)}::jsonb[], ${sql.array(c.reserves, INT8)}, ${c.maxAttempts}::int,
    ${c.idemKey}, ${c.fingerprint ? Buffer.from(c.fingerprint) : null}::bytea, ${c.idemTtlSeconds}::int
  ) as r`;
}

export interface OpenBatchColumns {
  accountId: string;
  workspaceId: string | null;
  keyId: string | null;
  total: number;
  idemKey: string | null;
  fingerprint: Uint8Array | null;
  idemTtlSeconds: number;
}

/** kiln.open_batch: the first call of POST /batches's transaction. */
export function openBatch(sql: Queryable, c: OpenBatchColumns) {
  return sql<Array<{ r: { outcome: 'opened' | 'replayed' | 'conflict' | 'pending'; id?: string; require_end_user: boolean; batch?: BatchJson } }>>`select kiln.open_batch(
    ${c.accountId}::uuid, ${c.workspaceId}::uuid, ${c.keyId}::uuid, ${c.total}::int,
    ${c.idemKey}, ${c.fingerprint ? Buffer.from(c.fingerprint) : null}::bytea, ${c.idemTtlSeconds}::int
  ) as r`;
}

export interface BatchLinesChunk {
  batchId: string;
  accountId: string;
  origin: string;
  maxAttempts: number;
  /** The line number (from 1) of the chunk's first line. */
  firstLine: number;
  customIds: string[];
  types: string[];
  modelIds: string[];
  /** A JSON array of the lines' stored requests, each naming its model and fallbacks by a key of `models`. */
  requests: string;
  reserves: string[];
  /** Catalog entries first named by this chunk, by key. */
  models: Record<string, unknown> | null;
}

/** kiln.add_batch_lines: a chunk of validated lines, in the transaction kiln.open_batch began. */
export function addBatchLines(sql: Queryable, c: BatchLinesChunk) {
  return sql`select kiln.add_batch_lines(
    ${c.batchId}::uuid, ${c.accountId}::uuid, ${c.origin}, ${c.maxAttempts}::int, ${c.firstLine}::int,
    ${sql.array(c.customIds, TEXT)}, ${sql.array(c.types, TEXT)}, ${sql.array(c.modelIds, TEXT)},
    ${c.requests}::text::jsonb, ${sql.array(c.reserves, INT8)}, ${c.models ? JSON.stringify(c.models) : null}::text::jsonb
  )`;
}

/** kiln.close_batch: every line is in; the first lines are queued. */
export function closeBatch(sql: Queryable, batchId: string, accountId: string) {
  return sql<Array<{ r: { outcome: 'created'; batch: BatchJson } }>>`select kiln.close_batch(${batchId}::uuid, ${accountId}::uuid) as r`;
}

export function getBatch(sql: Queryable, accountId: string, id: string) {
  return sql<Array<{ b: BatchJson | null }>>`select kiln.get_batch(${accountId}::uuid, ${id}::uuid) as b`;
}

/** `before.at`: an ISO timestamp (microseconds); each row's `at` is its created_at in epoch microseconds. */
export function listBatches(sql: Queryable, accountId: string, before: { at: string; id: string } | null, limit: number) {
  return sql<Array<{ at: string; id: string; body: BatchJson }>>`
    select * from kiln.list_batches(${accountId}::uuid, ${before?.at ?? null}::text::timestamptz, ${before?.id ?? null}::uuid, ${limit}::int)`;
}

/** kiln.list_batch_generations: GET /generations?batchId= (a GenerationPage). */
export function listBatchGenerations(
  sql: Queryable, accountId: string, batchId: string, limit: number, before: { at: string; id: string } | null,
  statuses: string[] | null, types: string[] | null, model: string | null, since: string | null,
  endUser: string | null = null, metadata: Record<string, string> | null = null,
) {
  return sql<Array<{ page: import('./list_generations_for_keys.ts').GenerationPage }>>`
    select kiln.list_batch_generations(${accountId}::uuid, ${batchId}::uuid, ${limit}::int, ${before?.at ?? null}::text::timestamptz,
      ${before?.id ?? null}::uuid, ${statuses}::text[], ${types}::text[], ${model}, ${since}::text::timestamptz,
      ${endUser}::text, ${metadata ? JSON.stringify(metadata) : null}::text::jsonb) as page`;
}

export function cancelBatch(sql: Queryable, accountId: string, id: string) {
  return sql<Array<{ r: { outcome: 'canceled' | 'conflict' | 'missing'; batch?: BatchJson } }>>`select kiln.cancel_batch(${accountId}::uuid, ${id}::uuid) as r`;
}

/** A generation body of kiln_private.generation_body (see db/sql/get_generations.ts). */
export function batchResults(sql: Queryable, accountId: string, id: string, afterLine: number, limit: number) {
  return sql<Array<{ line: number; custom_id: string; body: import('./get_generations.ts').GenerationBody }>>`
    select * from kiln.batch_results(${accountId}::uuid, ${id}::uuid, ${afterLine}::int, ${limit}::int)`;
}

export function dispatchBatches(sql: Queryable, limit: number) {
  return sql<Array<{ n: number }>>`select kiln.dispatch_batches(${limit}::int) as n`;
}

/** Marks batches past their expiry; returns the batches whose lines are left to end (expired or canceling). */
export function expireBatches(sql: Queryable, limit: number) {
  return sql<Array<{ id: string }>>`select id from kiln.expire_batches(${limit}::int) as id`;
}

/** Ends the lines of a canceling or expired batch (its own transaction: lines are locked before the batch). */
export function endBatchLines(sql: Queryable, id: string) {
  return sql<Array<{ n: number }>>`select kiln.end_batch_lines(${id}::uuid) as n`;
}

/** A line kiln.start_batch_lines started (and reserved) for its group's job. */
export interface StartedBatchLine {
  id: string;
  attempt: number;
  max_attempts: number;
  account_id: string;
  request: import('../../providers/index.ts').StoredRequest;
  reserved_micros: number | string;
}

export interface StartBatchLinesArgs {
  batchId: string;
  from: number;
  to: number;
  workerId: string;
  jobId: string;
  staleSeconds: number;
  waitMs: number;
  maxCrashes: number;
  /** A job's first call: also take over the lines it had started beyond its group (after a crash). */
  takeover: boolean;
}

/** kiln.start_batch_lines: a batch__run job's lines started and reserved in one call; `ended`: the lines it ended. */
export function startBatchLines(sql: Queryable, a: StartBatchLinesArgs) {
  return sql<Array<{ s: { lines: StartedBatchLine[] }; ended: import('./ended_generations.ts').EndedGeneration[] }>>`
    with c as materialized (
      select kiln.start_batch_lines(${a.batchId}::uuid, ${a.from}::int, ${a.to}::int, ${a.workerId}, ${a.jobId}::bigint,
                                    ${a.staleSeconds}::int, ${a.waitMs}::int, ${a.maxCrashes}::int, ${a.takeover}::boolean) as s)
    select c.s, kiln.take_ended_generations() as ended from c`;
}

export interface CompletedBatchLine {
  id: string;
  result: unknown;
  costMicros: number;
  providerRequestId: string | null;
  modelId: string;
}

/** The job that goes on after a group: the next group of its batch is started for it in the same call. */
export interface BatchClaim {
  workerId: string;
  jobId: string;
  staleSeconds: number;
  waitMs: number;
  maxCrashes: number;
}

/**
 * kiln.complete_batch_lines: code lines of a group completed and settled in one call; `applied` per
 * line. With `claim`, `lines` are the next lines of the batch started for the job (none: it ends),
 * and `ended` the lines that start ended.
 */
export function completeBatchLines(sql: Queryable, batchId: string, lines: CompletedBatchLine[], claim: BatchClaim | null = null) {
  return sql<Array<{ r: { applied: boolean[]; lines: StartedBatchLine[] }; ended: import('./ended_generations.ts').EndedGeneration[] | null }>>`
    with c as materialized (
      select kiln.complete_batch_lines(${batchId}::uuid, ${sql.array(lines.map((l) => l.id), 2950)}::uuid[],
        ${JSON.stringify(lines.map((l) => l.result))}::text::jsonb, ${sql.array(lines.map((l) => String(l.costMicros)), INT8)},
        ${sql.array(lines.map((l) => l.providerRequestId ?? null) as string[], TEXT)}, ${sql.array(lines.map((l) => l.modelId), TEXT)},
        ${claim?.workerId ?? null}::text, ${claim?.jobId ?? null}::bigint, ${claim?.staleSeconds ?? null}::int,
        ${claim?.waitMs ?? null}::int, ${claim?.maxCrashes ?? 10}::int) as r)
    select c.r, kiln.take_ended_generations() as ended from c`;
}
