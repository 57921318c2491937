// list_workflows, get_workflow, save_workflow, run_workflow and get_workflow_run: the REST workflow
// services with origin 'mcp', so an agent can build a pipeline, save it and run it. A run bills each
// output to the identity's scope, like generate_*; reads and saves use the MCP read bucket.
import * as v from 'valibot';
import type { Caller } from '../../auth/access.ts';
import type { Context } from '../../context.ts';
import { issueMessage, Uuid } from '../../schemas.ts';
import { reportProgress } from '../../live/generations.ts';
import { hubOf, keyOf } from '../../live/hub.ts';
import { waitForRun } from '../../live/runs.ts';
import { WaitSeconds } from '../../live/schemas.ts';
import { idempotencyOf } from '../../idempotency.ts';
import { cancelRun, getRun, listWorkflows, parseRunRequest, readRun, renderRun, runIds, startRunOnce } from '../../workflows/service.ts';
import { ApiError, errors, fromDatabaseError } from '../../errors.ts';
import { createWorkflowFor, getWorkflowFor, replaceWorkflowFor } from '../../workflows/authoring.ts';
import { SavedGraph } from '../../workflows/graph.ts';
import { ListLimit, ListOffset, RunAccepted, RunRequest, SaveWorkflowRequest, Workflow, WorkflowList, WorkflowRun, type WorkflowBody, type WorkflowRunBody } from '../../workflows/schemas.ts';
import type { ToolDef } from '../tool-server.ts';
import { CANCELS, defineTool, IdempotencyKeyArg, READ_ONLY } from './common.ts';

const ListArgs = v.object({ limit: v.optional(ListLimit), offset: v.optional(ListOffset) });

export function listWorkflowsTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'list_workflows',
    title: 'List workflows',
    description: 'List your saved workflows (id, name, updated_at), most recently updated first. Paginate with limit (1–100, default 50) and offset.',
    input: ListArgs,
    output: WorkflowList,
    annotations: READ_ONLY,
    bucket: 'read',
    async handler(caller, args: v.InferOutput<typeof ListArgs>, ctx) {
      const list = await listWorkflows(ctx, caller, args);
      const text = list.data.length
        ? `${list.data.length} workflow${list.data.length === 1 ? '' : 's'}: ${list.data.map((w) => `${w.name} (${w.id})`).join(', ')}.`
        : 'No workflows on this page.';
      return { structuredContent: list, text };
    },
  });
}

const GetArgs = v.object({ id: v.pipe(Uuid, v.description('Workflow id from list_workflows or save_workflow.')) });

export function getWorkflowTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'get_workflow',
    title: 'Get a workflow',
    description:
      'Read one of your saved workflows with its graph (nodes and edges; output nodes carry the results completed runs wrote back) and its version. ' +
      'Pass the version to save_workflow to replace it only if nobody saved it since.',
    input: GetArgs,
    output: Workflow,
    annotations: READ_ONLY,
    bucket: 'read',
    async handler(caller, args: v.InferOutput<typeof GetArgs>, ctx) {
      const w = await getWorkflowFor(ctx, caller, args.id);
      return { structuredContent: w, text: `${workflowText(w)}` };
    },
  });
}

const SaveArgs = v.object({
  id: v.optional(v.pipe(Uuid, v.description('Omit to create a workflow; give to replace that workflow\'s name and graph.'))),
  name: SaveWorkflowRequest.entries.name,
  graph: v.pipe(SavedGraph, v.description(
    'Nodes: `{ id, kind: "text", text }`, `{ id, kind: "image", url }`, `{ id, kind: "prompt", output: image|code|screen|design|video, prompt, model? }` ' +
    '(model: an id from list_models that can produce that output), `{ id, kind: "output", label? }`. Edges `{ from, to }`: text/image/output nodes feed prompts, ' +
    'each prompt feeds its output nodes (one result each), no cycles. At most 200 nodes, 1,000 edges, 256 KB.',
  )),
  version: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.description(
    'With id: replace only if this is still the stored version (from get_workflow or an earlier save), else a precondition_failed error and nothing is saved. Omitted: the last save wins.',
  ))),
  idempotencyKey: IdempotencyKeyArg,
});
/** The arguments save_workflow checks itself before the save does (every problem of name and graph, with pointers). */
const SaveIds = v.object({ id: SaveArgs.entries.id, version: SaveArgs.entries.version, idempotencyKey: IdempotencyKeyArg });

export function saveWorkflowTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'save_workflow',
    title: 'Save a workflow',
    description:
      'Create a workflow (no id) or replace one (id; with version, only if nobody saved it since). The graph is checked as a whole: unique ids, edges between existing nodes, ' +
      'no cycles, models that exist and fit their output type, image URLs you can read, limits; a refused save lists every problem in error.details, each with a JSON pointer ' +
      'such as /graph/nodes/3/model. Returns the saved workflow with its new version; run it with run_workflow. idempotencyKey applies when creating.',
    input: SaveArgs,
    output: Workflow,
    // A replace overwrites the stored graph; a create is not idempotent without idempotencyKey.
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: false, idempotentHint: false },
    bucket: 'read',
    checksArguments: true,
    async handler(caller, args: Record<string, unknown>, ctx) {
      const ids = v.safeParse(SaveIds, args);
      if (!ids.success) throw errors.invalid(issueMessage(ids.issues));
      const { id, version, idempotencyKey } = ids.output;
      const body = { name: args.name, graph: args.graph };
      if (id === undefined) {
        if (version !== undefined) throw errors.invalid('version: only with id (a replace); a new workflow starts at version 1');
        const saved = await createWorkflowFor(ctx, caller, body, idempotencyKey ?? null);
        const again = saved.replayed ? ' (already created with this idempotencyKey: nothing new was saved)' : '';
        return { structuredContent: saved.body, text: `Created ${workflowText(saved.body)}${again}. Run it with run_workflow { workflowId: "${saved.body.id}" }.` };
      }
      const saved = await replaceWorkflowFor(ctx, caller, id, body, version === undefined ? null : [version]).catch((e: unknown) => {
        throw staleVersion(e, version) ?? e;
      });
      return { structuredContent: saved, text: `Saved ${workflowText(saved)}. Run it with run_workflow { workflowId: "${saved.id}" }.` };
    },
  });
}

/**
 * A save whose `version` is no longer the stored one, told in this tool's terms: its argument is
 * `version` (REST's is the If-Match header, which the database's message names).
 */
function staleVersion(e: unknown, version: number | undefined): ApiError | null {
  const api = e instanceof ApiError ? e : fromDatabaseError(e);
  if (api?.type !== 'precondition_failed') return null;
  const now = /now version (\d+)/.exec(api.message)?.[1];
  return new ApiError('precondition_failed',
    `The workflow has changed since version ${version}${now ? `: it is now version ${now}` : ''}. ` +
    'Read it again with get_workflow and reapply your change (passing its version), or save without version to overwrite it.');
}

function workflowText(w: WorkflowBody): string {
  const nodes = w.graph.nodes.length;
  const edges = w.graph.edges.length;
  return `workflow "${w.name}" (${w.id}), version ${w.version}: ${nodes} node${nodes === 1 ? '' : 's'}, ${edges} edge${edges === 1 ? '' : 's'}`;
}

const RunArgs = v.object({
  workflowId: v.pipe(Uuid, v.description('Workflow id from list_workflows.')),
  ...RunRequest.entries,
  idempotencyKey: IdempotencyKeyArg,
});

export function runWorkflowTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'run_workflow',
    title: 'Run a workflow',
    description:
      'Start a headless run of one of your saved workflows: every generatable node runs server-side in dependency order, each output billed like a generation. ' +
      'The run uses a snapshot of the graph taken now. When it completes, its outputs are written back onto the workflow\'s output nodes, replacing earlier values. ' +
      'Returns a pending run id at once; poll get_workflow_run. endUser and metadata attribute the run and every output (as on generate_image).',
    input: RunArgs,
    output: RunAccepted,
    // Spends budget, calls model providers, and overwrites the saved workflow's output nodes on completion.
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true, idempotentHint: false },
    bucket: null,
    async handler(caller, args: v.InferOutput<typeof RunArgs>, ctx) {
      // The REST body's attribution, with its rules (and the same fingerprint).
      const attribution = parseRunRequest({ ...(args.endUser !== undefined ? { endUser: args.endUser } : {}), ...(args.metadata !== undefined ? { metadata: args.metadata } : {}) });
      const started = await startRunOnce(ctx, caller, args.workflowId, idempotencyOf(args.idempotencyKey ?? null, Object.keys(attribution).length ? attribution : null), attribution);
      const accepted = started.body;
      return {
        structuredContent: accepted,
        text: started.replayed
          ? `Run ${accepted.id} of workflow ${args.workflowId} was already started with this idempotencyKey; nothing new was started. Poll get_workflow_run with workflowId and runId.`
          : `Started run ${accepted.id} of workflow ${args.workflowId} (pending). Poll get_workflow_run with workflowId and runId.`,
      };
    },
  });
}

const GetRunArgs = v.object({
  workflowId: v.pipe(Uuid, v.description('The workflow the run belongs to.')),
  runId: v.pipe(Uuid, v.description('Run id returned by run_workflow.')),
  waitSeconds: v.optional(WaitSeconds),
});

export function getWorkflowRunTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'get_workflow_run',
    title: 'Get a workflow run',
    description:
      'Read a workflow run: status (pending, running, completed, failed), progress (outputs settled of total), per-output results as they settle ' +
      '(signed image URLs, code/HTML/SVG text, cost in microdollars, failure details) and the run error. ' +
      'Pass waitSeconds (up to 50) to wait in this call until the run is completed or failed.',
    input: GetRunArgs,
    output: WorkflowRun,
    annotations: READ_ONLY,
    bucket: 'read',
    async handler(caller, args: v.InferOutput<typeof GetRunArgs>, ctx, t) {
      const run = args.waitSeconds ? await waitedRun(ctx, caller, args.workflowId, args.runId, args.waitSeconds, t.progress) : await getRun(ctx, caller, args.workflowId, args.runId);
      return { structuredContent: run, text: runText(run) };
    },
  });
}

const CancelRunArgs = v.object({
  workflowId: v.pipe(Uuid, v.description('Workflow id.')),
  runId: v.pipe(Uuid, v.description('Run id returned by run_workflow.')),
});

export function cancelWorkflowRunTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'cancel_workflow_run',
    title: 'Cancel a workflow run',
    description:
      'Cancel a pending or running workflow run (POST /workflows/{id}/runs/{runId}/cancel): outputs not started are abandoned, running ones aborted and ' +
      'their reservations released; completed outputs keep their results and charges. The run ends failed with error "canceled". ' +
      'A run that already completed or failed cannot be canceled (a conflict error).',
    input: CancelRunArgs,
    output: WorkflowRun,
    annotations: CANCELS,
    bucket: 'read',
    async handler(caller, args: v.InferOutput<typeof CancelRunArgs>, ctx) {
      const run = await cancelRun(ctx, caller, args.workflowId, args.runId);
      return { structuredContent: run, text: runText(run) };
    },
  });
}

/** get_workflow_run with waitSeconds: read, then wait for completed or failed (the tool's bucket was drawn on once). */
async function waitedRun(ctx: Context, caller: Caller, workflowId: string, runId: string, seconds: number, progress?: (p: number, m?: string) => void): Promise<WorkflowRunBody> {
  const ids = runIds(workflowId, runId);
  const mark = hubOf(ctx).mark();
  const first = await readRun(ctx, caller, ids);
  if (!first) throw errors.notFound('Workflow run');
  // With a progressToken, what its outputs write meanwhile goes out as progress.
  const stop = progress ? reportProgress(ctx, keyOf('run', ids.runId), progress) : null;
  const { state } = await waitForRun(ctx, caller, ids, { mark, first, seconds }).finally(() => stop?.());
  return renderRun(ctx, state ?? first, () => readRun(ctx, caller, ids));
}

function runText(r: WorkflowRunBody): string {
  const head = `Run ${r.id} is ${r.status}: ${r.progress.completed} of ${r.progress.total} outputs settled.`;
  const lines = r.results.map((x) => {
    const what = x.status === 'failed' ? `failed: ${x.error}` : x.status === 'skipped' ? 'skipped' : x.url ?? (x.code !== undefined ? `${x.code.length} characters of ${x.type}` : 'completed');
    return `- ${x.label ?? x.outputNodeId} (${x.type}): ${what}`;
  });
  return [head, ...lines, ...(r.error ? [`Error: ${r.error}`] : [])].join('\n');
}
