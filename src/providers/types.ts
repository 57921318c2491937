// The contract between generation jobs and model adapters: requests, outputs and the one
// error type an adapter may throw (its message is safe to show to API clients).

import type { CatalogModel } from '../billing/catalog.ts';

export const ASPECT_RATIOS = ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3'] as const;
export type AspectRatio = (typeof ASPECT_RATIOS)[number];

export const TARGET_LANGUAGES = [
  'text', 'tsx', 'jsx', 'css', 'svg', 'json', 'typescript', 'javascript', 'mdx', 'markdown', 'glsl',
] as const;
export type TargetLanguage = (typeof TARGET_LANGUAGES)[number];

/** The most image inputs one request may carry (a POST's `images`, a workflow prompt node's image inputs). */
export const MAX_IMAGES = 10;

/** A resolved image input: bytes, or a vetted https URL for adapters that fetch URLs themselves. */
export type ImageInputData = { data: Buffer; mediaType: string } | { url: string; mediaType: string };

export interface TextInput {
  content: string;
  /** Defaults to `Input N` (1-based) when rendered into a prompt. */
  label?: string;
  language?: string;
}

/**
 * A generation's request as persisted in kiln_private.generations.request and read back by the
 * worker: what a POST validates into (generations/prepare.ts) and what a run output is built into
 * (workflows/request.ts). generations/execute.ts resolves its images and calls the adapter with it.
 */
export interface StoredRequest {
  type: 'image' | 'code';
  prompt: string;
  images: Array<{ url: string; mediaType: string }>;
  textInputs: TextInput[];
  aspectRatio: AspectRatio;
  targetLanguage: TargetLanguage;
  screenHtml: boolean;
  maxTokens: number;
  /** The catalog entry as priced at creation: the job runs and settles with exactly this. */
  model: CatalogModel;
  /**
   * Entries tried in order when `model`'s upstream fails after its retries, as priced at creation
   * (the reservation covers the dearest of the chain). Absent on requests stored before fallbacks.
   */
  fallbacks?: CatalogModel[];
  /** W3C traceparent of the request that created it (tracing on only): its job's span joins that trace. */
  traceparent?: string;
  /** The request's attribution (docs/api.md, "Attribution"): SQL copies them into the generation's and its charge's columns. */
  endUser?: string;
  metadata?: Record<string, string>;
}

/**
 * Where an adapter reports what it has so far while a call runs (docs/api.md, "Streaming"). The
 * worker coalesces what it is given and hands it to clients; an adapter calls it as things
 * arrive, in order, and never waits on it. Without a sink an adapter answers as it always did.
 * None of this is the record: the call's return value is.
 */
export interface OutputSink {
  /** Output text exactly as the provider wrote it (before code fences are stripped), in order. */
  text(chunk: string): void;
  /** A partial image (encoded bytes), `index` counting from 0. */
  preview(index: number, data: Buffer, mediaType: string): void;
  /** Queue status or a log line: a percentage (0–100) when the upstream gives one, and/or a short message. */
  progress(percent: number | null, message: string | null): void;
  /**
   * The call starts over and what it wrote so far is not the answer (a repair call, a fallback
   * model): clients are told to drop it (`reset`). Called by the execution, not by adapters.
   */
  restart(): void;
}

export interface ImageRequest {
  model: CatalogModel;
  prompt: string;
  aspectRatio: AspectRatio;
  images: ImageInputData[];
  textInputs: TextInput[];
  signal: AbortSignal;
  /** Partial images (`upstream.partialImages`) and queue progress, where the provider gives them. */
  sink?: OutputSink;
}

export interface ImageOutput {
  data: Buffer;
  mediaType: string;
  width: number;
  height: number;
  providerRequestId?: string | null;
  /** Upstream run time, for models billed per second (cost.micros_per_second). */
  billedSeconds?: number;
}

export interface TextRequest {
  model: CatalogModel;
  prompt: string;
  targetLanguage: TargetLanguage;
  screenHtml: boolean;
  images: ImageInputData[];
  textInputs: TextInput[];
  maxTokens: number;
  signal: AbortSignal;
  /** When given, the adapter asks for a stream (unless the entry sets `upstream.stream: false`) and reports text as it arrives. */
  sink?: OutputSink;
}

export interface TokenUsage {
  inputTokens: number;
  /** Everything billed at the output price, reasoning tokens included. */
  outputTokens: number;
}

export interface TextOutput {
  text: string;
  usage: TokenUsage;
  providerRequestId?: string | null;
}

export interface Provider {
  generateImage(req: ImageRequest): Promise<ImageOutput>;
  generateText(req: TextRequest): Promise<TextOutput>;
}

export type ProviderErrorCode =
  | 'aborted' // req.signal fired (shutdown): nothing is known about the upstream outcome
  | 'timeout'
  | 'network'
  | 'rate_limited'
  | 'upstream_error' // upstream 5xx
  | 'rejected' // upstream 4xx other than 429: retrying the same request cannot help
  | 'bad_response' // unparseable or incomplete upstream answer
  | 'invalid_output' // answer parsed but breaks the output rules (e.g. GLSL)
  | 'config'; // catalog entry cannot be served by this adapter

export interface ProviderErrorOptions {
  code: ProviderErrorCode;
  retryable: boolean;
  retryAfterMs?: number;
  status?: number;
  /** Tokens already consumed upstream before the failure (e.g. both GLSL attempts). */
  usage?: TokenUsage;
  cause?: unknown;
}

/**
 * `message` is a short client-safe summary; it never contains an upstream body, URL or key.
 * `retryable` says whether running the same job again later may succeed.
 */
export class ProviderError extends Error {
  readonly code: ProviderErrorCode;
  readonly retryable: boolean;
  readonly retryAfterMs?: number;
  readonly status?: number;
  readonly usage?: TokenUsage;

  constructor(message: string, opts: ProviderErrorOptions) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ProviderError';
    this.code = opts.code;
    this.retryable = opts.retryable;
    if (opts.retryAfterMs !== undefined) this.retryAfterMs = opts.retryAfterMs;
    if (opts.status !== undefined) this.status = opts.status;
    if (opts.usage !== undefined) this.usage = opts.usage;
  }
}

/**
 * What a text request must produce. Screen HTML wins over the language (the screen is a page
 * whatever the language says), and an `svg` category model always draws SVG.
 */
export type OutputKind = Exclude<TargetLanguage, 'svg'> | 'svg' | 'html';

export function outputKind(req: { model: CatalogModel; targetLanguage: TargetLanguage; screenHtml: boolean }): OutputKind {
  if (req.screenHtml) return 'html';
  if (req.model.category === 'svg') return 'svg';
  return req.targetLanguage;
}

/** Extra, optional upstream settings read from the catalog entry's `upstream` JSON. */
export function upstreamSetting(model: CatalogModel, key: string): unknown {
  const u = model.upstream as Record<string, unknown> | null;
  return u && Object.prototype.hasOwnProperty.call(u, key) ? u[key] : undefined;
}
