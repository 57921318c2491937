// What the network adapters (openai, anthropic, gemini, fal, replicate) read alike from a catalog
// entry's `upstream`: where to call, with which key, how `upstream.params` merge into a request,
// how image inputs travel inline, how often a queued job is polled and how its image is fetched.

import { providerKey } from '../config.ts';
import type { CatalogModel } from '../billing/catalog.ts';
import { decodeDataUrl, type RetryOptions, type UpstreamJob } from './http.ts';
import { downloadImage } from './images.ts';
import { InputError } from './inputs.ts';
import { sleep } from './sleep.ts';
import { ProviderError, upstreamSetting, type ImageInputData, type OutputSink } from './types.ts';

/** Settings every network adapter takes: per-attempt timeout, retries, where keys are looked up. */
export interface AdapterOptions extends RetryOptions {
  /** Cap on an image the adapter downloads (a `url` answer, a queued job's result). Default 32 MiB. */
  maxImageBytes?: number;
  /** Where `upstream.apiKeyEnv` is looked up. Default: the environment, through config.ts providerKey. */
  env?: Record<string, string | undefined>;
}

const DEFAULT_POLL_MS = 1000;

/**
 * The adapter's options for one entry: its `upstream.timeoutMs`, when it sets one, in place of
 * KILN_PROVIDER_TIMEOUT_MS (a slow image model beside fast code models, or the reverse).
 */
export function entryOptions<T extends AdapterOptions>(options: T, model: CatalogModel): T {
  const t = model.upstream?.timeoutMs;
  return typeof t === 'number' && t > 0 ? { ...options, timeoutMs: t } : options;
}
const NOTHING: ReadonlySet<string> = new Set();

export const badResponse = (message: string) => new ProviderError(message, { code: 'bad_response', retryable: false });
export const misconfigured = (message: string) => new ProviderError(message, { code: 'config', retryable: false });
export const rejected = (message: string) => new ProviderError(message, { code: 'rejected', retryable: false });

/** `upstream.baseUrl` (else the provider's own) without trailing slashes. */
export function baseUrl(model: CatalogModel, fallback: string): string {
  return (model.upstream?.baseUrl ?? fallback).replace(/\/+$/, '');
}

/** The model name sent upstream: `upstream.model`, else the catalog id. */
export function upstreamModel(model: CatalogModel): string {
  return model.upstream?.model ?? model.id;
}

/**
 * The header carrying an entry's key (`upstream.apiKeyEnv`, looked up in `options.env` or the
 * environment) in the provider's scheme; none when the entry names no key or it is unset, as for
 * a keyless local server.
 */
export function authHeaders(options: AdapterOptions, header: string, scheme?: 'Bearer' | 'Key'): (model: CatalogModel) => Record<string, string> {
  const env = options.env;
  const keyOf = env ? (name: string) => env[name] : providerKey;
  return (model) => {
    const name = model.upstream?.apiKeyEnv;
    const key = name ? keyOf(name) : undefined;
    return key ? { [header]: scheme ? `${scheme} ${key}` : key } : {};
  };
}

/**
 * An entry's params merged over a request body: a value replaces Kiln's, a null removes one of
 * Kiln's defaults; names in `kept` are Kiln's own and stay as they are.
 */
export function withParams(body: Record<string, unknown>, params: unknown, kept: ReadonlySet<string> = NOTHING): Record<string, unknown> {
  if (!params || typeof params !== 'object') return body;
  const out = { ...body };
  for (const [k, v] of Object.entries(params)) {
    // An entry written straight through SQL could carry these: never touch the object's prototype.
    if (kept.has(k) || k === '__proto__' || k === 'constructor' || k === 'prototype') continue;
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** An image input as a URL: its own https URL, or its bytes as a data: URL. */
export function dataUrl(img: ImageInputData): string {
  return 'data' in img ? `data:${img.mediaType};base64,${img.data.toString('base64')}` : img.url;
}

/** `upstream.pollIntervalMs` (at least 10 ms), else 1 s. */
export function pollInterval(model: CatalogModel): number {
  const ms = model.upstream?.pollIntervalMs;
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= 10 ? ms : DEFAULT_POLL_MS;
}

/**
 * A queued job's output image: inline when the upstream answered with a data: URL, else downloaded
 * from the upstream's own origin within what is left of the job's deadline. The job has completed
 * upstream by then, so a download that fails in passing (network, 5xx, 408, 429) is tried again,
 * with the adapter's attempts and backoff: running the job again would pay for a new one.
 */
export async function jobImage(url: string, origin: string, options: AdapterOptions, job: UpstreamJob): Promise<Buffer> {
  const inline = decodeDataUrl(url);
  if (inline) return inline.data;
  const attempts = Math.max(1, options.maxAttempts ?? 3);
  const random = options.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    try {
      return await downloadImage(url, { trustedOrigin: origin, maxBytes: options.maxImageBytes, timeoutMs: Math.max(1, job.remainingMs()), signal: job.signal });
    } catch (err) {
      if (attempt >= attempts || job.signal.aborted || !passing(err)) throw err;
      const backoff = Math.min(options.maxDelayMs ?? 8_000, (options.baseDelayMs ?? 500) * 2 ** (attempt - 1));
      await sleep(Math.round(backoff * (0.5 + random() / 2)), job.signal);
    }
  }
}

/** A download failure that may pass: the network, or a 5xx/408/429 from the file host (not a refused URL). */
function passing(err: unknown): boolean {
  if (!(err instanceof ProviderError) || !err.retryable || err.cause instanceof InputError) return false;
  return err.status === undefined || err.status >= 500 || err.status === 408 || err.status === 429;
}

/** A token count from an upstream's usage report, or null when it is missing or not a count. */
export function nonNegInt(v: unknown): number | null {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null;
}

/** A response's own id, kept only when it looks like one (ids, never free text, reach the logs). */
export function responseId(v: unknown): string | null {
  return typeof v === 'string' && /^[A-Za-z0-9_.:-]{1,128}$/.test(v) ? v : null;
}

/** The sink to stream to: the request's, unless the entry sets `upstream.stream: false` (docs/providers.md, "Streaming"). */
export function streams(model: CatalogModel, sink: OutputSink | undefined): OutputSink | null {
  return sink && upstreamSetting(model, 'stream') !== false ? sink : null;
}
