// Validating and pricing a generation request, before anything is written: prepareGeneration
// checks a POST's body (REST, MCP) against every rule of a generation request (docs/api.md) and
// prices it at the catalog's cached entry; priceRequest is the one pricing function, for a POST
// and for a run output alike.

import { traceparentOf } from '../telemetry/tracing.ts';
import { isIP } from 'node:net';
import * as v from 'valibot';
import { cachedEntries, catalogEntry, fallbackChain, type CatalogModel } from '../billing/catalog.ts';
import type { Context } from '../context.ts';
import { errors } from '../errors.ts';
import type { Idempotency } from '../idempotency.ts';
import { isPublicAddress } from '../internal/address.ts';
import { decodeDataUri, DEFAULT_MAX_IMAGE_BYTES, InputError, sniffImage } from '../providers/inputs.ts';
import { maxTokensFor, reserveMicros, type StoredRequest, type TargetLanguage, type TextInput } from '../providers/index.ts';
import { issueMessage } from '../schemas.ts';
import { attributionOf, checkAttribution } from './attribution.ts';
import { GenerationRequest } from './schemas.ts';

/** A request validated and priced: what creating the generation takes. */
export interface PreparedGeneration {
  type: 'image' | 'code';
  modelId: string;
  /** Catalog row version the price was computed from (checked again in SQL). */
  modelVersion: string;
  request: StoredRequest;
  reserveMicros: number;
  /** The request's Idempotency-Key and fingerprint, when it came with one. */
  idempotency?: Idempotency | null;
}

const MEDIA_OK = /^image\/[a-z0-9.+-]+$/i;

async function checkImageInput(input: { url: string; mediaType?: string }, i: number): Promise<void> {
  try {
    if (/^data:/i.test(input.url)) {
      const decoded = decodeDataUri(input.url, DEFAULT_MAX_IMAGE_BYTES, input.mediaType ?? 'image/png');
      if (!MEDIA_OK.test(decoded.mediaType)) throw new InputError('the data: URI is not an image');
      await sniffImage(decoded.data);
      return;
    }
    const host = new URL(input.url).hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && !isPublicAddress(host)) throw new InputError('image URL host is not allowed');
    if (/^(localhost|.*\.localhost)$/i.test(host)) throw new InputError('image URL host is not allowed');
  } catch (e) {
    if (e instanceof InputError) throw errors.invalid(`images.${i}.url: ${e.message}`);
    throw errors.invalid(`images.${i}.url: not a usable image`);
  }
}

/** "field: problem" for the first issue (missing fields say "is required": schemas.ts). */
export function validationMessage(issues: readonly v.BaseIssue<unknown>[]): string {
  return issueMessage(issues);
}

/**
 * Validates a request body against every rule of a generation request and prices it. Nothing is written.
 * Throws ApiError invalid_request (400) with a "field: message" text.
 */
export async function prepareGeneration(ctx: Context, input: unknown): Promise<PreparedGeneration> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw errors.invalid('The request body must be a JSON object.');
  // Attribution first: its problems are listed with pointers (`details`), nothing stored or charged.
  checkAttribution(input as Record<string, unknown>);
  const parsed = v.safeParse(GenerationRequest, input);
  if (!parsed.success) throw errors.invalid(validationMessage(parsed.issues));
  const body = parsed.output;
  const modelId = body.model ?? (body.type === 'image' ? ctx.config.defaultImageModel : ctx.config.defaultCodeModel);
  const entry = await catalogEntry(ctx, modelId);
  if (!entry) {
    throw errors.invalid(body.model === undefined ? `the default ${body.type} model is not available` : `model: "${modelId}" is not in the catalog`);
  }
  const { model } = entry;
  const wantsImage = body.type === 'image';
  if (wantsImage !== (model.category === 'image')) {
    throw errors.invalid(`model: "${model.id}" is ${model.category === 'image' ? 'an image' : `a ${model.category}`} model and cannot produce ${body.type} output`);
  }
  const images = body.images ?? [];
  if (images.length && !model.supports_image_input) {
    throw errors.invalid(`images: model "${model.id}" does not accept image inputs`);
  }
  let targetLanguage: TargetLanguage = body.targetLanguage ?? (model.category === 'svg' ? 'svg' : 'text');
  if (model.category === 'svg' && targetLanguage !== 'svg' && !body.screenHtml) {
    throw errors.invalid(`targetLanguage: model "${model.id}" produces SVG only; use "svg" or omit it`);
  }
  await Promise.all(images.map((img, i) => checkImageInput(img, i)));

  const textInputs: TextInput[] = (body.textInputs ?? []).map((t) => ({
    content: t.content,
    ...(t.label !== undefined ? { label: t.label } : {}),
    ...(t.language !== undefined ? { language: t.language } : {}),
  }));
  const screenHtml = body.screenHtml ?? false;
  const maxTokens = maxTokensFor(model);
  const request: StoredRequest = {
    type: body.type,
    prompt: body.prompt,
    images: images.map((img) => ({ url: img.url, mediaType: img.mediaType ?? 'image/png' })),
    textInputs,
    aspectRatio: body.aspectRatio ?? '1:1',
    targetLanguage,
    screenHtml,
    maxTokens,
    model,
    ...attributionOf(body),
  };
  const traceparent = traceparentOf(ctx.span);
  if (traceparent) request.traceparent = traceparent;
  if (model.fallbacks?.length) {
    // From the cache only (it holds every enabled entry): a disabled or unknown fallback id must
    // not cost each POST a lookup. A fallback enabled less than the cache's TTL ago joins later.
    const entries = await cachedEntries(ctx);
    const chain = fallbackChain(model, model.fallbacks.map((id) => entries.get(id)?.model), images.length);
    if (chain.length) request.fallbacks = chain;
  }
  let reserve: number;
  try {
    reserve = priceRequest(request);
  } catch {
    throw errors.invalid(`model: "${model.id}" has no usable price`);
  }
  return { type: body.type, modelId: model.id, modelVersion: entry.version, request, reserveMicros: reserve };
}

/**
 * The worst-case cost of executing a request: what is reserved before the provider is called
 * (a POST at creation, a run output when its inputs are known). The one pricing function.
 */
export function priceRequest(req: StoredRequest): number {
  let worst = priceWith(req, req.model, req.maxTokens);
  for (const m of req.fallbacks ?? []) worst = Math.max(worst, priceWith(req, m, maxTokensFor(m)));
  return worst;
}

function priceWith(req: StoredRequest, model: CatalogModel, maxTokens: number): number {
  if (req.type === 'image') return reserveMicros(model, { type: 'image' });
  return reserveMicros(model, {
    type: 'code', prompt: req.prompt, targetLanguage: req.targetLanguage, screenHtml: req.screenHtml,
    textInputs: req.textInputs, imageCount: req.images.length, maxTokens,
  });
}
