// Workflow service shared by REST and MCP: list saved workflows, start a run (snapshot + plan +
// enqueue in one transaction) and read a run in the `WorkflowRun` shape.

import { countEnded } from '../telemetry/metrics.ts';
import { traceparentOf } from '../telemetry/tracing.ts';
import { authorizedCall, callerRead, type AuthorizedCall, type Caller, type CallerRead } from '../auth/access.ts';
import { readTolerant } from '../db/replica.ts';
import { listWorkflowsForCallers } from '../db/sql/list_workflows_for_callers.ts';
import { listWorkflowRunsForCallers } from '../db/sql/list_workflow_runs_for_callers.ts';
import { rowToModel } from '../billing/catalog.ts';
import { cancelWorkflowRun } from '../db/sql/cancel_workflow_run.ts';
import { cancelWorkflowRunsForKeys, type CancelWorkflowRunsForKeysRow } from '../db/sql/cancel_workflow_runs_for_keys.ts';
import { claimIdempotencyKey } from '../db/sql/claim_idempotency_key.ts';
import { expireWorkflowRun } from '../db/sql/expire_workflow_run.ts';
import { getWorkflowRun, type WorkflowRunJson, type WorkflowRunResultJson } from '../db/sql/get_workflow_run.ts';
import { getWorkflowRunsForKeys } from '../db/sql/get_workflow_runs_for_keys.ts';
import { listWorkflowRunsForKeys } from '../db/sql/list_workflow_runs_for_keys.ts';
import { listWorkflowRuns, type WorkflowRunSummaryRow } from '../db/sql/list_workflow_runs.ts';
import { listWorkflows as listWorkflowsSql } from '../db/sql/list_workflows.ts';
import { retryWorkflowRun } from '../db/sql/retry_workflow_run.ts';
import { listWorkflowsForKeys } from '../db/sql/list_workflows_for_keys.ts';
import { recordIdempotencyKey } from '../db/sql/record_idempotency_key.ts';
import { snapshotWorkflow } from '../db/sql/snapshot_workflow.ts';
import { startWorkflowRun } from '../db/sql/start_workflow_run.ts';
import type { Context } from '../context.ts';
import { errors, fromDatabaseError } from '../errors.ts';
import type { Idempotency } from '../idempotency.ts';
import { isUuid, parseWith } from '../schemas.ts';
import { attributionOf, checkAttribution, type Attribution } from '../generations/attribution.ts';
import { RunRequest } from './schemas.ts';
import { signedUrl } from '../storage/store.ts';
import { checkGraph } from './check.ts';
import { planRun } from './plan.ts';
import type { WorkflowRunBody, WorkflowRunResultBody, WorkflowRunSummaryBody, WorkflowSummaryBody } from './schemas.ts';
import { issuesMessage } from './validate.ts';

/** A run bills its outputs to the caller's key and billing scope (personal, or its Team pool). */
export type RunCaller = Caller;

export interface Page {
  limit: number;
  offset: number;
}

/** Checks `limit` (1–100, default 50) and `offset` (≥ 0, default 0); numbers or digit strings. */
export function parsePage(input: { limit?: unknown; offset?: unknown }): Page {
  const int = (name: string, raw: unknown, def: number, min: number, max: number) => {
    if (raw === undefined) return def;
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isInteger(n) || n < min || n > max) {
      throw errors.invalid(max < Number.MAX_SAFE_INTEGER ? `${name}: must be an integer from ${min} to ${max}` : `${name}: must be an integer of at least ${min}`);
    }
    return n;
  };
  return { limit: int('limit', input.limit, 50, 1, 100), offset: int('offset', input.offset, 0, 0, Number.MAX_SAFE_INTEGER) };
}

/** The workflows of the caller's scope (its workspace, else its account), most recently updated first. Throws ApiError invalid_request for a bad page. */
export async function listWorkflows(ctx: Context, caller: Caller, page: { limit?: unknown; offset?: unknown } = {}): Promise<{ data: WorkflowSummaryBody[] }> {
  const { limit, offset } = parsePage(page);
  const [row] = await readTolerant(ctx, (sql) => listWorkflowsSql(sql, caller.accountId, caller.workspaceId, limit, offset));
  return { data: row!.data };
}

/** GET /workflows in one round trip: authorizes each key and reads its page of workflows in the same call. */
export const listWorkflowsCall: AuthorizedCall<Page, { body: WorkflowSummaryBody[] | null }> = authorizedCall(100, ({ sql, config }, items) =>
  listWorkflowsForKeys(sql, items.map((i) => i.hash), config.readRpm, items.map((i) => i.payload.limit), items.map((i) => i.payload.offset)));

/** GET /workflows on the read replica, for keys the primary authorized (see Access.replicaRead). */
export const listWorkflowsReplica: CallerRead<Page, { body: WorkflowSummaryBody[] | null }> = callerRead(100, (sql, _ctx, items) =>
  listWorkflowsForCallers(sql, items.map((i) => i.caller.accountId), items.map((i) => i.caller.workspaceId),
    items.map((i) => i.payload.limit), items.map((i) => i.payload.offset)));

export interface RunAccepted {
  id: string;
  status: 'pending';
}

/**
 * Starts a run of a workflow of the caller's scope: in one transaction the graph is read (and locked against a
 * concurrent edit), validated, planned, snapshotted and its ready outputs queued. Returns the
 * `RunAccepted` body. Throws ApiError: invalid_request (bad id or graph), not_found,
 * insufficient_quota, payment_required.
 */
export async function startRun(ctx: Context, caller: RunCaller, workflowId: string): Promise<RunAccepted> {
  return (await startRunOnce(ctx, caller, workflowId, null)).body;
}

/**
 * The optional body of a run start (`RunRequest`): its attribution, checked by the rules of a
 * generation's (400 invalid_request with pointers in `details`). No body (undefined) is none.
 */
export function parseRunRequest(input: unknown): Attribution {
  if (input === undefined) return {};
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw errors.invalid('The request body must be a JSON object.');
  checkAttribution(input as Record<string, unknown>);
  return attributionOf(parseWith(RunRequest, input));
}

/**
 * startRun with an Idempotency-Key (null: none), claimed first in the run's transaction: a repeat
 * with the same key (runs take no body: the workflow id is the operation) answers the stored run
 * id (`replayed`) and starts nothing, even if the workflow changed since; a refused start (404,
 * 400, 402, 429) rolls the claim back with everything else.
 */
export async function startRunOnce(
  ctx: Context, caller: RunCaller, workflowId: string, idempotency: Idempotency | null, attribution: Attribution = {},
): Promise<{ body: RunAccepted; replayed: boolean }> {
  if (!isUuid(workflowId)) throw errors.invalid('id: must be a uuid');
  workflowId = workflowId.toLowerCase();
  const operation = `POST /workflows/${workflowId}/runs`;
  try {
    return await ctx.sql.begin(async (tx) => {
      if (idempotency) {
        const [c] = await claimIdempotencyKey(tx, caller.accountId, operation, idempotency.key, idempotency.fingerprint, ctx.config.idempotencyTtlSeconds);
        if (c!.replayed) return { body: c!.response_body as RunAccepted, replayed: true };
      }
      const [w] = await snapshotWorkflow(tx, caller.accountId, caller.workspaceId, workflowId);
      if (!w) throw errors.notFound('Workflow');
      const models = w.models.map((r) => rowToModel(r, ctx.config.defaultMarkup));
      const checked = checkGraph(ctx.config, models, caller.accountId, w.graph);
      if (!checked.ok) throw errors.invalid(`graph: ${issuesMessage(checked.issues)}`);
      const traceparent = traceparentOf(ctx.span);
      const units = traceparent ? planRun(checked.value).map((u) => ({ ...u, spec: { ...u.spec, traceparent } })) : planRun(checked.value);
      const [r] = await startWorkflowRun(tx, {
        accountId: caller.accountId, keyId: caller.keyId, workspaceId: caller.workspaceId, origin: caller.origin,
        workflowId, snapshot: w.graph, outputs: units,
        windowSeconds: ctx.config.runWindowSeconds, maxAttempts: ctx.config.generationMaxAttempts,
        endUser: attribution.endUser ?? null, metadata: attribution.metadata ?? null,
      });
      const body: RunAccepted = { id: r!.id, status: 'pending' };
      if (idempotency) await recordIdempotencyKey(tx, caller.accountId, operation, idempotency.key, 202, body);
      return { body, replayed: false };
    });
  } catch (e) {
    throw fromDatabaseError(e) ?? e;
  }
}

/** The row shape returned by kiln.get_workflow_run. */
export type RunRow = WorkflowRunJson;

async function renderResult(ctx: Context, r: WorkflowRunResultJson): Promise<WorkflowRunResultBody> {
  // type and platform are the graph's own values (workflows/graph.ts), as stored by the run.
  const out: WorkflowRunResultBody = { promptNodeId: r.promptNodeId, outputNodeId: r.outputNodeId, type: r.type as WorkflowRunResultBody['type'], status: r.status };
  if (r.label) out.label = r.label;
  if (r.platform) out.platform = r.platform as WorkflowRunResultBody['platform'];
  if (r.status === 'completed') {
    if (r.type === 'image' && r.expiredAt) {
      out.mediaType = r.mediaType ?? 'image/png';
      out.expiredAt = r.expiredAt;
    } else if (r.type === 'image' && r.path) {
      out.url = await signedUrl(ctx, r.path);
      out.mediaType = r.mediaType ?? 'image/png';
    } else if (r.code != null) {
      out.code = r.code;
    }
  }
  if (r.status === 'failed') out.error = r.error ?? 'output failed';
  out.costMicros = Number(r.costMicros ?? 0);
  if (r.status === 'completed' && r.model) out.model = r.model;
  return out;
}

/**
 * The `WorkflowRun` body from a kiln.get_workflow_run row (null → 404). A run past its window with
 * outputs never started is checked first (`reread` fetches it again afterwards).
 */
export async function renderRun(ctx: Context, row: RunRow | null, reread: () => Promise<RunRow | null>): Promise<WorkflowRunBody> {
  if (!row) throw errors.notFound('Workflow run');
  if (row.expired) {
    countEnded((await expireWorkflowRun(ctx.sql, row.id, ctx.config.workerStaleSeconds))[0]?.ended);
    row = (await reread()) ?? row;
  }
  return {
    id: row.id,
    workflowId: row.workflowId,
    status: row.status,
    progress: { total: row.total, completed: row.settled },
    results: await Promise.all(row.results.map((r) => renderResult(ctx, r))),
    error: row.error,
    createdAt: row.createdAt,
    completedAt: row.completedAt,
    retryOf: row.retryOf ?? null,
    ...(row.endUser != null ? { endUser: row.endUser } : {}),
    ...(row.metadata != null ? { metadata: row.metadata } : {}),
  };
}

/**
 * A run of `accountId`'s workflow. Throws ApiError invalid_request for malformed ids and
 * not_found for an unknown run, another account's, or a run of another workflow.
 */
export async function getRun(ctx: Context, caller: Caller, workflowId: string, runId: string): Promise<WorkflowRunBody> {
  const ids = runIds(workflowId, runId);
  return renderRun(ctx, await readRun(ctx, caller, ids), () => readRun(ctx, caller, ids));
}

export interface RunIds {
  workflowId: string;
  runId: string;
}

/** Checked ids of a run (400 invalid_request naming the bad one). */
export function runIds(workflowId: unknown, runId: unknown): RunIds {
  if (!isUuid(workflowId)) throw errors.invalid('id: must be a uuid');
  if (!isUuid(runId)) throw errors.invalid('runId: must be a uuid');
  return { workflowId: workflowId.toLowerCase(), runId: runId.toLowerCase() };
}

/** A run of the caller's account, as kiln.get_workflow_run returns it (null when there is none). */
export async function readRun(ctx: Context, caller: Caller, ids: RunIds): Promise<RunRow | null> {
  const [row] = await getWorkflowRun(ctx.sql, caller.accountId, ids.workflowId, ids.runId);
  return row?.r ?? null;
}

/** GET /workflows/{id}/runs/{runId} in one round trip: authorizes each key and reads its run in the same call. */
export const getRunCall: AuthorizedCall<RunIds, { body: RunRow | null }> = authorizedCall(100, ({ sql, config }, items) =>
  getWorkflowRunsForKeys(sql, items.map((i) => i.hash), config.readRpm, items.map((i) => i.payload.workflowId), items.map((i) => i.payload.runId)));

// ---------------------------------------------------------------- cancel, retry, history

/** What kiln.cancel_workflow_runs_for_keys adds to the authorization columns. */
export type CancelRunColumns = Pick<CancelWorkflowRunsForKeysRow, 'outcome' | 'body'> & Partial<Pick<CancelWorkflowRunsForKeysRow, 'settled'>>;

/**
 * POST /workflows/{id}/runs/{runId}/cancel in one round trip: authorizes each key — write scope,
 * the per-key read bucket, its own rpm — and cancels its run in the same transaction.
 */
export const cancelRunCall: AuthorizedCall<RunIds, CancelRunColumns> = authorizedCall(100, ({ sql, config }, items) =>
  cancelWorkflowRunsForKeys(sql, items.map((i) => i.hash), config.readRpm, items.map((i) => i.payload.workflowId), items.map((i) => i.payload.runId)));

/** The answer to a run cancel: the canceled run, or not_found / conflict (it had already ended). */
export async function canceledRun(ctx: Context, row: CancelRunColumns): Promise<WorkflowRunBody> {
  if (row.outcome === 'conflict') throw errors.conflict('The run has already ended; only a pending or running run can be canceled.');
  if (row.outcome !== 'canceled' || !row.body) throw errors.notFound('Workflow run');
  // The outputs this cancel ended were settled here (the cancel's process), so counted here.
  countEnded(row.settled);
  const body = row.body;
  return renderRun(ctx, body, async () => body);
}

/**
 * Cancels a pending or running run of the caller's: it fails with error `canceled`, outputs not
 * started are abandoned, outputs in flight are aborted and released; completed ones stay.
 * Throws ApiError invalid_request (bad ids), not_found, conflict (already ended).
 */
export async function cancelRun(ctx: Context, caller: Caller, workflowId: string, runId: string): Promise<WorkflowRunBody> {
  const ids = runIds(workflowId, runId);
  const [{ c }] = await cancelWorkflowRun(ctx.sql, caller.accountId, ids.workflowId, ids.runId);
  return canceledRun(ctx, { outcome: c.outcome, body: c.run ?? null, settled: c.settled ?? null });
}

/**
 * Retries a failed run of the caller's as a new run on the same snapshot, billed to the caller:
 * its completed outputs are reused (not run, not charged again); the rest runs again. Returns
 * the `RunAccepted` body. Throws ApiError invalid_request (bad ids), not_found, conflict
 * (the run is not failed, or was already retried), insufficient_quota, payment_required.
 */
export async function retryRun(ctx: Context, caller: Caller, ids: RunIds): Promise<{ id: string; status: 'pending' }> {
  try {
    const [r] = await retryWorkflowRun(ctx.sql, {
      accountId: caller.accountId, keyId: caller.keyId, workspaceId: caller.workspaceId, origin: caller.origin,
      workflowId: ids.workflowId, runId: ids.runId,
      windowSeconds: ctx.config.runWindowSeconds, maxAttempts: ctx.config.generationMaxAttempts,
    });
    countEnded(r!.ended);
    return { id: r!.id, status: 'pending' };
  } catch (e) {
    throw fromDatabaseError(e) ?? e;
  }
}

export interface RunPage extends Page {
  workflowId: string;
}

/** GET /workflows/{id}/runs in one round trip: authorizes each key and reads its page of runs (body null: no such workflow of the account). */
export const listRunsCall: AuthorizedCall<RunPage, { body: WorkflowRunSummaryRow[] | null }> = authorizedCall(100, ({ sql, config }, items) =>
  listWorkflowRunsForKeys(sql, items.map((i) => i.hash), config.readRpm, items.map((i) => i.payload.workflowId),
    items.map((i) => i.payload.limit), items.map((i) => i.payload.offset)));

/** GET /workflows/{id}/runs on the read replica, for keys the primary authorized (see Access.replicaRead). */
export const listRunsReplica: CallerRead<RunPage, { body: WorkflowRunSummaryRow[] | null }> = callerRead(100, (sql, _ctx, items) =>
  listWorkflowRunsForCallers(sql, items.map((i) => i.caller.accountId), items.map((i) => i.caller.workspaceId),
    items.map((i) => i.payload.workflowId), items.map((i) => i.payload.limit), items.map((i) => i.payload.offset)));

/** The runs of the caller's workflow, newest first. Throws ApiError invalid_request (bad id or page), not_found. */
export async function listRuns(ctx: Context, caller: Caller, workflowId: string, page: { limit?: unknown; offset?: unknown } = {}): Promise<{ data: WorkflowRunSummaryBody[] }> {
  if (!isUuid(workflowId)) throw errors.invalid('id: must be a uuid');
  const { limit, offset } = parsePage(page);
  const [row] = await readTolerant(ctx, (sql) => listWorkflowRuns(sql, caller.accountId, caller.workspaceId, workflowId.toLowerCase(), limit, offset));
  if (!row?.data) throw errors.notFound('Workflow');
  return { data: row.data };
}
