// generate_image, generate_code and get_generation: the REST generation service with origin 'mcp',
// billed to the identity's scope (personal budget or its Team workspace, re-checked on every call).
import * as v from 'valibot';
import type { Context } from '../../context.ts';
import { GenerationAccepted, GenerationRequest, GenerationStatus, type GenerationStatusBody } from '../../generations/schemas.ts';
import { startGeneration } from '../../generations/create.ts';
import { cancelGeneration, getGeneration, readGeneration, renderGeneration } from '../../generations/service.ts';
import { parseAttributionFilter } from '../../generations/attribution.ts';
import { DEFAULT_LIST_LIMIT, GenerationList, listGenerationsOf, parseListQuery, STATUSES, TYPES } from '../../generations/list.ts';
import { idempotencyOf } from '../../idempotency.ts';
import { Uuid } from '../../schemas.ts';
import { pendingRow, reportProgress, waitForGeneration } from '../../live/generations.ts';
import { hubOf, keyOf } from '../../live/hub.ts';
import { WaitSeconds } from '../../live/schemas.ts';
import type { Caller } from '../../auth/access.ts';
import { errors } from '../../errors.ts';
import type { ToolDef } from '../tool-server.ts';
import { CANCELS, defineTool, IdempotencyKeyArg, READ_ONLY } from './common.ts';

const ImageArgs = v.object({ ...v.omit(GenerationRequest, ['type', 'targetLanguage', 'screenHtml']).entries, waitSeconds: v.optional(WaitSeconds), idempotencyKey: IdempotencyKeyArg });
const CodeArgs = v.object({ ...v.omit(GenerationRequest, ['type', 'aspectRatio']).entries, waitSeconds: v.optional(WaitSeconds), idempotencyKey: IdempotencyKeyArg });

// Starting a job spends budget and reaches the model provider (possibly a third-party API); it
// changes nothing that exists, and a repeat without an idempotencyKey starts (and bills) a second job.
const SPENDS = { readOnlyHint: false, destructiveHint: false, openWorldHint: true, idempotentHint: false } as const;

function startTool(ctx: Context, type: 'image' | 'code', def: { name: string; title: string; description: string; input: v.GenericSchema }): ToolDef {
  return defineTool(ctx, {
    ...def,
    // With waitSeconds, a job that settles in time is answered with its status (get_generation's shape).
    output: v.union([GenerationAccepted, GenerationStatus]),
    annotations: SPENDS,
    // Starts are bounded by the budget and the plan's parallel slots, as on REST.
    bucket: null,
    async handler(caller, args: Record<string, unknown>, ctx, t) {
      // The fingerprint is the REST body's: the same request over REST and MCP replays.
      const { waitSeconds, idempotencyKey, ...rest } = args;
      const request = { ...rest, type };
      const mark = hubOf(ctx).mark();
      const started = await startGeneration(ctx, caller, request, idempotencyOf(typeof idempotencyKey === 'string' ? idempotencyKey : null, request));
      const accepted = started.body;
      if (typeof waitSeconds === 'number' && waitSeconds > 0) {
        // With a progressToken, what the model writes meanwhile goes out as progress.
        const stop = t.progress ? reportProgress(ctx, keyOf('generation', accepted.id), t.progress) : null;
        const { state, done } = await waitForGeneration(ctx, caller, accepted.id, { mark, first: pendingRow(accepted.id, type), seconds: waitSeconds })
          .finally(() => stop?.());
        if (done && state) {
          const g = await renderGeneration(ctx, state);
          return { structuredContent: g, text: generationText(g) };
        }
      }
      return {
        structuredContent: accepted,
        text: started.replayed
          ? `Generation ${accepted.id} was already started with this idempotencyKey; nothing new was started. Poll get_generation with this id.`
          : `Started ${type} generation ${accepted.id} (pending). Poll get_generation with this id (waitSeconds lets it wait) until it is completed or failed.`,
      };
    },
  });
}

export function generateImageTool(ctx: Context): ToolDef {
  return startTool(ctx, 'image', {
    name: 'generate_image',
    title: 'Generate an image',
    description:
      'Start an image generation job from a prompt (optionally with reference images and text inputs, an aspect ratio and a model from list_models). ' +
      'Returns a pending generation id at once; the worst-case cost is reserved from the budget and the actual cost settled on completion. ' +
      'Poll get_generation for the signed image URL, or pass waitSeconds (up to 50) to get the completed generation in this call when it finishes in time.',
    input: ImageArgs,
  });
}

export function generateCodeTool(ctx: Context): ToolDef {
  return startTool(ctx, 'code', {
    name: 'generate_code',
    title: 'Generate code',
    description:
      'Start a code generation job: code (tsx, jsx, typescript, javascript, css), markup (markdown, mdx), SVG, JSON, plain text, ' +
      'a full HTML screen (screenHtml: true) or a GLSL fragment shader (targetLanguage "glsl", Shadertoy mainImage with 3–5 annotated uniforms). ' +
      'Returns a pending generation id at once; poll get_generation for the output and its cost, or pass waitSeconds (up to 50) to get the completed generation in this call when it finishes in time.',
    input: CodeArgs,
  });
}

const GetArgs = v.object({ id: v.pipe(Uuid, v.description('Generation id returned by generate_image or generate_code.')), waitSeconds: v.optional(WaitSeconds) });

export function getGenerationTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'get_generation',
    title: 'Get a generation',
    description:
      'Read a generation\'s status (pending, processing, completed, failed), its completed output (signed image URL, or code and any parsed structuredOutput), ' +
      'its billed cost in microdollars, or its failure message. Poll until completed or failed, or pass waitSeconds (up to 50) to wait for that in one call.',
    input: GetArgs,
    output: GenerationStatus,
    annotations: READ_ONLY,
    bucket: 'read',
    // The account's own MCP and REST jobs (never app or workflow internals).
    async handler(caller, args: v.InferOutput<typeof GetArgs>, ctx, t) {
      const g = args.waitSeconds ? await waitedGeneration(ctx, caller, args.id, args.waitSeconds, t.progress) : await getGeneration(ctx, caller, args.id);
      return { structuredContent: g, text: generationText(g) };
    },
  });
}

const ListArgs = v.object({
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100), v.description(`Page size, 1 to 100. Default ${DEFAULT_LIST_LIMIT}.`))),
  cursor: v.optional(v.pipe(v.string(), v.description('`nextCursor` of the previous page, passed back unchanged.'))),
  status: v.optional(v.pipe(v.array(v.picklist(STATUSES)), v.minLength(1), v.description('Only generations in one of these statuses.'))),
  type: v.optional(v.pipe(v.picklist(TYPES), v.description('Only image or only code generations.'))),
  model: v.optional(v.pipe(v.string(), v.description('Only generations requested with this model id (from list_models).'))),
  since: v.optional(v.pipe(v.string(), v.description('Only generations created at or after this time: an RFC 3339 date-time (2026-11-01T00:00:00Z) or a UTC date (2026-11-01).'))),
  endUser: v.optional(v.pipe(v.string(), v.description('Only generations started for this endUser.'))),
  metadata: v.optional(v.pipe(v.record(v.string(), v.string()), v.description('Only generations whose metadata has every one of these pairs.'))),
});

export function listGenerationsTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'list_generations',
    title: 'List generations',
    description:
      'List the generations you started over MCP (generate_image, generate_code), newest first, each exactly as get_generation returns it: ' +
      'status, output (signed image URL, or code), cost in microdollars or failure message. Filter by status, type, model, creation time, endUser or metadata pairs; ' +
      'page with limit and the returned nextCursor (no gaps or repeats while new jobs arrive). The GET /generations twin lists the REST API\'s jobs.',
    input: ListArgs,
    output: GenerationList,
    annotations: READ_ONLY,
    bucket: 'read',
    async handler(caller, args: v.InferOutput<typeof ListArgs>, ctx) {
      // The REST query's own checks (cursor signature, model id, since), on the same strings.
      const q = await parseListQuery(ctx, {
        limit: args.limit === undefined ? undefined : String(args.limit),
        cursor: args.cursor,
        status: args.status?.join(','),
        type: args.type,
        model: args.model,
        since: args.since,
      }, parseAttributionFilter(new URLSearchParams([
        ...(args.endUser !== undefined ? [['endUser', args.endUser]] : []),
        ...Object.entries(args.metadata ?? {}).map(([k, val]) => [`metadata[${k}]`, val]),
      ])));
      const page = await listGenerationsOf(ctx, caller, q);
      const lines = page.data.map((g) => `${g.id} ${g.result?.type ?? ''} ${g.status}${g.result ? ` (${g.result.costMicros} microdollars)` : ''}`.replace(/  +/g, ' '));
      const text = page.data.length
        ? `${page.data.length} generation${page.data.length === 1 ? '' : 's'}, newest first:\n${lines.join('\n')}` +
          (page.nextCursor ? '\nMore: call again with cursor = nextCursor.' : '')
        : 'No generations on this page.';
      return { structuredContent: page, text };
    },
  });
}

const CancelArgs = v.object({ id: v.pipe(Uuid, v.description('Generation id returned by generate_image or generate_code.')) });

export function cancelGenerationTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'cancel_generation',
    title: 'Cancel a generation',
    description:
      'Cancel a pending or processing generation (POST /generations/{id}/cancel): it ends failed with error "canceled", its reserved cost is released ' +
      '(nothing is charged) and a provider call in progress is aborted. A generation that already completed or failed cannot be canceled (a conflict error).',
    input: CancelArgs,
    output: GenerationStatus,
    annotations: CANCELS,
    bucket: 'read',
    async handler(caller, args: v.InferOutput<typeof CancelArgs>, ctx) {
      const g = await cancelGeneration(ctx, caller, args.id);
      return { structuredContent: g, text: `Generation ${g.id} was canceled; nothing was charged.` };
    },
  });
}

/** get_generation with waitSeconds: read, then wait for completed or failed (the tool's bucket was drawn on once). */
async function waitedGeneration(ctx: Context, caller: Caller, id: string, seconds: number, progress?: (p: number, m?: string) => void): Promise<GenerationStatusBody> {
  const mark = hubOf(ctx).mark();
  let first;
  try {
    first = await readGeneration(ctx, caller, id);
  } catch {
    throw errors.unavailable();
  }
  if (!first) throw errors.notFound('Generation');
  const stop = progress ? reportProgress(ctx, keyOf('generation', id.toLowerCase()), progress) : null;
  const { state } = await waitForGeneration(ctx, caller, id, { mark, first, seconds }).finally(() => stop?.());
  return renderGeneration(ctx, state ?? first);
}

function generationText(g: GenerationStatusBody): string {
  if (g.status === 'failed') return `Generation ${g.id} failed: ${g.error}`;
  if (g.status !== 'completed' || !g.result) return `Generation ${g.id} is ${g.status}; poll again shortly.`;
  const cost = `cost ${g.result.costMicros} microdollars`;
  if (g.result.type === 'image' && g.result.expiredAt) return `Generation ${g.id} completed (${cost}). Its image expired on ${g.result.expiredAt} and was removed (retention).`;
  if (g.result.type === 'image') return `Generation ${g.id} completed (${cost}). Image (signed, expiring URL): ${g.result.url}`;
  const code = g.result.code ?? '';
  return `Generation ${g.id} completed (${cost}), ${code.length} characters:\n${code.length > 4000 ? `${code.slice(0, 4000)}\n… (truncated; the full text is in structuredContent.result.code)` : code}`;
}
