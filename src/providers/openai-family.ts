// Which dialect of the OpenAI protocol a catalog entry speaks: OpenAI's own model families take
// different parameters (gpt-image has no response_format, reasoning models take
// max_completion_tokens, …) than "compatible" servers. Pure rules, shared by the adapter and by
// `kiln model upsert`'s entry validation, so a bad entry is refused before it is ever called.

import { ASPECT_RATIOS, type AspectRatio } from './types.ts';

export const OPENAI_FAMILIES = ['compatible', 'chat', 'reasoning', 'gpt-image', 'dall-e-2', 'dall-e-3'] as const;
export type OpenAIFamily = (typeof OPENAI_FAMILIES)[number];

const IMAGE_FAMILIES: readonly OpenAIFamily[] = ['gpt-image', 'dall-e-2', 'dall-e-3'];
const TEXT_FAMILIES: readonly OpenAIFamily[] = ['chat', 'reasoning'];

export const OPENAI_HOST = 'api.openai.com';

/** The part of a catalog entry the rules look at (a CatalogModel or a parsed entry file). */
export interface FamilyEntry {
  id: string;
  category: string;
  supports_image_input?: boolean;
  upstream?: { baseUrl?: string; model?: string; [k: string]: unknown } | null;
}

export function upstreamModelName(entry: FamilyEntry): string {
  return entry.upstream?.model ?? entry.id;
}

function onOpenAI(entry: FamilyEntry): boolean {
  try {
    return new URL(entry.upstream?.baseUrl ?? `https://${OPENAI_HOST}/v1`).hostname === OPENAI_HOST;
  } catch {
    return false;
  }
}

/**
 * By OpenAI's bare model names (a vendor-prefixed name such as OpenRouter's `openai/gpt-5` is a
 * router's, which takes the compatible dialect). `upstream.family` overrides.
 */
function familyByName(name: string): OpenAIFamily | null {
  const n = name.toLowerCase();
  if (/^(gpt-image-|chatgpt-image)/.test(n)) return 'gpt-image';
  if (n === 'dall-e-2' || n === 'dall-e-3') return n;
  // Reasoning models: the o-series, codex-mini and the gpt-5 family except its -chat variants.
  if (/^(o[1-9](-|$)|codex-mini|gpt-5)/.test(n) && !n.includes('-chat')) return 'reasoning';
  if (/^(gpt-4|gpt-3\.5|chatgpt-|gpt-5)/.test(n)) return 'chat';
  return null;
}

export function openaiFamily(entry: FamilyEntry): OpenAIFamily {
  const explicit = entry.upstream?.family;
  if (typeof explicit === 'string' && (OPENAI_FAMILIES as readonly string[]).includes(explicit)) return explicit as OpenAIFamily;
  const byName = familyByName(upstreamModelName(entry));
  if (byName) return byName;
  // Any other model on OpenAI's own endpoint is a current chat model.
  return entry.category !== 'image' && onOpenAI(entry) ? 'chat' : 'compatible';
}

/** gpt-image's three sizes per ratio; compatible servers are asked for the same. */
const GPT_IMAGE_BY_RATIO: Record<AspectRatio, string> = {
  '1:1': '1024x1024',
  '16:9': '1536x1024', '4:3': '1536x1024', '3:2': '1536x1024',
  '9:16': '1024x1536', '3:4': '1024x1536', '2:3': '1024x1536',
};

/** Documented Images API sizes per family, and the one used for each ratio (then cropped). */
export const FAMILY_SIZES: Record<'gpt-image' | 'dall-e-2' | 'dall-e-3' | 'compatible', { allowed: readonly string[] | null; byRatio: Record<AspectRatio, string> }> = {
  'gpt-image': {
    allowed: null, // 1024x1024, 1536x1024, 1024x1536, auto for gpt-image-1; later models take more
    byRatio: GPT_IMAGE_BY_RATIO,
  },
  'dall-e-3': {
    allowed: ['1024x1024', '1792x1024', '1024x1792'],
    byRatio: {
      '1:1': '1024x1024',
      '16:9': '1792x1024', '4:3': '1792x1024', '3:2': '1792x1024',
      '9:16': '1024x1792', '3:4': '1024x1792', '2:3': '1024x1792',
    },
  },
  'dall-e-2': {
    allowed: ['256x256', '512x512', '1024x1024'],
    byRatio: Object.fromEntries(ASPECT_RATIOS.map((r) => [r, '1024x1024'])) as Record<AspectRatio, string>,
  },
  compatible: { allowed: null, byRatio: GPT_IMAGE_BY_RATIO },
};

/** Longest prompt each OpenAI image family documents (characters). */
export const PROMPT_CHAR_LIMITS: Partial<Record<OpenAIFamily, number>> = { 'gpt-image': 32_000, 'dall-e-3': 4_000, 'dall-e-2': 1_000 };

/** Body fields Kiln itself sets; a catalog entry cannot override them through params. */
const OWNED_CHAT = ['model', 'messages', 'max_tokens', 'max_completion_tokens', 'n', 'stream', 'stream_options'];
const OWNED_IMAGE = ['model', 'prompt', 'n', 'size', 'image', 'image[]', 'mask', 'stream', 'partial_images'];
/** Documented as unsupported by reasoning models (only the default temperature is accepted). */
const NOT_FOR_REASONING = ['temperature', 'top_p'];
/** gpt-image models always answer in base64; style is a dall-e-3 parameter. */
const NOT_FOR_GPT_IMAGE = ['response_format', 'style'];
/** Parameters only the gpt-image models take. */
const GPT_IMAGE_ONLY = ['background', 'moderation', 'output_format', 'output_compression', 'input_fidelity'];

function paramsOf(entry: FamilyEntry, key: 'params' | 'imageParams'): Record<string, unknown> {
  const p = entry.upstream?.[key];
  return p && typeof p === 'object' && !Array.isArray(p) ? (p as Record<string, unknown>) : {};
}

/** `upstream.params` then `upstream.imageParams` (image entries), as merged into the request. */
export function entryParams(entry: FamilyEntry): Record<string, unknown> {
  return entry.category === 'image' ? { ...paramsOf(entry, 'params'), ...paramsOf(entry, 'imageParams') } : paramsOf(entry, 'params');
}

/**
 * What is wrong with an `openai` catalog entry for its family, or null. Checked by
 * `kiln model upsert` and again by the adapter before each call (entries may predate a rule).
 */
export function openaiEntryProblem(entry: FamilyEntry): string | null {
  const explicit = entry.upstream?.family;
  if (explicit !== undefined && !(OPENAI_FAMILIES as readonly unknown[]).includes(explicit)) {
    return `upstream.family must be one of ${OPENAI_FAMILIES.join(', ')}`;
  }
  const family = openaiFamily(entry);
  const image = entry.category === 'image';
  if (image && TEXT_FAMILIES.includes(family)) return `upstream.family ${family} is for text and svg entries`;
  if (!image && IMAGE_FAMILIES.includes(family)) return `upstream.family ${family} is for image entries`;

  const params = entryParams(entry);
  const set = (k: string) => Object.prototype.hasOwnProperty.call(params, k) && params[k] !== null;
  const owned = (image ? OWNED_IMAGE : OWNED_CHAT).find((k) => Object.prototype.hasOwnProperty.call(params, k));
  if (owned) return `upstream params cannot set ${owned} (Kiln sets it${owned === 'size' ? '; use upstream.imageSizes' : ''})`;
  if (family === 'reasoning') {
    const k = NOT_FOR_REASONING.find(set);
    if (k) return `upstream.params.${k} is not supported by reasoning models`;
  }
  if (family === 'chat' && set('reasoning_effort')) return 'upstream.params.reasoning_effort is only for reasoning models';
  if (family === 'gpt-image') {
    const k = NOT_FOR_GPT_IMAGE.find(set);
    if (k) return `upstream params cannot set ${k} for gpt-image models${k === 'response_format' ? ' (they always return base64)' : ''}`;
  }
  if (family === 'dall-e-2' || family === 'dall-e-3') {
    const k = GPT_IMAGE_ONLY.find(set);
    if (k) return `upstream params: ${k} is only for gpt-image models`;
  }
  if (family === 'dall-e-3' && entry.supports_image_input) return 'dall-e-3 takes no reference images (no edits endpoint): set supports_image_input to false';

  const stream = entry.upstream?.stream;
  if (stream !== undefined && typeof stream !== 'boolean') return 'upstream.stream must be true or false';
  const partials = entry.upstream?.partialImages;
  if (partials !== undefined) {
    if (typeof partials !== 'number' || !Number.isInteger(partials) || partials < 0 || partials > 3) return 'upstream.partialImages must be an integer from 0 to 3';
    if (partials > 0 && !image) return 'upstream.partialImages is for image entries';
    if (partials > 0 && family !== 'gpt-image' && family !== 'compatible') return `upstream.partialImages: ${family} models stream no partial images`;
  }

  const sizes = entry.upstream?.imageSizes;
  if (sizes !== undefined) {
    if (!sizes || typeof sizes !== 'object') return 'upstream.imageSizes must map aspect ratios to sizes';
    const allowed = family === 'dall-e-2' || family === 'dall-e-3' ? FAMILY_SIZES[family].allowed : null;
    for (const [ratio, size] of Object.entries(sizes)) {
      if (!(ASPECT_RATIOS as readonly string[]).includes(ratio)) return `upstream.imageSizes: ${ratio} is not an aspect ratio (${ASPECT_RATIOS.join(', ')})`;
      if (typeof size !== 'string' || !/^(auto|\d{2,5}x\d{2,5})$/.test(size)) return `upstream.imageSizes.${ratio} must be WIDTHxHEIGHT or auto`;
      if (allowed && !allowed.includes(size)) return `upstream.imageSizes.${ratio}: ${family} sizes are ${allowed.join(', ')}`;
    }
  }
  return null;
}
