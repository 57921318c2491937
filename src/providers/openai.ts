// The `openai` adapter for OpenAI and any OpenAI-compatible endpoint (OpenRouter, Ollama, vLLM, …):
// Chat Completions for text, the Images API for pictures — in the dialect of the entry's model
// family (openai-family.ts): gpt-image, dall-e-2/3, reasoning and chat models on OpenAI take
// different parameters than compatible servers do.

import type { CatalogModel } from '../billing/catalog.ts';
import { IMAGE_INPUT_TOKENS } from './costs.ts';
import { stripCodeFences } from './fences.ts';
import { eventJson, malformedEvent, postJson, postStream, streamErrorEvent, type Call, type StreamOptions } from './http.ts';
import { decodeBase64Image, downloadImage, toImageOutput } from './images.ts';
import { entryParams, FAMILY_SIZES, openaiEntryProblem, openaiFamily, PROMPT_CHAR_LIMITS, type OpenAIFamily } from './openai-family.ts';
import { imagePrompt, systemPrompt, userPrompt } from './prompts.ts';
import {
  outputKind,
  ProviderError,
  upstreamSetting,
  type AspectRatio,
  type ImageOutput,
  type ImageRequest,
  type OutputSink,
  type Provider,
  type TextOutput,
  type TextRequest,
  type TokenUsage,
} from './types.ts';
import { authHeaders, badResponse, entryOptions, baseUrl, dataUrl, misconfigured, nonNegInt, rejected, responseId, streams, upstreamModel, withParams, type AdapterOptions } from './upstream.ts';

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

function endpoint(model: CatalogModel, path: string): string {
  return baseUrl(model, DEFAULT_BASE_URL) + path;
}

/** The entry's family, after the same checks `kiln model upsert` makes (entries may predate them). */
function familyOf(model: CatalogModel): OpenAIFamily {
  const problem = openaiEntryProblem(model);
  if (problem) throw misconfigured(`catalog entry ${model.id} is invalid: ${problem}`);
  return openaiFamily(model);
}

/**
 * Request defaults, then the entry's params (`upstream.params`, and `upstream.imageParams` for
 * image entries; a null value removes a default), then Kiln's own fields.
 */
function body(defaults: Record<string, unknown>, model: CatalogModel, own: Record<string, unknown>): Record<string, unknown> {
  return { ...withParams(defaults, entryParams(model)), ...own };
}

interface Choice {
  text: string;
  /** Reasoning text some compatible servers return beside the answer (vLLM, OpenRouter). */
  reasoning: string;
  refusal: boolean;
  finish: unknown;
}

/**
 * An error inside a 200 answer (OpenRouter reports an upstream's failure this way, with that
 * failure's HTTP status as `error.code`): a 4xx other than 408/429 is final — the same request
 * fails the same way again — anything else may pass.
 */
function answeredError(code: unknown): ProviderError {
  const status = typeof code === 'number' && Number.isInteger(code) && code >= 400 && code < 600 ? code : null;
  const message = `upstream provider returned an error${status !== null ? ` (${status})` : ''}`;
  if (status !== null && status < 500 && status !== 408 && status !== 429) return new ProviderError(message, { code: 'rejected', retryable: false });
  return new ProviderError(message, { code: 'upstream_error', retryable: true });
}

function firstChoice(json: unknown): Choice {
  const choice = (json as { choices?: Array<{ message?: Record<string, unknown>; finish_reason?: unknown }> })?.choices?.[0];
  if (!choice) {
    const error = (json as { error?: { code?: unknown } | null })?.error;
    if (error) throw answeredError(error.code);
    throw badResponse('upstream provider returned no choices');
  }
  const msg = choice.message ?? {};
  const content = msg.content;
  const text = typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p: { type?: unknown; text?: unknown }) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('')
      : '';
  const reasoning = [msg.reasoning_content, msg.reasoning].filter((x): x is string => typeof x === 'string').join('');
  return { text, reasoning, refusal: typeof msg.refusal === 'string' && msg.refusal !== '', finish: choice.finish_reason };
}

interface UpstreamUsage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  total_tokens?: unknown;
  completion_tokens_details?: { reasoning_tokens?: unknown };
}

/**
 * Billed tokens. OpenAI counts reasoning inside completion_tokens
 * (completion_tokens_details.reasoning_tokens is a breakdown); a server that reports them beside
 * it instead is caught by reasoning > completion or by total − prompt. Without usage the
 * output is estimated from the text — for a reasoning model, whose hidden reasoning cannot be
 * seen, it is the whole max_completion_tokens budget.
 */
function billedUsage(json: unknown, sent: { inputChars: number; images: number; maxTokens: number; family: OpenAIFamily }, choice: Choice): TokenUsage {
  const usage = (json as { usage?: UpstreamUsage }).usage;
  const prompt = nonNegInt(usage?.prompt_tokens);
  const inputTokens = prompt ?? Math.ceil(sent.inputChars / 4) + sent.images * IMAGE_INPUT_TOKENS;
  const completion = nonNegInt(usage?.completion_tokens);
  if (completion === null) {
    const outputTokens = sent.family === 'reasoning' ? sent.maxTokens : Math.ceil((choice.text.length + choice.reasoning.length) / 4);
    return { inputTokens, outputTokens };
  }
  let outputTokens = completion;
  const reasoning = nonNegInt(usage?.completion_tokens_details?.reasoning_tokens) ?? 0;
  if (reasoning > completion) outputTokens = completion + reasoning;
  const total = nonNegInt(usage?.total_tokens);
  if (total !== null && prompt !== null && total - prompt > outputTokens) outputTokens = total - prompt;
  return { inputTokens, outputTokens };
}

/** `upstream.partialImages` (0–3; openaiEntryProblem checks it), 0 when unset. */
function partialImages(model: CatalogModel): number {
  const n = upstreamSetting(model, 'partialImages');
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 3 ? n : 0;
}

const IMAGE_TYPES: Record<string, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };
const mediaTypeOf = (format: unknown) => (typeof format === 'string' && IMAGE_TYPES[format]) || 'image/png';

interface ChatChunk {
  id?: unknown;
  error?: { code?: unknown } | null;
  choices?: Array<{ index?: unknown; delta?: Record<string, unknown> | null; finish_reason?: unknown }>;
  usage?: unknown;
}

/**
 * A streamed chat completion (`data: {choices:[{delta}]}` … `data: [DONE]`), its content deltas
 * handed to the sink as they arrive, put back together into the answer a non-streamed call
 * returns, so the same rules read both: content, refusal and reasoning joined, the last
 * finish_reason, the final usage chunk (absent: the same estimate as a missing usage).
 * `whole`: the server ignored `stream` and answered in one piece.
 */
async function streamedChat(call: Call, options: StreamOptions, sink: OutputSink): Promise<{ json: unknown; requestId: string | null; whole: boolean }> {
  let id: unknown;
  let seen = false;
  let text = '';
  let reasoning = '';
  let refusal = '';
  let finish: unknown = null;
  let usage: unknown;
  const answer = await postStream(call, options, (ev) => {
    if (ev.data.trim() === '[DONE]') return 'stop';
    const chunk = eventJson(ev) as ChatChunk | null;
    if (!chunk || typeof chunk !== 'object' || Array.isArray(chunk)) throw malformedEvent();
    // OpenAI's and OpenRouter's error chunks: judged like an error inside a 200 answer.
    if (chunk.error || ev.event === 'error') throw answeredError(chunk.error?.code);
    id ??= chunk.id;
    if (chunk.usage !== undefined && chunk.usage !== null) usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) ? chunk.choices.find((c) => (c?.index ?? 0) === 0) : undefined;
    if (!choice) return;
    seen = true;
    const delta = choice.delta ?? {};
    if (typeof delta.content === 'string' && delta.content !== '') {
      text += delta.content;
      sink.text(delta.content);
    }
    if (typeof delta.refusal === 'string') refusal += delta.refusal;
    // Reasoning deltas (vLLM, OpenRouter) are billed like the answer but are not output.
    for (const r of [delta.reasoning_content, delta.reasoning]) if (typeof r === 'string') reasoning += r;
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) finish = choice.finish_reason;
  });
  if (answer.json !== undefined) return { json: answer.json, requestId: answer.requestId, whole: true };
  const message = { content: text, refusal: refusal === '' ? null : refusal, ...(reasoning === '' ? {} : { reasoning }) };
  return {
    json: { id, choices: seen ? [{ message, finish_reason: finish }] : [], ...(usage === undefined ? {} : { usage }) },
    requestId: answer.requestId,
    whole: false,
  };
}

interface ImageEvent {
  type?: unknown;
  b64_json?: unknown;
  partial_image_index?: unknown;
  output_format?: unknown;
  usage?: unknown;
  error?: { type?: unknown; code?: unknown } | null;
}

/**
 * A streamed Images API answer (`image_generation.*` / `image_edit.*` events): each
 * `partial_image` handed to the sink as a preview, the `completed` event's image and usage taken
 * as a non-streamed answer's `data[0]`.
 */
async function streamedImage(call: Call, options: StreamOptions, sink: OutputSink, format: string): Promise<{ json: unknown; requestId: string | null }> {
  let final: ImageEvent | null = null;
  let previews = 0;
  const answer = await postStream(call, options, (ev) => {
    const data = eventJson(ev) as ImageEvent | null;
    if (!data || typeof data !== 'object' || Array.isArray(data)) throw malformedEvent();
    const type = typeof data.type === 'string' ? data.type : ev.event;
    if (type === 'error' || data.error) throw streamErrorEvent(data.error?.type ?? data.error?.code);
    if (type.endsWith('.partial_image')) {
      if (typeof data.b64_json !== 'string' || data.b64_json === '') throw malformedEvent();
      const index = nonNegInt(data.partial_image_index) ?? previews;
      previews++;
      sink.preview(index, decodeBase64Image(data.b64_json), data.output_format === undefined ? format : mediaTypeOf(data.output_format));
      return;
    }
    if (type.endsWith('.completed')) {
      final = data;
      return 'stop';
    }
  });
  if (answer.json !== undefined) return answer as { json: unknown; requestId: string | null };
  const done = final as ImageEvent | null;
  return { json: { data: [{ b64_json: done?.b64_json }], ...(done?.usage === undefined ? {} : { usage: done.usage }) }, requestId: answer.requestId };
}

/** o1-mini and o1-preview take neither system nor developer messages: instructions go first in the user turn. */
const NO_INSTRUCTION_ROLE = /^o1-(mini|preview)/;

export function createOpenAIProvider(options: AdapterOptions = {}): Provider {
  const authOf = authHeaders(options, 'authorization', 'Bearer');

  return {
    async generateText(req: TextRequest): Promise<TextOutput> {
      const opts = entryOptions(options, req.model);
      const family = familyOf(req.model);
      const name = upstreamModel(req.model);
      const kind = outputKind(req);
      const system = systemPrompt(kind);
      const prompt = userPrompt(req.prompt, req.textInputs);
      const fold = family === 'reasoning' && NO_INSTRUCTION_ROLE.test(name.toLowerCase());
      const userText = fold ? `${system}\n\n${prompt}` : prompt;
      // Text-only models never see images; the reservation does not count them either.
      const images = req.model.supports_image_input ? req.images : [];
      const user = images.length
        ? [{ type: 'text', text: userText }, ...images.map((img) => ({ type: 'image_url', image_url: { url: dataUrl(img) } }))]
        : userText;
      // OpenAI: "with o1 models and newer, developer messages replace the previous system messages".
      const messages = fold
        ? [{ role: 'user', content: user }]
        : [{ role: family === 'reasoning' ? 'developer' : 'system', content: system }, { role: 'user', content: user }];
      // max_completion_tokens bounds visible output and reasoning together; compatible servers
      // (OpenRouter, Ollama, vLLM, llama.cpp) document max_tokens.
      const cap = family === 'compatible' ? 'max_tokens' : 'max_completion_tokens';
      const sink = streams(req.model, req.sink);
      const call: Call = {
        url: endpoint(req.model, '/chat/completions'),
        headers: { 'content-type': 'application/json', accept: sink ? 'text/event-stream' : 'application/json', ...authOf(req.model) },
        body: JSON.stringify(body({}, req.model, {
          model: name, messages, [cap]: req.maxTokens,
          ...(sink ? { stream: true, stream_options: { include_usage: true } } : {}),
        })),
        signal: req.signal,
      };
      const { json, requestId, whole } = sink ? await streamedChat(call, opts, sink) : { ...(await postJson(call, opts)), whole: false };
      const choice = firstChoice(json);
      // A server that ignored `stream` answered in one piece: its text is the one delta.
      if (whole && sink && choice.text !== '') sink.text(choice.text);
      if (choice.text.trim() === '') {
        throw rejected(
          choice.refusal || choice.finish === 'content_filter'
            ? 'upstream model declined the request'
            : choice.finish === 'length'
              ? `upstream model reached its output token limit before answering (raise maxOutputTokens${family === 'reasoning' ? ' or lower reasoning_effort' : ''})`
              : 'upstream model returned no content',
        );
      }
      const usage = billedUsage(json, { inputChars: system.length + prompt.length, images: images.length, maxTokens: req.maxTokens, family }, choice);
      const id = (json as { id?: unknown }).id;
      return {
        text: stripCodeFences(choice.text, kind),
        usage,
        providerRequestId: requestId ?? responseId(id),
      };
    },

    async generateImage(req: ImageRequest): Promise<ImageOutput> {
      const opts = entryOptions(options, req.model);
      const family = familyOf(req.model);
      if (family === 'chat' || family === 'reasoning') throw misconfigured(`catalog entry ${req.model.id} is invalid: upstream.family ${family} is for text and svg entries`);
      const prompt = imagePrompt(req.prompt, req.textInputs);
      const maxChars = PROMPT_CHAR_LIMITS[family];
      if (maxChars !== undefined && [...prompt].length > maxChars) {
        throw rejected(`the prompt is too long for this model (at most ${maxChars} characters, text inputs included)`);
      }
      // An operator's bound on the text tokens a token-billed image model can consume (docs/providers.md).
      const maxBytes = upstreamSetting(req.model, 'maxPromptBytes');
      if (typeof maxBytes === 'number' && Buffer.byteLength(prompt, 'utf8') > maxBytes) {
        throw rejected(`the prompt is too long for this model (at most ${maxBytes} bytes of UTF-8, text inputs included)`);
      }
      const sizes = upstreamSetting(req.model, 'imageSizes') as Partial<Record<AspectRatio, string>> | undefined;
      // Partial images are asked for only with a sink and `upstream.partialImages` ≥ 1 (gpt-image, or a compatible server told so).
      const sink = streams(req.model, req.sink);
      const partials = sink && (family === 'gpt-image' || family === 'compatible') ? partialImages(req.model) : 0;
      // gpt-image models always return base64 and reject response_format; dall-e and compatible
      // servers default to a URL, so base64 is asked for.
      const fields = body(
        family === 'gpt-image' ? {} : { response_format: 'b64_json' },
        req.model,
        {
          model: upstreamModel(req.model), prompt, n: 1, size: sizes?.[req.aspectRatio] ?? FAMILY_SIZES[family].byRatio[req.aspectRatio],
          ...(partials ? { stream: true, partial_images: partials } : {}),
        },
      );
      const images = req.model.supports_image_input ? req.images : [];
      if (family === 'dall-e-2' && images.length > 1) throw rejected('this model edits one reference image at a time');
      let payload: string | FormData;
      let path: string;
      const headers: Record<string, string> = { accept: 'application/json', ...authOf(req.model) };
      if (images.length) {
        // Reference images go to the edits endpoint, which takes multipart uploads: gpt-image
        // models an `image[]` array, dall-e-2 a single `image`.
        path = '/images/edits';
        const field = family === 'gpt-image' || (family === 'compatible' && images.length > 1) ? 'image[]' : 'image';
        const form = new FormData();
        for (const [k, v] of Object.entries(fields)) form.append(k, typeof v === 'string' ? v : JSON.stringify(v));
        images.forEach((img, i) => {
          if (!('data' in img)) throw misconfigured('image inputs must be uploaded for this model');
          const ext = img.mediaType.split('/')[1] ?? 'png';
          form.append(field, new Blob([new Uint8Array(img.data)], { type: img.mediaType }), `input-${i + 1}.${ext}`);
        });
        payload = form;
      } else {
        path = '/images/generations';
        headers['content-type'] = 'application/json';
        payload = JSON.stringify(fields);
      }
      const call: Call = { url: endpoint(req.model, path), headers, body: payload, signal: req.signal };
      const { json, requestId } = partials
        ? await streamedImage({ ...call, headers: { ...headers, accept: 'text/event-stream' } }, opts, sink!, mediaTypeOf(entryParams(req.model).output_format))
        : await postJson(call, opts);
      const item = (json as { data?: Array<{ b64_json?: unknown; url?: unknown }> })?.data?.[0];
      let data: Buffer;
      if (typeof item?.b64_json === 'string' && item.b64_json.length > 0) {
        data = decodeBase64Image(item.b64_json);
      } else if (typeof item?.url === 'string') {
        data = await downloadImage(item.url, { trustedOrigin: new URL(endpoint(req.model, '/')).origin, maxBytes: options.maxImageBytes, timeoutMs: opts.timeoutMs, signal: req.signal });
      } else {
        throw badResponse('upstream provider returned no image');
      }
      return { ...(await toImageOutput(data, req.aspectRatio)), providerRequestId: requestId };
    },
  };
}
