// Saving workflows, the one path: for a caller (REST and MCP alike) create, read, replace and
// delete a workflow of the caller's billing scope; for the operator (`kiln workflow import|export`,
// and tests) the same create and replace without a caller — the owner is named, a replace reaches
// any workflow. Every save is checked by checkSave (check.ts) in checkNew or replaceChecked below;
// writes are optimistic — each save bumps `version`, the ETag, and a stale If-Match is refused,
// never merged.

import { authorizedCall, type AuthorizedCall, type Caller } from '../auth/access.ts';
import { actAs, audited } from '../auth/audit.ts';
import { listModels, type CatalogModel } from '../billing/catalog.ts';
import type { Config } from '../config.ts';
import type { Context } from '../context.ts';
import type { Queryable, Sql } from '../db/pool.ts';
import { claimIdempotencyKey } from '../db/sql/claim_idempotency_key.ts';
import { createWorkflow as createWorkflowSql } from '../db/sql/create_workflow.ts';
import { deleteWorkflow } from '../db/sql/delete_workflow.ts';
import { getWorkflow as getWorkflowSql, type WorkflowRow } from '../db/sql/get_workflow.ts';
import { getWorkflowsForKeys } from '../db/sql/get_workflows_for_keys.ts';
import { lockWorkflow } from '../db/sql/lock_workflow.ts';
import { recordIdempotencyKey } from '../db/sql/record_idempotency_key.ts';
import { replaceWorkflow as replaceWorkflowSql } from '../db/sql/replace_workflow.ts';
import { errors, fromDatabaseError, type ErrorDetail } from '../errors.ts';
import { fingerprint } from '../idempotency.ts';
import { isUuid } from '../schemas.ts';
import { checkSave, saveMessage, type SaveCheck } from './check.ts';
import { MAX_DEPTH, type GraphValue } from './graph.ts';
import type { WorkflowBody } from './schemas.ts';
import { issuesMessage, tooDeep } from './validate.ts';

const iso = (t: Date | string) => new Date(t).toISOString();

/** The API body of a workflow row (kiln_private.workflows, as a row or as its JSON). */
export function workflowBody(row: WorkflowRow): WorkflowBody {
  return {
    id: row.id,
    name: row.name,
    graph: row.graph as WorkflowBody['graph'],
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    version: Number(row.version),
  };
}

/** The ETag of a workflow: its version, quoted (a strong entity tag). */
export function etagOf(w: { version: number }): string {
  return `"${w.version}"`;
}

/** The checked id of a path or argument (400 naming it). */
export function workflowId(id: unknown): string {
  if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
  return id.toLowerCase();
}

/** Raises the refused save's 400: every problem in `details`, the first ones in the message. */
function refuse(details: Array<{ path: string; message: string }>): never {
  throw errors.invalidBody(saveMessage(details), details);
}

/**
 * Nesting too deep for JSON.stringify (the fingerprint, the database driver) is refused before
 * anything else reads the body: a 400, never a stack overflow.
 */
function checkDepth(body: unknown): void {
  // The body is one level above the graph.
  const at = tooDeep(body, MAX_DEPTH + 1);
  if (at !== null) refuse([{ path: at, message: `${at.startsWith('/graph') ? 'graph' : 'body'}: nested more than ${MAX_DEPTH} levels deep` }]);
}

async function withDbErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    const api = fromDatabaseError(e);
    // A missing workflow is worded as GET /workflows/{id} words it, whichever method asked.
    if (api?.type === 'not_found' && api.message === 'workflow not found') throw errors.notFound('Workflow');
    throw api ?? e;
  }
}

// ------------------------------------------------------------------ the one check and write

type Checked = Extract<SaveCheck, { ok: true }>;

/** A new workflow's save, checked against the catalog for `accountId`; `refused` throws what a refusal becomes. */
async function checkNew(sql: Sql, config: Config, accountId: string, body: unknown, refused: (details: ErrorDetail[]) => never): Promise<Checked> {
  const checked = checkSave(config, await listModels(sql, config.defaultMarkup), accountId, body);
  if (!checked.ok) refused(checked.details);
  return checked;
}

/**
 * A replace inside an open transaction: locks the workflow (within `scope`; null: the operator's,
 * any workflow), checks the save against the stored graph (its written-back results are kept for
 * output nodes the body leaves them out of; for `accountId`, else the owner's), and writes it:
 * version + 1. `ifVersions` (If-Match; null: none) must name the stored version.
 */
async function replaceChecked(tx: Queryable, config: Config, models: CatalogModel[], scope: { accountId: string; workspaceId: string | null } | null,
  id: string, body: unknown, ifVersions: number[] | null, refused: (details: ErrorDetail[]) => never, nameOptional = false): Promise<WorkflowRow> {
  const [current] = await lockWorkflow(tx, scope?.accountId ?? null, scope?.workspaceId ?? null, id, ifVersions);
  const checked = checkSave(config, models, scope?.accountId ?? current!.account_id, body, { stored: current!.graph, nameOptional });
  if (!checked.ok) refused(checked.details);
  const [row] = await replaceWorkflowSql(tx, scope?.accountId ?? null, scope?.workspaceId ?? null, id, checked.name, checked.graph, ifVersions);
  return row!;
}

// ------------------------------------------------------------------ for a caller (REST, MCP)

/**
 * Creates a workflow from `{ name, graph }` in the caller's scope (its workspace when the key or
 * identity is bound to one, else its account). With an Idempotency-Key, claimed in the transaction
 * that creates: a repeat with the same key and body answers the stored 201 body (`replayed`) and
 * creates nothing; a refused save keeps nothing. Throws ApiError invalid_request (with details),
 * insufficient_scope (a workspace the account left), idempotency_conflict.
 */
export async function createWorkflowFor(ctx: Context, caller: Caller, body: unknown, idempotencyKey: string | null): Promise<{ body: WorkflowBody; replayed: boolean }> {
  checkDepth(body);
  // Checked before the key is claimed, as POST /generations checks its body: a body refused now
  // (a model disabled since, say) is refused on a retry too; what the claim guards is the write.
  const checked = await checkNew(ctx.sql, ctx.config, caller.accountId, body, refuse);
  // A key is the account's, per operation: a workspace's saves and the personal ones apart.
  const operation = `POST /workflows ${caller.workspaceId ?? caller.accountId}`;
  return withDbErrors(() => ctx.sql.begin(async (tx) => {
    await actAs(tx, caller);
    if (idempotencyKey !== null) {
      const [c] = await claimIdempotencyKey(tx, caller.accountId, operation, idempotencyKey, fingerprint(body), ctx.config.idempotencyTtlSeconds);
      if (c!.replayed) return { body: c!.response_body as WorkflowBody, replayed: true };
    }
    const [row] = await createWorkflowSql(tx, caller.accountId, caller.workspaceId, checked.name!, checked.graph);
    const created = workflowBody(row!);
    if (idempotencyKey !== null) await recordIdempotencyKey(tx, caller.accountId, operation, idempotencyKey, 201, created);
    return { body: created, replayed: false };
  }));
}

/** A workflow of the caller's scope (not deleted). Throws ApiError invalid_request (bad id), not_found. */
export async function getWorkflowFor(ctx: Context, caller: Caller, id: unknown): Promise<WorkflowBody> {
  const [row] = await getWorkflowSql(ctx.sql, workflowId(id), caller.accountId, caller.workspaceId);
  if (!row) throw errors.notFound('Workflow');
  return workflowBody(row);
}

/** GET /workflows/{id} in one round trip: authorizes each key and reads that workflow of its scope in the same call. */
export const getWorkflowCall: AuthorizedCall<string, { body: WorkflowRow | null }> = authorizedCall(100, ({ sql, config }, items) =>
  getWorkflowsForKeys(sql, items.map((i) => i.hash), config.readRpm, items.map((i) => i.payload)));

/**
 * Replaces the name and graph of a workflow of the caller's scope: version + 1. `ifVersions`
 * (If-Match; null: none, the last write wins) must name the stored version. In one transaction
 * the workflow is locked, the save is checked against it (its written-back results are kept
 * for output nodes the body leaves them out of) and written. Throws ApiError invalid_request
 * (with details), not_found, precondition_failed.
 */
export async function replaceWorkflowFor(ctx: Context, caller: Caller, id: unknown, body: unknown, ifVersions: number[] | null): Promise<WorkflowBody> {
  const wid = workflowId(id);
  checkDepth(body);
  const models = await listModels(ctx.sql, ctx.config.defaultMarkup);
  return withDbErrors(() => ctx.sql.begin(async (tx) => {
    await actAs(tx, caller);
    return workflowBody(await replaceChecked(tx, ctx.config, models, caller, wid, body, ifVersions, refuse));
  }));
}

/**
 * Deletes a workflow of the caller's scope: it leaves the list and cannot run; runs already started
 * finish and stay readable by id. Throws ApiError invalid_request (bad id), not_found,
 * precondition_failed (If-Match named another version).
 */
export async function deleteWorkflowFor(ctx: Context, caller: Caller, id: unknown, ifVersions: number[] | null): Promise<WorkflowBody> {
  const wid = workflowId(id);
  const [row] = await withDbErrors(() => audited(ctx, caller, (tx) => deleteWorkflow(tx, caller.accountId, caller.workspaceId, wid, ifVersions)));
  return workflowBody(row!);
}

// ------------------------------------------------------------------ for the operator

/** A save the operator's check refused (`kiln workflow import` prints its message). */
export class GraphError extends Error {
  constructor(readonly details: ErrorDetail[]) {
    super(`invalid graph: ${issuesMessage(details, 20)}`);
    this.name = 'GraphError';
  }
}

const graphError = (details: ErrorDetail[]): never => {
  throw new GraphError(details);
};

/** A saved workflow; its graph is one checkSave accepted when stored (runs write results back onto output nodes). */
export type SavedWorkflow = Omit<WorkflowRow, 'graph'> & { graph: GraphValue };

/** Saves a new workflow for `accountId` (in `workspaceId` when given). Throws GraphError, or KN001/KF001/KI001 from SQL. */
export async function createWorkflow(sql: Sql, config: Config, opts: { accountId: string; workspaceId: string | null; name: string; graph: unknown }): Promise<SavedWorkflow> {
  const checked = await checkNew(sql, config, opts.accountId, { name: opts.name, graph: opts.graph }, graphError);
  const [row] = await createWorkflowSql(sql, opts.accountId, opts.workspaceId, checked.name!, checked.graph);
  return row as SavedWorkflow;
}

/**
 * Replaces a workflow's graph (and name, when given): a save like any other — version + 1,
 * written-back results kept on output nodes the new graph leaves them out of. Throws GraphError, KN001.
 */
export async function replaceWorkflow(sql: Sql, config: Config, opts: { id: string; graph: unknown; name: string | null }): Promise<SavedWorkflow> {
  const models = await listModels(sql, config.defaultMarkup);
  return sql.begin((tx) => replaceChecked(tx, config, models, null, opts.id, { name: opts.name, graph: opts.graph }, null, graphError, true)) as Promise<SavedWorkflow>;
}

/** The stored workflow (not deleted), including outputs written back by completed runs; null when absent. */
export async function getWorkflow(sql: Sql, id: string): Promise<SavedWorkflow | null> {
  const [row] = await getWorkflowSql(sql, id, null, null);
  return (row as SavedWorkflow | undefined) ?? null;
}
