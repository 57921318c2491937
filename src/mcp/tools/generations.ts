// generate_image, generate_code and get_generation: the REST generation service with origin 'mcp',
// billed to the identity's scope (personal budget or its Team workspace, re-checked on every call).
import * as v from 'valibot';
import type { Context } from '../../context.ts';
import { GenerationAccepted, GenerationRequest, GenerationStatus, type GenerationStatusBody } from '../../generations/schemas.ts';
import { getGeneration, startGeneration } from '../../generations/service.ts';
import { idempotencyOf } from '../../http/idempotency.ts';
import { Uuid } from '../../http/schemas.ts';
import type { ToolDef } from '../tools.ts';
import { defineTool, IdempotencyKeyArg, READ_ONLY } from './common.ts';

const ImageArgs = v.object({ ...v.omit(GenerationRequest, ['type', 'targetLanguage', 'screenHtml']).entries, idempotencyKey: IdempotencyKeyArg });
const CodeArgs = v.object({ ...v.omit(GenerationRequest, ['type', 'aspectRatio']).entries, idempotencyKey: IdempotencyKeyArg });

// Starting a job spends budget and reaches the model provider (possibly a third-party API); it
// changes nothing that exists, and a repeat without an idempotencyKey starts (and bills) a second job.
const SPENDS = { readOnlyHint: false, destructiveHint: false, openWorldHint: true, idempotentHint: false } as const;

function startTool(ctx: Context, type: 'image' | 'code', def: { name: string; title: string; description: string; input: v.GenericSchema }): ToolDef {
  return defineTool(ctx, {
    ...def,
    output: GenerationAccepted,
    annotations: SPENDS,
    // Starts are bounded by the budget and the plan's parallel slots, as on REST.
    bucket: null,
    async handler(caller, args: Record<string, unknown>) {
      // The fingerprint is the REST body's: the same request over REST and MCP replays.
      const { idempotencyKey, ...rest } = args;
      const request = { ...rest, type };
      const started = await startGeneration(ctx, caller, request, idempotencyOf(typeof idempotencyKey === 'string' ? idempotencyKey : null, request));
      const accepted = started.body;
      return {
        structuredContent: accepted,
        text: started.replayed
          ? `Generation ${accepted.id} was already started with this idempotencyKey; nothing new was started. Poll get_generation with this id.`
          : `Started ${type} generation ${accepted.id} (pending). Poll get_generation with this id until it is completed or failed.`,
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
      'Poll get_generation for the signed image URL.',
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
      'Returns a pending generation id at once; poll get_generation for the output and its cost.',
    input: CodeArgs,
  });
}

const GetArgs = v.object({ id: v.pipe(Uuid, v.description('Generation id returned by generate_image or generate_code.')) });

export function getGenerationTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'get_generation',
    title: 'Get a generation',
    description:
      'Read a generation\'s status (pending, processing, completed, failed), its completed output (signed image URL, or code and any parsed structuredOutput), ' +
      'its billed cost in microdollars, or its failure message. Poll until completed or failed.',
    input: GetArgs,
    output: GenerationStatus,
    annotations: READ_ONLY,
    bucket: 'read',
    // The account's own MCP and REST jobs (never app or workflow internals).
    async handler(caller, args: v.InferOutput<typeof GetArgs>) {
      const g = await getGeneration(ctx, caller, args.id);
      return { structuredContent: g, text: generationText(g) };
    },
  });
}

function generationText(g: GenerationStatusBody): string {
  if (g.status === 'failed') return `Generation ${g.id} failed: ${g.error}`;
  if (g.status !== 'completed' || !g.result) return `Generation ${g.id} is ${g.status}; poll again shortly.`;
  const cost = `cost ${g.result.costMicros} microdollars`;
  if (g.result.type === 'image') return `Generation ${g.id} completed (${cost}). Image (signed, expiring URL): ${g.result.url}`;
  const code = g.result.code ?? '';
  return `Generation ${g.id} completed (${cost}), ${code.length} characters:\n${code.length > 4000 ? `${code.slice(0, 4000)}\n… (truncated; the full text is in structuredContent.result.code)` : code}`;
}
