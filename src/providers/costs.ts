// Billed prices in integer microdollars: cost × markup, rounded up once per charge, in exact
// decimal arithmetic (BigInt) so fractional per-token prices never pick up float error.

import type { CatalogModel } from '../billing/catalog.ts';
import { GLSL_ERROR_MAX_CHARS, glslRepairPrompt } from './glsl.ts';
import { systemPrompt, userPrompt } from './prompts.ts';
import { outputKind, type TargetLanguage, type TextInput, type TokenUsage } from './types.ts';

/** Reservation allowance per image input (OpenAI high-detail images stay below this). */
export const IMAGE_INPUT_TOKENS = 2000;
/** Chat framing per message (role markers, separators). */
const MESSAGE_OVERHEAD_TOKENS = 16;
const DEFAULT_MAX_OUTPUT_TOKENS = 4096;
const SCALE = 12; // decimal places kept for prices and markup

export type CostRequest =
  | { type: 'image' }
  | {
      type: 'code';
      prompt: string;
      targetLanguage: TargetLanguage;
      screenHtml?: boolean;
      textInputs?: readonly TextInput[];
      imageCount?: number;
      /** Defaults to maxTokensFor(model). */
      maxTokens?: number;
    };

export type ChargeUsage = TokenUsage | { images: number } | { seconds: number };

/** Default ceiling on billed run time for a time-priced model without upstream.maxSeconds. */
export const DEFAULT_MAX_SECONDS = 300;

export function maxSecondsFor(model: CatalogModel): number {
  const s = model.upstream?.maxSeconds;
  return typeof s === 'number' && Number.isFinite(s) && s > 0 ? s : DEFAULT_MAX_SECONDS;
}

/** Whether an image model is billed per second of upstream run time (else per image). */
export function billedByTime(model: CatalogModel): boolean {
  return model.category === 'image' && model.cost?.micros_per_second !== undefined && model.cost?.micros_per_image === undefined;
}

export function maxTokensFor(model: CatalogModel): number {
  return model.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
}

/** Exact decimal value of a JS number's shortest representation, × 10^SCALE, rounded up. */
function scaled(x: number, what: string): bigint {
  if (!Number.isFinite(x) || x < 0) throw new RangeError(`${what} must be a finite non-negative number`);
  const m = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(String(x));
  if (!m) throw new RangeError(`${what} is not a decimal number`);
  const digits = BigInt(m[1]! + (m[2] ?? ''));
  const exp = Number(m[3] ?? 0) - (m[2]?.length ?? 0) + SCALE;
  if (exp >= 0) return digits * 10n ** BigInt(exp);
  const div = 10n ** BigInt(-exp);
  return (digits + div - 1n) / div;
}

function ceilMicros(amountScaled: bigint, markup: number): number {
  const total = amountScaled * scaled(markup, 'markup');
  const unit = 10n ** BigInt(2 * SCALE);
  const micros = (total + unit - 1n) / unit;
  if (micros > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('charge exceeds the safe integer range');
  return Number(micros);
}

function tokenAmount(model: CatalogModel, inputTokens: number, outputTokens: number): bigint {
  const inPrice = scaled(model.cost?.input_micros_per_token ?? 0, 'input price');
  const outPrice = scaled(model.cost?.output_micros_per_token ?? 0, 'output price');
  return BigInt(Math.ceil(inputTokens)) * inPrice + BigInt(Math.ceil(outputTokens)) * outPrice;
}

/** price per second × seconds, both exact decimals (seconds rounded up to the millisecond). */
function secondsAmount(model: CatalogModel, seconds: number): bigint {
  // Exact: 2.007 s is 2,007 ms (Math.ceil(2.007 * 1000) would be 2,008).
  const perMs = 10n ** BigInt(SCALE - 3);
  const ms = (scaled(Math.max(0, seconds), 'seconds') + perMs - 1n) / perMs;
  const price = scaled(model.cost?.micros_per_second ?? 0, 'price per second');
  return (ms * price + 999n) / 1000n;
}

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

/**
 * Upper bound on input tokens for one attempt: UTF-8 bytes of exactly what is sent (a BPE token
 * is at least one byte), per-message framing, and a fixed allowance per image.
 */
export function inputTokenBound(model: CatalogModel, req: Extract<CostRequest, { type: 'code' }>): number {
  const kind = outputKind({ model, targetLanguage: req.targetLanguage, screenHtml: req.screenHtml ?? false });
  const images = model.supports_image_input ? (req.imageCount ?? 0) : 0;
  return (
    utf8(systemPrompt(kind)) +
    utf8(userPrompt(req.prompt, req.textInputs ?? [])) +
    2 * MESSAGE_OVERHEAD_TOKENS +
    images * IMAGE_INPUT_TOKENS
  );
}

/** Worst-case billed cost, reserved before the job runs. GLSL reserves its repair retry too. */
export function reserveMicros(model: CatalogModel, req: CostRequest): number {
  if (req.type === 'image') {
    if (billedByTime(model)) return ceilMicros(secondsAmount(model, maxSecondsFor(model)), model.markup);
    return ceilMicros(scaled(model.cost?.micros_per_image ?? 0, 'image price'), model.markup);
  }
  const maxTokens = req.maxTokens ?? maxTokensFor(model);
  const first = inputTokenBound(model, req);
  const kind = outputKind({ model, targetLanguage: req.targetLanguage, screenHtml: req.screenHtml ?? false });
  if (kind !== 'glsl') return ceilMicros(tokenAmount(model, first, maxTokens), model.markup);
  // The repair prompt quotes a validator error of at most GLSL_ERROR_MAX_CHARS (≤ 4 bytes each).
  const repair = utf8(glslRepairPrompt('')) + 4 * (GLSL_ERROR_MAX_CHARS + 1);
  return ceilMicros(tokenAmount(model, 2 * first + repair, 2 * maxTokens), model.markup);
}

/** Actual billed cost; never above `capMicros` (pass the reservation). */
export function actualMicros(model: CatalogModel, usage: ChargeUsage, capMicros?: number): number {
  const micros =
    'images' in usage
      ? ceilMicros(BigInt(usage.images) * scaled(model.cost?.micros_per_image ?? 0, 'image price'), model.markup)
      : 'seconds' in usage
        ? ceilMicros(secondsAmount(model, usage.seconds), model.markup)
        : ceilMicros(tokenAmount(model, Math.max(0, usage.inputTokens), Math.max(0, usage.outputTokens)), model.markup);
  return capMicros === undefined ? micros : Math.min(micros, capMicros);
}
