// One execution of a stored generation request: resolve image inputs, call the provider chosen by
// the catalog entry, and price the output. Used by the generation__run task (and by workflow nodes).

import type { Context } from '../context.ts';
import { validateGlsl } from '../providers/glsl.ts';
import { InputError, resolveImageInputs } from '../providers/inputs.ts';
import {
  acceptsImageUrls,
  actualMicros,
  billedByTime,
  maxSecondsFor,
  generateCode,
  getProvider,
  outputKind,
  ProviderError,
  structuredOutput,
  type ImageOutput,
  type Provider,
} from '../providers/index.ts';
import type { ImageFormat } from '../storage/store.ts';
import type { StoredRequest } from './service.ts';

export type ExecutionOutput =
  | { type: 'image'; image: ImageOutput; format: ImageFormat; costMicros: number; providerRequestId: string | null }
  | { type: 'code'; code: string; structuredOutput: unknown; costMicros: number; providerRequestId: string | null };

const providers = new Map<string, Provider>();

/** The adapter for a catalog entry, with the operator's timeout and retry settings. */
export function providerFor(ctx: Context, name: string): Provider {
  if (name === 'local') return getProvider(name);
  const key = `${name}:${ctx.config.providerTimeoutMs}:${ctx.config.providerAttempts}`;
  let p = providers.get(key);
  if (!p) {
    p = getProvider(name, { timeoutMs: ctx.config.providerTimeoutMs, maxAttempts: ctx.config.providerAttempts });
    providers.set(key, p);
  }
  return p;
}

const FORMATS: Record<string, ImageFormat> = {
  'image/png': 'png', 'image/jpeg': 'jpeg', 'image/webp': 'webp', 'image/avif': 'avif', 'image/gif': 'gif',
};

/**
 * Runs the request once. Throws ProviderError (retryable or not) or InputError (never retryable);
 * the cost is never above `reservedMicros`.
 */
export async function executeRequest(ctx: Context, req: StoredRequest, opts: { signal: AbortSignal; reservedMicros: number }): Promise<ExecutionOutput> {
  const { model, type } = req;
  const provider = providerFor(ctx, model.provider);
  const images = await resolveImageInputs(req.images, { passUrls: acceptsImageUrls(model, type), signal: opts.signal });

  if (type === 'image') {
    const image = await provider.generateImage({
      model, prompt: req.prompt, aspectRatio: req.aspectRatio, images, textInputs: req.textInputs, signal: opts.signal,
    });
    const format = FORMATS[image.mediaType] ?? 'png';
    return {
      type: 'image',
      image,
      format,
      costMicros: actualMicros(model, billedByTime(model) ? { seconds: image.billedSeconds ?? maxSecondsFor(model) } : { images: 1 }, opts.reservedMicros),
      providerRequestId: image.providerRequestId ?? null,
    };
  }

  const textReq = {
    model, prompt: req.prompt, targetLanguage: req.targetLanguage, screenHtml: req.screenHtml,
    images, textInputs: req.textInputs, maxTokens: req.maxTokens, signal: opts.signal,
  };
  const out = await generateCode(provider, textReq);
  let structured: unknown = null;
  if (outputKind(textReq) === 'glsl') {
    const check = validateGlsl(out.text);
    structured = check.ok ? { uniforms: check.uniforms } : null;
  } else {
    structured = structuredOutput(out.text);
  }
  return {
    type: 'code',
    code: out.text,
    structuredOutput: structured,
    costMicros: actualMicros(model, out.usage, opts.reservedMicros),
    providerRequestId: out.providerRequestId ?? null,
  };
}

/** Whether a failed execution may be retried, and the client-safe message it ends with. */
export function classifyFailure(err: unknown, signals: { deadline: AbortSignal; shutdown: AbortSignal }): { retry: boolean; message: string } {
  if (signals.shutdown.aborted) return { retry: true, message: 'the worker shut down during the generation' };
  if (signals.deadline.aborted) return { retry: true, message: 'the generation timed out' };
  if (err instanceof InputError) return { retry: false, message: err.message };
  if (err instanceof ProviderError) return { retry: err.retryable, message: err.message };
  return { retry: true, message: 'internal error' };
}
