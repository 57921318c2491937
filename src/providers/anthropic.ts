// The `anthropic` adapter: Anthropic's Messages API (POST /v1/messages) for text and svg catalog
// entries — code, screens, GLSL, SVG. Anthropic has no image generation, so images are a config error.

import { providerKey } from '../config.ts';
import type { CatalogModel } from '../billing/catalog.ts';
import { IMAGE_INPUT_TOKENS } from './costs.ts';
import { stripCodeFences } from './fences.ts';
import { postJson, type RetryOptions } from './http.ts';
import { systemPrompt, userPrompt } from './prompts.ts';
import {
  outputKind,
  ProviderError,
  upstreamSetting,
  type ImageInputData,
  type ImageOutput,
  type Provider,
  type TextOutput,
  type TextRequest,
} from './types.ts';

export interface AnthropicOptions extends RetryOptions {
  /** Where `upstream.apiKeyEnv` is looked up. Default: the environment, through config.ts providerKey. */
  env?: Record<string, string | undefined>;
}

const DEFAULT_BASE_URL = 'https://api.anthropic.com/v1';
/** The only stable version of the Messages API; newer features come as `anthropic-beta` headers. */
const API_VERSION = '2023-06-01';
/** The image media types the Messages API takes as base64 sources. */
const MEDIA_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
/** Request fields `upstream.params` may not replace: they carry the prompt, the billed cap and the JSON reply. */
const OWN_FIELDS = new Set(['model', 'messages', 'system', 'max_tokens', 'stream']);

const bad = (message: string) => new ProviderError(message, { code: 'bad_response', retryable: false });

function nonNegInt(v: unknown): number | null {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null;
}

function imageBlock(img: ImageInputData): Record<string, unknown> {
  if (!('data' in img)) return { type: 'image', source: { type: 'url', url: img.url } };
  if (!MEDIA_TYPES.has(img.mediaType)) {
    throw new ProviderError('image inputs must be PNG, JPEG, GIF or WebP for this model', { code: 'rejected', retryable: false });
  }
  return { type: 'image', source: { type: 'base64', media_type: img.mediaType, data: img.data.toString('base64') } };
}

/** `upstream.params` (e.g. temperature, top_p, metadata) merged into the body; a null value removes a field. */
function withParams(body: Record<string, unknown>, model: CatalogModel): Record<string, unknown> {
  const extra = upstreamSetting(model, 'params');
  if (!extra || typeof extra !== 'object') return body;
  const out = { ...body };
  for (const [k, v] of Object.entries(extra)) {
    if (OWN_FIELDS.has(k)) continue;
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

interface Message {
  id?: unknown;
  type?: unknown;
  content?: Array<{ type?: unknown; text?: unknown }>;
  stop_reason?: unknown;
  usage?: Record<string, unknown>;
}

export function createAnthropicProvider(options: AnthropicOptions = {}): Provider {
  const env = options.env;
  const keyOf = env ? (name: string) => env[name] : providerKey;

  return {
    async generateImage(): Promise<ImageOutput> {
      throw new ProviderError('this model cannot generate images', { code: 'config', retryable: false });
    },

    async generateText(req: TextRequest): Promise<TextOutput> {
      const kind = outputKind(req);
      const system = systemPrompt(kind);
      const prompt = userPrompt(req.prompt, req.textInputs);
      // Text-only entries never send images; the reservation does not count them either.
      const images = req.model.supports_image_input ? req.images : [];
      const keyName = req.model.upstream?.apiKeyEnv;
      const key = keyName ? keyOf(keyName) : undefined;
      const base = (req.model.upstream?.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');

      const { json, requestId } = await postJson(
        {
          url: `${base}/messages`,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            'anthropic-version': API_VERSION,
            ...(key ? { 'x-api-key': key } : {}),
          },
          body: JSON.stringify(withParams({
            model: req.model.upstream?.model ?? req.model.id,
            max_tokens: req.maxTokens,
            system,
            messages: [{ role: 'user', content: [{ type: 'text', text: prompt }, ...images.map(imageBlock)] }],
          }, req.model)),
          signal: req.signal,
        },
        options,
      );

      const msg = json as Message | null;
      if (msg?.type !== 'message' || !Array.isArray(msg.content)) throw bad('upstream provider returned no message');
      // Only text blocks are output; thinking blocks (if an operator enables them) are billed, not returned.
      const text = msg.content.map((b) => (b?.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('');
      if (msg.stop_reason === 'refusal') {
        throw new ProviderError('upstream model declined the request', { code: 'rejected', retryable: false });
      }
      if (text.trim() === '') {
        throw new ProviderError('upstream model returned no content', { code: 'rejected', retryable: false });
      }
      // `max_tokens` (and a full context window) end with what was written so far: returned as it is.
      const u = msg.usage;
      const counted = nonNegInt(u?.input_tokens);
      // Cache writes and reads are input too (billed at or below the input price); nothing here asks for caching.
      const inputTokens = counted !== null
        ? counted + (nonNegInt(u?.cache_creation_input_tokens) ?? 0) + (nonNegInt(u?.cache_read_input_tokens) ?? 0)
        : Math.ceil((system.length + prompt.length) / 4) + images.length * IMAGE_INPUT_TOKENS;
      const outputTokens = nonNegInt(u?.output_tokens) ?? Math.ceil(text.length / 4);
      return {
        text: stripCodeFences(text, kind),
        usage: { inputTokens, outputTokens },
        providerRequestId: requestId ?? (typeof msg.id === 'string' && /^[A-Za-z0-9_.:-]{1,128}$/.test(msg.id) ? msg.id : null),
      };
    },
  };
}
