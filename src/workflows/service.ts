// Workflow service shared by REST and MCP: list saved workflows, start a run (snapshot + plan +
// enqueue in one transaction) and read a run in the SPEC's "Workflow run" shape.

import { rowToModel, type CatalogModel } from '../catalog.ts';
import type { Config } from '../config.ts';
import type { Context } from '../context.ts';
import { errors, fromDatabaseError } from '../errors.ts';
import { isUuid } from '../generations/service.ts';
import { signedUrl } from '../store.ts';
import { classifyImage } from './images.ts';
import { planRun } from './plan.ts';
import type { WorkflowRunBody, WorkflowRunResultBody, WorkflowSummaryBody } from './schemas.ts';
import { issuesMessage, validateGraph, type Validation } from './validate.ts';

export interface RunCaller {
  accountId: string;
  /** The API key, when the call came with one (null for MCP). */
  keyId: string | null;
  /** Team pool the outputs bill to; null = the personal budget. */
  workspaceId: string | null;
  origin: 'api' | 'mcp';
}

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

/** The caller's workflows, most recently updated first. Throws ApiError invalid_request for a bad page. */
export async function listWorkflows(ctx: Context, accountId: string, page: { limit?: unknown; offset?: unknown } = {}): Promise<{ data: WorkflowSummaryBody[] }> {
  const { limit, offset } = parsePage(page);
  const [row] = await ctx.sql`select kiln.list_workflows(${accountId}::uuid, ${limit}::int, ${offset}::int) as data`;
  return { data: row.data };
}

/** Validates a graph for `accountId` against the catalog (image urls are checked for that owner). */
export function checkGraph(config: Config, models: CatalogModel[], accountId: string, graph: unknown): Validation {
  return validateGraph(graph, {
    models: new Map(models.map((m) => [m.id, m])),
    defaultImageModel: config.defaultImageModel,
    defaultCodeModel: config.defaultCodeModel,
    checkImage: (url) => {
      const ref = classifyImage(config.publicUrl, accountId, url);
      return ref.kind === 'invalid' ? ref.problem : null;
    },
  });
}

/**
 * Starts a run of an owned workflow: in one transaction the graph is read (and locked against a
 * concurrent edit), validated, planned, snapshotted and its ready outputs queued. Returns the SPEC
 * "Run accepted" body. Throws ApiError: invalid_request (bad id or graph), not_found,
 * insufficient_quota, payment_required.
 */
export async function startRun(ctx: Context, caller: RunCaller, workflowId: string): Promise<{ id: string; status: 'pending' }> {
  if (!isUuid(workflowId)) throw errors.invalid('id: must be a uuid');
  try {
    const id = await ctx.sql.begin(async (tx) => {
      const [w] = await tx`select graph, models from kiln.snapshot_workflow(${caller.accountId}::uuid, ${workflowId}::uuid)`;
      if (!w) throw errors.notFound('Workflow');
      const models = (w.models as any[]).map((r) => rowToModel(r, ctx.config.defaultMarkup));
      const checked = checkGraph(ctx.config, models, caller.accountId, w.graph);
      if (!checked.ok) throw errors.invalid(`graph: ${issuesMessage(checked.issues)}`);
      const units = planRun(checked.value);
      const [r] = await tx`
        select kiln.start_workflow_run(${caller.accountId}::uuid, ${caller.keyId}::uuid, ${caller.workspaceId}::uuid, ${caller.origin},
          ${workflowId}::uuid, ${tx.json(w.graph)}::jsonb, ${tx.json(units as any)}::jsonb,
          ${ctx.config.runWindowSeconds}::int, ${ctx.config.generationMaxAttempts}::int) as id`;
      return r.id as string;
    });
    return { id, status: 'pending' };
  } catch (e) {
    throw fromDatabaseError(e) ?? e;
  }
}

/** The row shape returned by kiln.get_workflow_run. */
export interface RunRow {
  id: string;
  workflowId: string;
  status: WorkflowRunBody['status'];
  total: number;
  settled: number;
  error: string | null;
  createdAt: string;
  completedAt: string | null;
  expired: boolean;
  results: Array<Record<string, any>>;
}

async function renderResult(ctx: Context, r: Record<string, any>): Promise<WorkflowRunResultBody> {
  const out: WorkflowRunResultBody = { promptNodeId: r.promptNodeId, outputNodeId: r.outputNodeId, type: r.type, status: r.status };
  if (r.label) out.label = r.label;
  if (r.platform) out.platform = r.platform;
  if (r.status === 'completed') {
    if (r.type === 'image' && r.path) {
      out.url = await signedUrl(ctx, r.path);
      out.mediaType = r.mediaType ?? 'image/png';
    } else if (r.code != null) {
      out.code = r.code;
    }
  }
  if (r.status === 'failed') out.error = r.error ?? 'output failed';
  out.costMicros = Number(r.costMicros ?? 0);
  return out;
}

/**
 * SPEC "Workflow run" from a kiln.get_workflow_run row (null → 404). A run past its window with
 * outputs never started is checked first (`reread` fetches it again afterwards).
 */
export async function renderRun(ctx: Context, row: RunRow | null, reread: () => Promise<RunRow | null>): Promise<WorkflowRunBody> {
  if (!row) throw errors.notFound('Workflow run');
  if (row.expired) {
    await ctx.sql`select kiln.expire_workflow_run(${row.id}::uuid, ${ctx.config.workerStaleSeconds}::int)`;
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
  };
}

/**
 * A run of `accountId`'s workflow. Throws ApiError invalid_request for malformed ids and
 * not_found for an unknown run, another account's, or a run of another workflow.
 */
export async function getRun(ctx: Context, accountId: string, workflowId: string, runId: string): Promise<WorkflowRunBody> {
  if (!isUuid(workflowId)) throw errors.invalid('id: must be a uuid');
  if (!isUuid(runId)) throw errors.invalid('runId: must be a uuid');
  const read = async () => {
    const [row] = await ctx.sql`select kiln.get_workflow_run(${accountId}::uuid, ${workflowId}::uuid, ${runId}::uuid) as r`;
    return (row?.r ?? null) as RunRow | null;
  };
  return renderRun(ctx, await read(), read);
}
