// The `replicate` adapter: Replicate's predictions API for image models. Create a prediction (an
// official model by name, or any model by version; `Prefer: wait` for short ones), poll its
// `urls.get` until it ends, download its output; cancel via `urls.cancel` when abandoned. Models
// billed by run time report the prediction's `metrics.predict_time`. queued.ts runs those steps;
// this file is Replicate's side of each.

import type { CatalogModel } from '../billing/catalog.ts';
import { onOrigin, requestJson } from './http.ts';
import { imagePrompt } from './prompts.ts';
import { createQueuedProvider, lastLogLine, lastPercent, type Progress, type QueuedProtocol } from './queued.ts';
import { ProviderError, upstreamSetting, type AspectRatio, type Provider } from './types.ts';
import { badResponse, dataUrl, misconfigured, type AdapterOptions } from './upstream.ts';

const DEFAULT_BASE_URL = 'https://api.replicate.com/v1';
/** Replicate holds a `Prefer: wait` request open for at most 60 s. */
const MAX_WAIT_SECONDS = 60;

const NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const VERSION = /^[A-Za-z0-9]{1,128}$/;
const PREDICTION_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Which create endpoint: `upstream.version` → POST /predictions with the version (any model);
 * else `upstream.model` `owner/name` → POST /models/{owner}/{name}/predictions (official models);
 * an `owner/name:version` model is called by its version.
 */
function target(model: CatalogModel): { path: string; version: string | null } {
  const u = model.upstream;
  const [name, pinned] = typeof u?.model === 'string' ? u.model.split(':', 2) : [undefined, undefined];
  const version = u?.version ?? pinned ?? null;
  if (version !== null) {
    if (!VERSION.test(version)) throw misconfigured('model is not available (upstream.version must be a version id)');
    return { path: '/predictions', version };
  }
  const parts = name?.split('/') ?? [];
  if (parts.length !== 2 || !parts.every((p) => NAME.test(p))) {
    throw misconfigured('model is not available (upstream.model must look like owner/name)');
  }
  return { path: `/models/${parts[0]}/${parts[1]}/predictions`, version: null };
}

/**
 * Models that take `aspect_ratio` (FLUX, Imagen, …) get the requested ratio; for models that take
 * pixel sizes (SDXL, …) `upstream.imageSizes` maps a ratio to `WxH`, sent as width and height.
 */
function sizeInput(model: CatalogModel, ratio: AspectRatio): Record<string, unknown> {
  const sizes = upstreamSetting(model, 'imageSizes') as Partial<Record<AspectRatio, unknown>> | undefined;
  const configured = sizes?.[ratio];
  const m = typeof configured === 'string' ? /^(\d{2,5})x(\d{2,5})$/.exec(configured) : null;
  return m ? { width: Number(m[1]), height: Number(m[2]) } : { aspect_ratio: ratio };
}

/** `upstream.waitSeconds` (1–60): create with `Prefer: wait=N`, for models that finish in seconds. */
function waitSeconds(model: CatalogModel): number | null {
  const n = upstreamSetting(model, 'waitSeconds');
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? Math.min(n, MAX_WAIT_SECONDS) : null;
}

interface Prediction {
  id?: unknown;
  status?: unknown;
  output?: unknown;
  error?: unknown;
  metrics?: { predict_time?: unknown } | null;
  started_at?: unknown;
  completed_at?: unknown;
  urls?: { get?: unknown; cancel?: unknown } | null;
}

/**
 * Replicate's error codes (E####, see its "Error codes" reference) are the only part of a failed
 * prediction's free-text `error` that is kept. E1000 (unknown) and E6716 (timeout starting) are the
 * documented transient ones; an error that asks to be retried is too. Other failures (bad input,
 * out of memory, the model refusing) fail the same way again.
 */
function failure(p: Prediction): ProviderError {
  const text = typeof p.error === 'string' ? p.error : '';
  const code = /\bE\d{4}\b/.exec(text)?.[0] ?? null;
  const retryable = code === 'E1000' || code === 'E6716' || /\bplease retry\b/i.test(text);
  return new ProviderError(`upstream prediction failed${code ? ` (${code})` : ''}`, { code: retryable ? 'upstream_error' : 'rejected', retryable });
}

/** The first output file: `output` is a URL (or data URL), or an array of them. */
function firstOutput(output: unknown): string | null {
  const first = Array.isArray(output) ? output[0] : output;
  return typeof first === 'string' && first !== '' ? first : null;
}

/** Billed run time: `metrics.predict_time`, else the span from started_at to completed_at. */
function runSeconds(p: Prediction): number | undefined {
  const t = p.metrics?.predict_time;
  if (typeof t === 'number' && Number.isFinite(t) && t >= 0) return t;
  const start = typeof p.started_at === 'string' ? Date.parse(p.started_at) : NaN;
  const end = typeof p.completed_at === 'string' ? Date.parse(p.completed_at) : NaN;
  return Number.isFinite(start) && Number.isFinite(end) && end >= start ? (end - start) / 1000 : undefined;
}

/** Replicate's predictions protocol (the skeleton, with polling and cancelling, is queued.ts). */
const replicate: QueuedProtocol<{ path: string; version: string | null; wait: number | null }> = {
  name: 'replicate',
  defaultBaseUrl: DEFAULT_BASE_URL,
  auth: { header: 'authorization', scheme: 'Bearer' },
  target: (model) => ({ ...target(model), wait: waitSeconds(model) }),
  // A null in `upstream.params` removes one of these (e.g. aspect_ratio).
  input: (req, images) => ({
    prompt: imagePrompt(req.prompt, req.textInputs),
    ...sizeInput(req.model, req.aspectRatio),
    ...(images.length === 1 ? { image: dataUrl(images[0]!) } : {}),
    ...(images.length > 1 ? { input_images: images.map(dataUrl) } : {}),
  }),

  async submit({ base, origin, auth, job, options }, { path, version, wait }, input) {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...auth };
    // The held-open create must end well inside the job (a timed-out create is retried, and
    // a retried create is a second prediction).
    const held = wait === null ? 0 : Math.min(wait, Math.floor((job.remainingMs() - 1500) / 1000));
    if (held >= 1) headers.prefer = `wait=${held}`;
    const created = await requestJson(
      { method: 'POST', url: base + path, headers, body: JSON.stringify(version ? { version, input } : { input }), signal: job.signal },
      options,
    );
    const p = created.json as Prediction | null;
    const id = p?.id;
    if (typeof id !== 'string' || !PREDICTION_ID.test(id)) throw badResponse('upstream provider returned no prediction id');
    // urls.get / urls.cancel are used only on the configured origin: the key never goes elsewhere.
    return {
      id,
      statusUrl: onOrigin(p?.urls?.get, origin) ?? `${base}/predictions/${id}`,
      cancel: { method: 'POST', url: onOrigin(p?.urls?.cancel, origin) ?? `${base}/predictions/${id}/cancel` },
      // The created prediction is its first status.
      status: { answer: p },
    };
  },

  // Sync mode may answer with files while the status is still `processing`; the prediction is
  // only done (and its run time known) once it has succeeded.
  ended(answer, job) {
    const p = answer as Prediction | null;
    const status = p?.status;
    if (status === 'starting' || status === 'processing') return false;
    if (status === 'failed' || status === 'canceled' || status === 'aborted') job.cancelWith(null);
    if (status === 'failed') throw failure(p!);
    // Terminal answers: a new prediction would meet the same end (its deadline, or whoever
    // canceled it), so neither is retried.
    if (status === 'canceled') throw new ProviderError('upstream prediction was canceled', { code: 'upstream_error', retryable: false });
    // `aborted`: its deadline passed in Replicate's queue before it ran (nothing was billed).
    if (status === 'aborted') throw new ProviderError('upstream prediction was aborted before it started', { code: 'upstream_error', retryable: false });
    if (status !== 'succeeded') throw badResponse('upstream provider returned an unknown prediction status');
    // Succeeded (and billed): fetching its output may be retried, a new prediction may not.
    return true;
  },

  progress(answer): Progress | null {
    const p = answer as (Prediction & { logs?: unknown }) | null;
    if (p?.status === 'starting') return { percent: null, message: 'starting' };
    if (p?.status !== 'processing') return null;
    return { percent: lastPercent(p.logs), message: lastLogLine(p.logs) ?? 'processing' };
  },

  async result(_call, answer) {
    const p = answer as Prediction;
    const url = firstOutput(p.output);
    if (url === null) throw badResponse('upstream provider returned no image');
    const billedSeconds = runSeconds(p);
    return { url, extra: billedSeconds === undefined ? {} : { billedSeconds } };
  },
};

export function createReplicateProvider(options: AdapterOptions = {}): Provider {
  return createQueuedProvider(replicate, options);
}
