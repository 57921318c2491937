// The `gemini` adapter: Google's Gemini API generateContent (POST /v1beta/models/{model}:generateContent)
// for text and svg entries and for image entries (the image comes back as inline data).

import sharp from 'sharp';
import { providerKey } from '../config.ts';
import type { CatalogModel } from '../billing/catalog.ts';
import { IMAGE_INPUT_TOKENS } from './costs.ts';
import { stripCodeFences } from './fences.ts';
import { postJson, type RetryOptions } from './http.ts';
import { decodeBase64Image, toImageOutput } from './images.ts';
import { imagePrompt, systemPrompt, userPrompt } from './prompts.ts';
import {
  outputKind,
  ProviderError,
  upstreamSetting,
  type ImageInputData,
  type ImageOutput,
  type ImageRequest,
  type Provider,
  type TextOutput,
  type TextRequest,
} from './types.ts';

export interface GeminiOptions extends RetryOptions {
  /** Where `upstream.apiKeyEnv` is looked up. Default: the environment, through config.ts providerKey. */
  env?: Record<string, string | undefined>;
}

const DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com/v1beta';
/** Image types Gemini reads inline; anything else (GIF) is converted to PNG first. */
const INLINE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/heic', 'image/heif']);
/** Finish reasons that end a normal answer; every other one (SAFETY, RECITATION, NO_IMAGE, …) is a refusal. */
const FINISHED = new Set(['STOP', 'MAX_TOKENS', 'FINISH_REASON_UNSPECIFIED']);

const bad = (message: string) => new ProviderError(message, { code: 'bad_response', retryable: false });

/** Gemini's enum values (SAFETY, IMAGE_PROHIBITED_CONTENT, …) are safe to show; anything else is dropped. */
function reasonToken(v: unknown): string {
  return typeof v === 'string' && /^[A-Z][A-Z_]{0,47}$/.test(v) ? ` (${v})` : '';
}

function nonNegInt(v: unknown): number | null {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null;
}

interface Part {
  text?: unknown;
  thought?: unknown;
  inlineData?: { mimeType?: unknown; data?: unknown };
}

interface Answer {
  candidates?: Array<{ content?: { parts?: Part[] }; finishReason?: unknown }>;
  promptFeedback?: { blockReason?: unknown };
  usageMetadata?: Record<string, unknown>;
  responseId?: unknown;
}

async function inlinePart(img: ImageInputData): Promise<Part> {
  if (!('data' in img)) throw new ProviderError('image inputs must be uploaded for this model', { code: 'config', retryable: false });
  if (INLINE_TYPES.has(img.mediaType)) return { inlineData: { mimeType: img.mediaType, data: img.data.toString('base64') } };
  const png = await sharp(img.data, { limitInputPixels: 100_000_000 }).png().toBuffer().catch(() => {
    throw new ProviderError('an image input could not be read', { code: 'rejected', retryable: false });
  });
  return { inlineData: { mimeType: 'image/png', data: png.toString('base64') } };
}

/** `upstream.params` merged into generationConfig (thinkingConfig, temperature, imageConfig, …); null removes a field. */
function generationConfig(base: Record<string, unknown>, model: CatalogModel): Record<string, unknown> {
  const extra = upstreamSetting(model, 'params');
  if (!extra || typeof extra !== 'object') return base;
  const out = { ...base };
  for (const [k, v] of Object.entries(extra)) {
    if (k === 'maxOutputTokens') continue; // the reservation is sized from the request's own cap
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/**
 * The first candidate's answer parts, after the checks every reply needs: a blocked prompt and a
 * refusal finish are content errors (not retried), a reply without candidates is a bad response.
 */
function answerParts(json: unknown): { parts: Part[]; finish: unknown } {
  const a = json as Answer | null;
  if (!a || typeof a !== 'object') throw bad('upstream provider returned no candidates');
  const cand = Array.isArray(a.candidates) ? a.candidates[0] : undefined;
  if (!cand) {
    if (a.promptFeedback?.blockReason !== undefined) {
      throw new ProviderError(`upstream provider blocked the prompt${reasonToken(a.promptFeedback.blockReason)}`, { code: 'rejected', retryable: false });
    }
    throw bad('upstream provider returned no candidates');
  }
  const finish = cand.finishReason;
  if (finish !== undefined && !FINISHED.has(String(finish))) {
    throw new ProviderError(`upstream model declined the request${reasonToken(finish)}`, { code: 'rejected', retryable: false });
  }
  const parts = cand.content?.parts;
  // Thought summaries and interim "thinking" images are not the answer.
  return { parts: Array.isArray(parts) ? parts.filter((p) => p && typeof p === 'object' && p.thought !== true) : [], finish };
}

/**
 * http.ts names `error.code`, which Gemini sets to the HTTP status itself: "returned 400 (400)"
 * says nothing twice, so the echo is dropped.
 */
async function call(...args: Parameters<typeof postJson>): ReturnType<typeof postJson> {
  try {
    return await postJson(...args);
  } catch (err) {
    if (!(err instanceof ProviderError) || err.status === undefined || !err.message.includes(` (${err.status})`)) throw err;
    throw new ProviderError(err.message.replace(` (${err.status})`, ''), {
      code: err.code, retryable: err.retryable, status: err.status, retryAfterMs: err.retryAfterMs, cause: err,
    });
  }
}

export function createGeminiProvider(options: GeminiOptions = {}): Provider {
  const env = options.env;
  const keyOf = env ? (name: string) => env[name] : providerKey;

  function request(model: CatalogModel, body: Record<string, unknown>, signal: AbortSignal) {
    const name = (model.upstream?.model ?? model.id).replace(/^models\//, '');
    const base = (model.upstream?.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
    const keyName = model.upstream?.apiKeyEnv;
    const key = keyName ? keyOf(keyName) : undefined;
    return call(
      {
        url: `${base}/models/${encodeURIComponent(name)}:generateContent`,
        headers: { 'content-type': 'application/json', accept: 'application/json', ...(key ? { 'x-goog-api-key': key } : {}) },
        body: JSON.stringify(body),
        signal,
      },
      options,
    );
  }

  return {
    async generateText(req: TextRequest): Promise<TextOutput> {
      const kind = outputKind(req);
      const system = systemPrompt(kind);
      const prompt = userPrompt(req.prompt, req.textInputs);
      const images = req.model.supports_image_input ? req.images : [];
      const { json, requestId } = await request(req.model, {
        contents: [{ role: 'user', parts: [{ text: prompt }, ...(await Promise.all(images.map(inlinePart)))] }],
        systemInstruction: { parts: [{ text: system }] },
        generationConfig: generationConfig({ maxOutputTokens: req.maxTokens }, req.model),
      }, req.signal);
      const { parts, finish } = answerParts(json);
      const text = parts.map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
      if (text.trim() === '') {
        // e.g. MAX_TOKENS spent entirely on thinking: nothing to deliver, so nothing is charged.
        throw new ProviderError(`upstream model returned no content${reasonToken(finish)}`, { code: 'rejected', retryable: false });
      }
      const u = (json as Answer).usageMetadata;
      const prompted = nonNegInt(u?.promptTokenCount);
      // promptTokenCount includes cached content; thoughts are billed at the output price.
      const inputTokens = prompted !== null
        ? prompted + (nonNegInt(u?.toolUsePromptTokenCount) ?? 0)
        : Math.ceil((system.length + prompt.length) / 4) + images.length * IMAGE_INPUT_TOKENS;
      const candidates = nonNegInt(u?.candidatesTokenCount);
      const outputTokens = candidates !== null || nonNegInt(u?.thoughtsTokenCount) !== null
        ? (candidates ?? 0) + (nonNegInt(u?.thoughtsTokenCount) ?? 0)
        : Math.ceil(text.length / 4);
      const id = (json as Answer).responseId;
      return {
        text: stripCodeFences(text, kind),
        usage: { inputTokens, outputTokens },
        providerRequestId: requestId ?? (typeof id === 'string' && /^[A-Za-z0-9_.:-]{1,128}$/.test(id) ? id : null),
      };
    },

    async generateImage(req: ImageRequest): Promise<ImageOutput> {
      const images = req.model.supports_image_input ? req.images : [];
      const { json, requestId } = await request(req.model, {
        contents: [{ role: 'user', parts: [{ text: imagePrompt(req.prompt, req.textInputs) }, ...(await Promise.all(images.map(inlinePart)))] }],
        // TEXT alongside IMAGE: the image models may add a caption, and some refuse IMAGE alone.
        generationConfig: generationConfig({ responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: req.aspectRatio } }, req.model),
      }, req.signal);
      const { parts } = answerParts(json);
      const found = parts.find((p) => typeof p.inlineData?.data === 'string' && String(p.inlineData.mimeType ?? '').startsWith('image/'));
      if (!found) throw new ProviderError('upstream model returned no image', { code: 'rejected', retryable: false });
      const data = decodeBase64Image(found.inlineData!.data as string);
      const id = (json as Answer).responseId;
      return {
        ...(await toImageOutput(data, req.aspectRatio)),
        providerRequestId: requestId ?? (typeof id === 'string' && /^[A-Za-z0-9_.:-]{1,128}$/.test(id) ? id : null),
      };
    },
  };
}
