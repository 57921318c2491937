// Entry point of the provider layer: adapter lookup by catalog `provider` name, code generation
// that applies the GLSL rules, and the pricing helpers used to reserve and settle charges.

import type { CatalogModel } from '../billing/catalog.ts';
import { generateGlsl } from './glsl.ts';
import { localProvider } from './local.ts';
import { createAnthropicProvider } from './anthropic.ts';
import { createGeminiProvider } from './gemini.ts';
import { createOpenAIProvider } from './openai.ts';
import { createFalProvider } from './fal.ts';
import { createReplicateProvider } from './replicate.ts';
import { outputKind, ProviderError, upstreamSetting, type Provider, type TextOutput, type TextRequest } from './types.ts';
import type { AdapterOptions } from './upstream.ts';

export * from './types.ts';
export { actualMicros, billedByTime, inputTokenBound, maxSecondsFor, maxTokensFor, reserveMicros, IMAGE_INPUT_TOKENS } from './costs.ts';
export type { ChargeUsage, CostRequest } from './costs.ts';
export { createOpenAIProvider } from './openai.ts';
export type { AdapterOptions } from './upstream.ts';
export { localProvider } from './local.ts';
export { stripCodeFences } from './fences.ts';

/**
 * The network adapters by catalog `provider` name. Each factory returns an adapter with the given
 * timeouts and retries; `local` needs none.
 */
const adapters: Record<string, (options?: AdapterOptions) => Provider> = {
  openai: createOpenAIProvider,
  anthropic: createAnthropicProvider,
  gemini: createGeminiProvider,
  fal: createFalProvider,
  replicate: createReplicateProvider,
};

export const PROVIDER_NAMES = ['local', ...Object.keys(adapters)] as const;

const cache = new Map<string, Provider>();

/**
 * The adapter for a catalog entry's `provider`. Pass options to get a fresh instance with
 * non-default timeouts/retries (the cached default uses 120 s per attempt, 3 attempts).
 */
export function getProvider(name: string, options?: AdapterOptions): Provider {
  if (name === 'local') return localProvider;
  const make = Object.prototype.hasOwnProperty.call(adapters, name) ? adapters[name] : undefined;
  if (!make) throw new ProviderError('model is not available', { code: 'config', retryable: false });
  if (options) return make(options);
  let p = cache.get(name);
  if (!p) cache.set(name, (p = make()));
  return p;
}

/**
 * Whether https image inputs may be handed to the upstream as URLs (see inputs.ts `passUrls`)
 * instead of being downloaded by us. Opt-in per model via `upstream.acceptImageUrls: true`,
 * because many OpenAI-compatible servers only take inline data (Anthropic takes `url` sources).
 */
export function acceptsImageUrls(model: CatalogModel, type: 'image' | 'code'): boolean {
  return (model.provider === 'openai' || model.provider === 'anthropic') && type === 'code' && upstreamSetting(model, 'acceptImageUrls') === true;
}

/** generateText plus the output-kind rules that need a check (GLSL: validate, repair once). */
export async function generateCode(provider: Provider, req: TextRequest): Promise<TextOutput> {
  const out = await (outputKind(req) === 'glsl' ? generateGlsl(provider, req) : provider.generateText(req));
  // Adapters refuse an empty answer, but one that was only a code fence ("```tsx\n```") is empty
  // once the fences are stripped: never deliver (and charge for) nothing, whatever the adapter.
  if (out.text.trim() === '') throw new ProviderError('upstream model returned no content', { code: 'rejected', retryable: false, usage: out.usage });
  return out;
}

/** CodeResult.structuredOutput: the parsed value when the text is JSON, else null. */
export function structuredOutput(text: string): unknown {
  const t = text.trim();
  if (!/^[[{]/.test(t)) return null;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return null;
  }
}
