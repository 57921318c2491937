// One execution of a stored generation request: resolve image inputs, call the provider chosen by
// the catalog entry, and price the output. Used by a generation's run (./run.ts), whatever made it.

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
  maxTokensFor,
  type ImageInputData,
  type ImageOutput,
  type OutputSink,
  type Provider,
  type ProviderErrorCode,
  type StoredRequest,
} from '../providers/index.ts';
import type { CatalogModel } from '../billing/catalog.ts';
import { claimUpstream } from '../db/sql/claim_upstream.ts';
import { recordUpstream } from '../db/sql/record_upstream.ts';
import { releaseUpstreamTrial } from '../db/sql/release_upstream_trial.ts';
import { errorFields } from '../log.ts';
import { observeProvider, providerLabel } from '../telemetry/metrics.ts';
import { failSpan, SpanKind, withSpan } from '../telemetry/tracing.ts';
import { underSpan } from '../telemetry/scope.ts';
import type { ImageFormat } from '../storage/store.ts';
import { isStoreError } from '../storage/health.ts';

export type ExecutionOutput = (
  | { type: 'image'; image: ImageOutput; format: ImageFormat; costMicros: number; providerRequestId: string | null }
  | { type: 'code'; code: string; structuredOutput: unknown; costMicros: number; providerRequestId: string | null }
) & {
  /** The catalog entry that produced the output: the requested one or one of its fallbacks. */
  modelId: string;
};

/** Failures that mean the upstream is down or overloaded (after the adapter's retries): the next entry of the chain is tried. */
const UPSTREAM_DOWN = new Set<ProviderErrorCode>(['rate_limited', 'upstream_error', 'timeout', 'network']);
/** Failures that still prove the upstream answered (content errors): they never fall back and count as healthy. */
const UPSTREAM_ANSWERED = new Set<ProviderErrorCode>(['rejected', 'bad_response', 'invalid_output']);

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
 * Runs the request once: the requested entry, then — when its upstream is down after its own
 * retries (429, 5xx, timeout, network) — each fallback in order. An entry whose upstream failed
 * repeatedly is skipped at once while another entry remains (kiln.claim_upstream); the last entry
 * is always tried. Throws ProviderError (retryable or not) or InputError (never retryable); the
 * cost, priced with the entry that produced the output, is never above `reservedMicros`.
 */
export async function executeRequest(ctx: Context, req: StoredRequest, opts: { signal: AbortSignal; reservedMicros: number; sink?: OutputSink }): Promise<ExecutionOutput> {
  const chain = [req.model, ...(req.fallbacks ?? [])];
  const resolved = new Map<boolean, ReturnType<typeof resolveImageInputs>>();
  const imagesFor = (model: CatalogModel) => {
    const passUrls = acceptsImageUrls(model, req.type);
    let p = resolved.get(passUrls);
    if (!p) resolved.set(passUrls, (p = resolveImageInputs(req.images, { passUrls, signal: opts.signal })));
    return p;
  };
  for (let i = 0; ; i++) {
    const model = chain[i]!;
    const last = i === chain.length - 1;
    const watched = model.provider !== 'local';
    let trial = false;
    if (watched && !last) {
      const [{ verdict }] = await claimUpstream(ctx.sql, model.id, Math.ceil(ctx.config.generationTimeoutMs / 1000));
      if (verdict === 'skip') {
        ctx.log.debug('upstream skipped for its fallback', { model: model.id, fallback: chain[i + 1]!.id });
        continue;
      }
      trial = verdict === 'trial';
    }
    let noted = false;
    const note = async (ok: boolean, error: string | null) => {
      noted = true;
      await noteUpstream(ctx, model.id, ok, error);
    };
    try {
      // A fallback's answer starts over: clients drop what the failed entry wrote.
      if (i > 0) opts.sink?.restart();
      const maxTokens = i === 0 ? req.maxTokens : maxTokensFor(model);
      const out = await executeWith(ctx, req, model, await imagesFor(model), maxTokens, opts);
      if (watched) await note(true, null);
      return out;
    } catch (err) {
      if (opts.signal.aborted || !(err instanceof ProviderError)) throw err;
      if (watched && UPSTREAM_DOWN.has(err.code)) await note(false, err.message);
      else if (watched && UPSTREAM_ANSWERED.has(err.code)) await note(true, null);
      if (last || !UPSTREAM_DOWN.has(err.code)) throw err;
      ctx.log.info('upstream failed; trying the fallback', { model: model.id, fallback: chain[i + 1]!.id, error: err.message });
    } finally {
      // A trial that told nothing (canceled, shut down, an input error) must not hold its lease.
      if (trial && !noted) await releaseUpstreamTrial(ctx.sql, model.id).catch((e) => ctx.log.warn('could not release an upstream trial', { model: model.id, ...errorFields(e) }));
    }
  }
}

/** Health bookkeeping never fails a generation: a lost write only delays a skip or a recovery. */
async function noteUpstream(ctx: Context, modelId: string, ok: boolean, error: string | null): Promise<void> {
  try {
    await recordUpstream(ctx.sql, modelId, ok, error, ctx.config.upstreamFailureThreshold, ctx.config.upstreamSkipSeconds);
  } catch (e) {
    ctx.log.warn('could not record upstream health', { model: modelId, ...errorFields(e) });
  }
}

/**
 * One call to the entry's provider, seen from outside: kiln_provider_* metrics and a client span
 * (provider, catalog model, upstream host, outcome; never the prompt or the upstream's answer).
 */
async function executeWith(
  ctx: Context,
  req: StoredRequest,
  model: CatalogModel,
  images: ImageInputData[],
  maxTokens: number,
  opts: { signal: AbortSignal; reservedMicros: number; sink?: OutputSink },
): Promise<ExecutionOutput> {
  const t0 = performance.now();
  const attributes: Record<string, string> = { 'kiln.provider': providerLabel(model.provider), 'kiln.model': model.id };
  const host = upstreamHost(model);
  if (host) attributes['server.address'] = host;
  return withSpan(`provider ${providerLabel(model.provider)}`, { kind: SpanKind.CLIENT, attributes, parent: ctx.span }, async (span) => {
    let outcome = 'ok';
    try {
      return await callProvider(underSpan(ctx, span), req, model, images, maxTokens, opts);
    } catch (e) {
      outcome = opts.signal.aborted ? 'aborted' : e instanceof ProviderError ? e.code : e instanceof InputError ? 'input_error' : 'error';
      if (e instanceof ProviderError || e instanceof InputError) failSpan(span, e, outcome);
      throw e;
    } finally {
      span?.setAttribute('kiln.outcome', outcome);
      observeProvider(model.provider, outcome, (performance.now() - t0) / 1000);
    }
  });
}

/** The upstream's host name, from the catalog entry's base URL (operator data, not a client's). */
function upstreamHost(model: CatalogModel): string | undefined {
  const base = (model.upstream as { baseUrl?: unknown } | null)?.baseUrl;
  if (typeof base !== 'string') return undefined;
  try {
    return new URL(base).hostname;
  } catch {
    return undefined;
  }
}

async function callProvider(
  ctx: Context,
  req: StoredRequest,
  model: CatalogModel,
  images: ImageInputData[],
  maxTokens: number,
  opts: { signal: AbortSignal; reservedMicros: number; sink?: OutputSink },
): Promise<ExecutionOutput> {
  const provider = providerFor(ctx, model.provider);
  if (req.type === 'image') {
    const image = await provider.generateImage({
      model, prompt: req.prompt, aspectRatio: req.aspectRatio, images, textInputs: req.textInputs, signal: opts.signal,
      ...(opts.sink ? { sink: opts.sink } : {}),
    });
    const format = FORMATS[image.mediaType] ?? 'png';
    return {
      type: 'image',
      image,
      format,
      costMicros: actualMicros(model, billedByTime(model) ? { seconds: image.billedSeconds ?? maxSecondsFor(model) } : { images: 1 }, opts.reservedMicros),
      providerRequestId: image.providerRequestId ?? null,
      modelId: model.id,
    };
  }

  const textReq = {
    model, prompt: req.prompt, targetLanguage: req.targetLanguage, screenHtml: req.screenHtml,
    images, textInputs: req.textInputs, maxTokens, signal: opts.signal,
    ...(opts.sink ? { sink: opts.sink } : {}),
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
    modelId: model.id,
  };
}

/**
 * Whether a failed execution may be retried, whether it counts as one of the generation's
 * attempts (not when its worker shut down or lost its lease under it), and the client-safe
 * message it ends with.
 */
export function classifyFailure(err: unknown, signals: { deadline: AbortSignal; shutdown: AbortSignal }): { retry: boolean; counted: boolean; message: string } {
  if (signals.shutdown.aborted) return { retry: true, counted: false, message: 'the worker shut down during the generation' };
  if (signals.deadline.aborted) return { retry: true, counted: true, message: 'the generation timed out' };
  if (err instanceof InputError) return { retry: false, counted: true, message: err.message };
  if (err instanceof ProviderError) return { retry: err.retryable, counted: true, message: err.message };
  // An input image in the object store could not be read (a run output's upstream image): before any provider call.
  if (isStoreError(err)) return { retry: true, counted: true, message: 'the image store was unreachable' };
  return { retry: true, counted: true, message: 'internal error' };
}
