// list_workflows, run_workflow and get_workflow_run: the REST workflow service with origin 'mcp'.
// A run bills each output to the identity's scope, like generate_*; reads use the MCP read bucket.
import * as v from 'valibot';
import type { Caller } from '../../auth/access.ts';
import type { Context } from '../../context.ts';
import { Uuid } from '../../schemas.ts';
import { hubOf } from '../../live/hub.ts';
import { waitForRun } from '../../live/runs.ts';
import { WaitSeconds } from '../../live/schemas.ts';
import { idempotencyOf } from '../../idempotency.ts';
import { cancelRun, getRun, listWorkflows, readRun, renderRun, runIds, startRunOnce } from '../../workflows/service.ts';
import { errors } from '../../errors.ts';
import { ListLimit, ListOffset, RunAccepted, WorkflowList, WorkflowRun, type WorkflowRunBody } from '../../workflows/schemas.ts';
import type { ToolDef } from '../tools.ts';
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
    async handler(caller, args: v.InferOutput<typeof ListArgs>) {
      const list = await listWorkflows(ctx, caller, args);
      const text = list.data.length
        ? `${list.data.length} workflow${list.data.length === 1 ? '' : 's'}: ${list.data.map((w) => `${w.name} (${w.id})`).join(', ')}.`
        : 'No workflows on this page.';
      return { structuredContent: list, text };
    },
  });
}

const RunArgs = v.object({ workflowId: v.pipe(Uuid, v.description('Workflow id from list_workflows.')), idempotencyKey: IdempotencyKeyArg });

export function runWorkflowTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'run_workflow',
    title: 'Run a workflow',
    description:
      'Start a headless run of one of your saved workflows: every generatable node runs server-side in dependency order, each output billed like a generation. ' +
      'The run uses a snapshot of the graph taken now. When it completes, its outputs are written back onto the workflow\'s output nodes, replacing earlier values. ' +
      'Returns a pending run id at once; poll get_workflow_run.',
    input: RunArgs,
    output: RunAccepted,
    // Spends budget, calls model providers, and overwrites the saved workflow's output nodes on completion.
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true, idempotentHint: false },
    bucket: null,
    async handler(caller, args: v.InferOutput<typeof RunArgs>) {
      const started = await startRunOnce(ctx, caller, args.workflowId, idempotencyOf(args.idempotencyKey ?? null, null));
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
    async handler(caller, args: v.InferOutput<typeof GetRunArgs>) {
      const run = args.waitSeconds ? await waitedRun(ctx, caller, args.workflowId, args.runId, args.waitSeconds) : await getRun(ctx, caller, args.workflowId, args.runId);
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
    async handler(caller, args: v.InferOutput<typeof CancelRunArgs>) {
      const run = await cancelRun(ctx, caller, args.workflowId, args.runId);
      return { structuredContent: run, text: runText(run) };
    },
  });
}

/** get_workflow_run with waitSeconds: read, then wait for completed or failed (the tool's bucket was drawn on once). */
async function waitedRun(ctx: Context, caller: Caller, workflowId: string, runId: string, seconds: number): Promise<WorkflowRunBody> {
  const ids = runIds(workflowId, runId);
  const mark = hubOf(ctx).mark();
  const first = await readRun(ctx, caller, ids);
  if (!first) throw errors.notFound('Workflow run');
  const { state } = await waitForRun(ctx, caller, ids, { mark, first, seconds });
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
