// The `openai` adapter for any OpenAI-compatible endpoint (OpenAI, OpenRouter, Ollama, vLLM, …):
// Chat Completions for text, the Images API for pictures.

import { providerKey } from '../config.ts';
import type { CatalogModel } from '../billing/catalog.ts';
import { IMAGE_INPUT_TOKENS } from './costs.ts';
import { stripCodeFences } from './fences.ts';
import { postJson, type RetryOptions } from './http.ts';
import { decodeBase64Image, downloadImage, toImageOutput } from './images.ts';
import { imagePrompt, systemPrompt, userPrompt } from './prompts.ts';
import {
  outputKind,
  ProviderError,
  upstreamSetting,
  type AspectRatio,
  type ImageInputData,
  type ImageOutput,
  type ImageRequest,
  type Provider,
  type TextOutput,
  type TextRequest,
} from './types.ts';

export interface OpenAIOptions extends RetryOptions {
  /** Cap on an image fetched from a `url` response. Default 32 MiB. */
  maxImageBytes?: number;
  /** Where `upstream.apiKeyEnv` is looked up. Default: the environment, through config.ts providerKey. */
  env?: Record<string, string | undefined>;
}

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/** Sizes the current OpenAI image models accept; results are centre-cropped to the exact ratio. */
const DEFAULT_SIZES: Record<AspectRatio, string> = {
  '1:1': '1024x1024',
  '16:9': '1536x1024', '4:3': '1536x1024', '3:2': '1536x1024',
  '9:16': '1024x1536', '3:4': '1024x1536', '2:3': '1024x1536',
};

const bad = (message: string) => new ProviderError(message, { code: 'bad_response', retryable: false });

function endpoint(model: CatalogModel, path: string): string {
  const base = model.upstream?.baseUrl ?? DEFAULT_BASE_URL;
  return base.replace(/\/+$/, '') + path;
}

function upstreamModel(model: CatalogModel): string {
  return model.upstream?.model ?? model.id;
}

function authHeaders(model: CatalogModel, keyOf: (name: string) => string | undefined): Record<string, string> {
  const name = model.upstream?.apiKeyEnv;
  const key = name ? keyOf(name) : undefined;
  return key ? { authorization: `Bearer ${key}` } : {};
}

function dataUrl(img: ImageInputData): string {
  return 'data' in img ? `data:${img.mediaType};base64,${img.data.toString('base64')}` : img.url;
}

/** `upstream.imageParams` is merged into the Images API body; a null value removes a default. */
function withParams(body: Record<string, unknown>, model: CatalogModel): Record<string, unknown> {
  const extra = upstreamSetting(model, 'imageParams');
  if (!extra || typeof extra !== 'object') return body;
  const out = { ...body };
  for (const [k, v] of Object.entries(extra)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

function nonNegInt(v: unknown): number | null {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null;
}

function messageText(json: unknown): { text: string; finish: unknown } {
  const choice = (json as { choices?: Array<{ message?: { content?: unknown }; finish_reason?: unknown }> })?.choices?.[0];
  if (!choice) {
    if ((json as { error?: unknown })?.error) throw new ProviderError('upstream provider returned an error', { code: 'upstream_error', retryable: true });
    throw bad('upstream provider returned no choices');
  }
  const content = choice.message?.content;
  const text = typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p: { type?: unknown; text?: unknown }) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('')
      : '';
  return { text, finish: choice.finish_reason };
}

export function createOpenAIProvider(options: OpenAIOptions = {}): Provider {
  const env = options.env;
  const keyOf = env ? (name: string) => env[name] : providerKey;

  return {
    async generateText(req: TextRequest): Promise<TextOutput> {
      const kind = outputKind(req);
      const system = systemPrompt(kind);
      const prompt = userPrompt(req.prompt, req.textInputs);
      // Text-only models never see images; the reservation does not count them either.
      const images = req.model.supports_image_input ? req.images : [];
      const user = images.length
        ? [{ type: 'text', text: prompt }, ...images.map((img) => ({ type: 'image_url', image_url: { url: dataUrl(img) } }))]
        : prompt;
      const { json, requestId } = await postJson(
        {
          url: endpoint(req.model, '/chat/completions'),
          headers: { 'content-type': 'application/json', accept: 'application/json', ...authHeaders(req.model, keyOf) },
          body: JSON.stringify({
            model: upstreamModel(req.model),
            messages: [{ role: 'system', content: system }, { role: 'user', content: user }],
            max_tokens: req.maxTokens,
          }),
          signal: req.signal,
        },
        options,
      );
      const { text, finish } = messageText(json);
      if (text.trim() === '') {
        throw new ProviderError(
          finish === 'content_filter' ? 'upstream model declined the request' : 'upstream model returned no content',
          { code: 'rejected', retryable: false },
        );
      }
      const usage = (json as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } }).usage;
      // Some compatible servers omit usage; estimate rather than bill nothing.
      const inputTokens = nonNegInt(usage?.prompt_tokens) ??
        Math.ceil((system.length + prompt.length) / 4) + images.length * IMAGE_INPUT_TOKENS;
      const outputTokens = nonNegInt(usage?.completion_tokens) ?? Math.ceil(text.length / 4);
      const id = (json as { id?: unknown }).id;
      return {
        text: stripCodeFences(text, kind),
        usage: { inputTokens, outputTokens },
        providerRequestId: requestId ?? (typeof id === 'string' ? id.slice(0, 128) : null),
      };
    },

    async generateImage(req: ImageRequest): Promise<ImageOutput> {
      const sizes = upstreamSetting(req.model, 'imageSizes') as Partial<Record<AspectRatio, string>> | undefined;
      const fields = withParams(
        {
          model: upstreamModel(req.model),
          prompt: imagePrompt(req.prompt, req.textInputs),
          n: 1,
          size: sizes?.[req.aspectRatio] ?? DEFAULT_SIZES[req.aspectRatio],
          response_format: 'b64_json',
        },
        req.model,
      );
      const images = req.model.supports_image_input ? req.images : [];
      let body: string | FormData;
      let path: string;
      const headers: Record<string, string> = { accept: 'application/json', ...authHeaders(req.model, keyOf) };
      if (images.length) {
        // Reference images go to the edits endpoint, which only takes multipart uploads.
        path = '/images/edits';
        const form = new FormData();
        for (const [k, v] of Object.entries(fields)) form.append(k, typeof v === 'string' ? v : JSON.stringify(v));
        images.forEach((img, i) => {
          if (!('data' in img)) throw new ProviderError('image inputs must be uploaded for this model', { code: 'config', retryable: false });
          const ext = img.mediaType.split('/')[1] ?? 'png';
          form.append(images.length > 1 ? 'image[]' : 'image', new Blob([new Uint8Array(img.data)], { type: img.mediaType }), `input-${i + 1}.${ext}`);
        });
        body = form;
      } else {
        path = '/images/generations';
        headers['content-type'] = 'application/json';
        body = JSON.stringify(fields);
      }
      const { json, requestId } = await postJson({ url: endpoint(req.model, path), headers, body, signal: req.signal }, options);
      const item = (json as { data?: Array<{ b64_json?: unknown; url?: unknown }> })?.data?.[0];
      let data: Buffer;
      if (typeof item?.b64_json === 'string' && item.b64_json.length > 0) {
        data = decodeBase64Image(item.b64_json);
      } else if (typeof item?.url === 'string') {
        data = await downloadImage(item.url, { trustedOrigin: new URL(endpoint(req.model, '/')).origin, maxBytes: options.maxImageBytes, timeoutMs: options.timeoutMs, signal: req.signal });
      } else {
        throw bad('upstream provider returned no image');
      }
      return { ...(await toImageOutput(data, req.aspectRatio)), providerRequestId: requestId };
    },
  };
}
