// Workflow schemas (the OpenAPI `WorkflowSummary`, `RunAccepted`, `WorkflowRun`, `WorkflowRunResult`,
// and the saved workflow with its graph) and the list query: the single source for REST, OpenAPI
// and MCP tools. Saves are checked by workflows/check.ts, which collects every problem.

import * as v from 'valibot';
import { registerSchemas, Uuid } from '../schemas.ts';
import { EndUser, Metadata } from '../generations/attribution.ts';
import { Edge, Graph, ImageNode, Node, OUTPUT_TYPES, OutputNode, OutputResult, PLATFORMS, PromptNode, SavedGraph, TextNode } from './graph.ts';

const dateTime = v.pipe(v.string(), v.isoTimestamp());

export const WorkflowSummary = v.object({
  id: Uuid,
  name: v.string(),
  updated_at: v.pipe(dateTime, v.description('When the workflow (its graph, name or written-back outputs) last changed.')),
});
export const WorkflowList = v.object({ data: v.array(WorkflowSummary) });

export const ListLimit = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100), v.description('Page size, 1 to 100. Default 50.'));
export const ListOffset = v.pipe(v.number(), v.integer(), v.minValue(0), v.description('Workflows to skip, at least 0. Default 0.'));
export const RunListOffset = v.pipe(v.number(), v.integer(), v.minValue(0), v.description('Runs to skip, at least 0. Default 0.'));

export const RunRequest = v.pipe(
  v.object({
    endUser: v.optional(EndUser),
    metadata: v.optional(Metadata),
  }, 'The request body must be a JSON object.'),
  v.description('Optional body of `POST /workflows/{id}/runs`: the run\'s attribution (docs: Attribution), which every output inherits.'),
);

export const RunAccepted = v.object({
  id: v.pipe(Uuid, v.description('Run id.')),
  status: v.pipe(v.literal('pending'), v.description('Always `pending`.')),
});

export const WorkflowRunResult = v.object({
  promptNodeId: v.string(),
  outputNodeId: v.string(),
  type: v.pipe(v.picklist(OUTPUT_TYPES), v.description('`image`, `code`, `screen` or `design`; `video` outputs are reported with status `skipped`.')),
  status: v.picklist(['completed', 'failed', 'skipped']),
  label: v.optional(v.pipe(v.string(), v.description('The output node\'s label, when set.'))),
  platform: v.optional(v.pipe(v.picklist(PLATFORMS), v.description('Set on outputs created by a social-post campaign.'))),
  url: v.optional(v.pipe(v.string(), v.description('Signed, expiring URL; completed image outputs, until they expire.'))),
  mediaType: v.optional(v.pipe(v.string(), v.description('Completed image outputs.'))),
  code: v.optional(v.pipe(v.string(), v.description('Text of completed code, screen (HTML) and design (SVG) outputs.'))),
  error: v.optional(v.pipe(v.string(), v.description('Set when `status` is `failed`.'))),
  costMicros: v.optional(v.pipe(v.number(), v.integer(), v.description('Billed cost in microdollars (0 when nothing was charged).'))),
  model: v.optional(v.pipe(v.string(), v.description('Completed outputs: the catalog entry that produced the output and was billed — the prompt\'s model, or one of its fallbacks when its upstream was down.'))),
  expiredAt: v.optional(v.pipe(v.string(), v.description('Completed image outputs removed under the service\'s retention period (KILN_RETENTION): when; `url` is then absent.'))),
});

export const Progress = v.pipe(
  v.object({ total: v.pipe(v.number(), v.integer()), completed: v.pipe(v.number(), v.integer()) }),
  v.description('`total`: outputs (prompt → output edges) of the run; `completed`: outputs settled so far (completed, failed or skipped).'),
);

export const WorkflowRun = v.object({
  id: v.pipe(Uuid, v.description('Run id.')),
  workflowId: Uuid,
  status: v.picklist(['pending', 'running', 'completed', 'failed']),
  progress: Progress,
  results: v.pipe(v.array(WorkflowRunResult), v.description('One entry per settled output, in the order they settled; grows while the run is in flight.')),
  error: v.nullable(v.string()),
  createdAt: dateTime,
  completedAt: v.nullable(dateTime),
  retryOf: v.pipe(v.nullable(Uuid), v.description('The failed run this run retried (`POST /workflows/{id}/runs/{runId}/retry`), or null.')),
  endUser: v.optional(v.pipe(v.string(), v.description('The run\'s `endUser`, when it was started with one (a retry keeps its run\'s); its outputs carry it too.'))),
  metadata: v.optional(v.pipe(v.record(v.string(), v.string()), v.description('The run\'s `metadata`, when it was started with any (a retry keeps its run\'s).'))),
});

export const WorkflowRunSummary = v.object({
  id: v.pipe(Uuid, v.description('Run id.')),
  status: v.picklist(['pending', 'running', 'completed', 'failed']),
  progress: Progress,
  createdAt: dateTime,
  completedAt: v.nullable(dateTime),
  retryOf: v.pipe(v.nullable(Uuid), v.description('The failed run this run retried, or null.')),
});
export const WorkflowRunList = v.object({ data: v.pipe(v.array(WorkflowRunSummary), v.description('Newest first.')) });

const GraphNode = v.object({
  id: v.string(),
  kind: v.pipe(v.picklist(['text', 'image', 'prompt', 'output']), v.description('`text` and `image` are inputs, `prompt` nodes generate, `output` nodes receive.')),
  label: v.optional(v.string()),
  output: v.optional(v.pipe(v.picklist(OUTPUT_TYPES), v.description('Prompt nodes: what they generate.'))),
  model: v.optional(v.pipe(v.string(), v.description('Prompt nodes: the model they name, when set.'))),
  platform: v.optional(v.picklist(PLATFORMS)),
});
export const WorkflowRunGraph = v.object({
  runId: v.pipe(Uuid, v.description('Run id.')),
  workflowId: Uuid,
  nodes: v.pipe(v.array(GraphNode), v.description('The nodes of the run\'s snapshot, in the order they were saved. Structure only: prompt and text values are not returned.')),
  edges: v.array(v.object({ from: v.string(), to: v.string() })),
});

const Version = v.pipe(v.number(), v.integer(), v.minValue(1));

/** A saved workflow (GET /workflows/{id}, and the answer of every save). */
export const Workflow = v.object({
  id: Uuid,
  name: v.string(),
  graph: Graph,
  createdAt: dateTime,
  updatedAt: v.pipe(dateTime, v.description('When it was last saved or received a run\'s results.')),
  version: v.pipe(Version, v.description('1 when created, + 1 on every save; a run writing its results back does not change it. The `ETag` is this number in quotes: send it as `If-Match` to save only over this version.')),
});

/** POST /workflows and PUT /workflows/{id}. */
export const SaveWorkflowRequest = v.object({
  name: v.pipe(v.string(), v.minLength(1), v.maxLength(200), v.description('1 to 200 characters.')),
  graph: SavedGraph,
});

export type WorkflowSummaryBody = v.InferOutput<typeof WorkflowSummary>;
export type WorkflowBody = v.InferOutput<typeof Workflow>;
export type WorkflowRunBody = v.InferOutput<typeof WorkflowRun>;
export type WorkflowRunResultBody = v.InferOutput<typeof WorkflowRunResult>;
export type WorkflowRunSummaryBody = v.InferOutput<typeof WorkflowRunSummary>;

registerSchemas({
  Workflow, SaveWorkflowRequest, WorkflowGraph: Graph, WorkflowNode: Node, WorkflowTextNode: TextNode, WorkflowImageNode: ImageNode,
  WorkflowPromptNode: PromptNode, WorkflowOutputNode: OutputNode, WorkflowOutputResult: OutputResult, WorkflowEdge: Edge,
});
registerSchemas({ WorkflowSummary, WorkflowList, RunRequest, RunAccepted, WorkflowRun, WorkflowRunResult, WorkflowRunSummary, WorkflowRunList, WorkflowRunGraph });
