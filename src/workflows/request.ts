// Builds the generation request a run output executes: its prompt node's settings plus the values
// of the nodes feeding it (text → textInputs, images → images, store images read as bytes).

import { fallbackChain } from '../billing/catalog.ts';
import type { Context } from '../context.ts';
import { InputError } from '../providers/inputs.ts';
import { maxTokensFor, type StoredRequest, type TextInput } from '../providers/index.ts';
import { getObject } from '../storage/store.ts';
import { classifyImage } from './images.ts';
import type { UnitSpec } from './plan.ts';

/** Results of completed upstream outputs, by output node id (kiln.start_generation `upstream`). */
export type Upstream = Record<string, { type: string; path?: string; mediaType?: string; code?: string } | null>;

/** A store image as a data: URI, so the shared executor treats it like any inline image. */
async function storeImage(ctx: Context, path: string, label: string): Promise<{ url: string; mediaType: string }> {
  const obj = await getObject(ctx, path);
  if (!obj) throw new InputError(`input "${label}": the image was not found in the store`);
  return { url: `data:${obj.contentType};base64,${obj.data.toString('base64')}`, mediaType: obj.contentType };
}

async function imageInput(ctx: Context, accountId: string, url: string, mediaType: string | undefined, label: string) {
  const ref = classifyImage(ctx.config.publicUrl, accountId, url);
  if (ref.kind === 'invalid') throw new InputError(`input "${label}": ${ref.problem}`);
  if (ref.kind === 'store') return storeImage(ctx, ref.path, label);
  return { url: ref.url, mediaType: mediaType ?? 'image/png' };
}

export async function buildRequest(ctx: Context, accountId: string, spec: UnitSpec, upstream: Upstream): Promise<StoredRequest> {
  const model = spec.model;
  if (!model) throw new InputError(`prompt "${spec.promptNodeId}" has no model`);
  const images: Array<Promise<{ url: string; mediaType: string }>> = [];
  const textInputs: TextInput[] = [];
  for (const input of spec.inputs) {
    if (input.kind === 'text') {
      textInputs.push({ content: input.content, label: input.label, ...(input.language ? { language: input.language } : {}) });
    } else if (input.kind === 'image') {
      images.push(imageInput(ctx, accountId, input.url, input.mediaType, input.label));
    } else {
      const value = upstream[input.from];
      if (!value) continue; // nothing to pass on (cannot happen for a completed upstream)
      if (value.type === 'image' && value.path) images.push(storeImage(ctx, value.path, input.label));
      else if (value.code !== undefined) {
        textInputs.push({ content: value.code, label: input.label, ...(input.language ? { language: input.language } : {}) });
      }
    }
  }
  const resolved = await Promise.all(images);
  const fallbacks = spec.fallbacks?.length ? fallbackChain(model, spec.fallbacks, resolved.length) : [];
  return {
    type: spec.type === 'image' ? 'image' : 'code',
    prompt: spec.prompt,
    images: resolved,
    textInputs,
    aspectRatio: spec.aspectRatio,
    targetLanguage: spec.targetLanguage,
    screenHtml: spec.screenHtml,
    maxTokens: maxTokensFor(model),
    model,
    ...(fallbacks.length ? { fallbacks } : {}),
  };
}
