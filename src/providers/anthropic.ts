// The `anthropic` adapter: Anthropic's Messages API (POST /v1/messages) for text and svg catalog
// entries — code, screens, GLSL, SVG. Anthropic has no image generation, so images are a config error.

import { IMAGE_INPUT_TOKENS } from './costs.ts';
import { stripCodeFences } from './fences.ts';
import { eventJson, malformedEvent, postJson, postStream, streamErrorEvent, type Call, type StreamOptions } from './http.ts';
import { systemPrompt, userPrompt } from './prompts.ts';
import { outputKind, type ImageInputData, type ImageOutput, type OutputSink, type Provider, type TextOutput, type TextRequest } from './types.ts';
import { authHeaders, badResponse, entryOptions, baseUrl, misconfigured, nonNegInt, rejected, responseId, streams, upstreamModel, withParams, type AdapterOptions } from './upstream.ts';

const DEFAULT_BASE_URL = 'https://api.anthropic.com/v1';
/** The only stable version of the Messages API; newer features come as `anthropic-beta` headers. */
const API_VERSION = '2023-06-01';
/** The image media types the Messages API takes as base64 sources. */
const MEDIA_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
/** Request fields `upstream.params` may not replace: they carry the prompt, the billed cap and the JSON reply. */
const OWN_FIELDS = new Set(['model', 'messages', 'system', 'max_tokens', 'stream']);

function imageBlock(img: ImageInputData): Record<string, unknown> {
  if (!('data' in img)) return { type: 'image', source: { type: 'url', url: img.url } };
  if (!MEDIA_TYPES.has(img.mediaType)) {
    throw rejected('image inputs must be PNG, JPEG, GIF or WebP for this model');
  }
  return { type: 'image', source: { type: 'base64', media_type: img.mediaType, data: img.data.toString('base64') } };
}

interface Message {
  id?: unknown;
  type?: unknown;
  content?: Array<{ type?: unknown; text?: unknown }>;
  stop_reason?: unknown;
  usage?: Record<string, unknown>;
}

interface StreamEvent {
  type?: unknown;
  message?: Message | null;
  index?: unknown;
  content_block?: { type?: unknown; text?: unknown } | null;
  delta?: { type?: unknown; text?: unknown; stop_reason?: unknown } | null;
  usage?: Record<string, unknown> | null;
  error?: { type?: unknown } | null;
}

/**
 * A streamed Message (message_start, content_block_start/delta/stop, message_delta, message_stop;
 * `ping` and unknown events skipped, `error` an error), text deltas handed to the sink as they
 * arrive, put back together into the Message a non-streamed call returns: the text blocks, the
 * stop reason, message_start's usage updated by message_delta's. Thinking deltas are not output.
 * `whole`: the server ignored `stream` and answered in one piece.
 */
async function streamedMessage(call: Call, options: StreamOptions, sink: OutputSink): Promise<{ json: unknown; requestId: string | null; whole: boolean }> {
  let msg: Message | null = null;
  const blocks: Array<{ type: unknown; text: string }> = [];
  const answer = await postStream(call, options, (ev) => {
    const e = eventJson(ev) as StreamEvent | null;
    if (!e || typeof e !== 'object' || Array.isArray(e)) throw malformedEvent();
    const type = typeof e.type === 'string' ? e.type : ev.event;
    if (type === 'error') throw streamErrorEvent(e.error?.type);
    if (type === 'message_start') {
      if (!e.message || typeof e.message !== 'object') throw malformedEvent();
      msg = { ...e.message, content: [], usage: { ...e.message.usage } };
      return;
    }
    if (type === 'message_stop') return 'stop';
    if (!msg) return; // nothing before message_start counts (ping)
    const m = msg as Message;
    if (type === 'content_block_start') {
      const block = e.content_block;
      const i = nonNegInt(e.index) ?? blocks.length;
      const text = block?.type === 'text' && typeof block.text === 'string' ? block.text : '';
      blocks[i] = { type: block?.type, text };
      if (text !== '') sink.text(text);
    } else if (type === 'content_block_delta') {
      const i = nonNegInt(e.index) ?? blocks.length - 1;
      const block = blocks[i];
      if (block?.type === 'text' && e.delta?.type === 'text_delta' && typeof e.delta.text === 'string' && e.delta.text !== '') {
        block.text += e.delta.text;
        sink.text(e.delta.text);
      }
    } else if (type === 'message_delta') {
      if (e.delta?.stop_reason !== undefined) m.stop_reason = e.delta.stop_reason;
      // Its counts are cumulative: they replace message_start's.
      if (e.usage && typeof e.usage === 'object') {
        for (const [k, v] of Object.entries(e.usage)) if (v !== null && v !== undefined) m.usage = { ...m.usage, [k]: v };
      }
    }
  });
  if (answer.json !== undefined) return { json: answer.json, requestId: answer.requestId, whole: true };
  const m = msg as Message | null;
  return { json: m ? { ...m, content: blocks.filter(Boolean) } : null, requestId: answer.requestId, whole: false };
}

export function createAnthropicProvider(options: AdapterOptions = {}): Provider {
  const authOf = authHeaders(options, 'x-api-key');

  return {
    async generateImage(): Promise<ImageOutput> {
      throw misconfigured('this model cannot generate images');
    },

    async generateText(req: TextRequest): Promise<TextOutput> {
      const opts = entryOptions(options, req.model);
      const kind = outputKind(req);
      const system = systemPrompt(kind);
      const prompt = userPrompt(req.prompt, req.textInputs);
      // Text-only entries never send images; the reservation does not count them either.
      const images = req.model.supports_image_input ? req.images : [];

      const sink = streams(req.model, req.sink);
      const call: Call = {
        url: `${baseUrl(req.model, DEFAULT_BASE_URL)}/messages`,
        headers: {
          'content-type': 'application/json',
          accept: sink ? 'text/event-stream' : 'application/json',
          'anthropic-version': API_VERSION,
          ...authOf(req.model),
        },
        // `upstream.params` (e.g. temperature, top_p, metadata) merged in; a null value removes a field.
        body: JSON.stringify(withParams({
          model: upstreamModel(req.model),
          max_tokens: req.maxTokens,
          system,
          messages: [{ role: 'user', content: [{ type: 'text', text: prompt }, ...images.map(imageBlock)] }],
          ...(sink ? { stream: true } : {}),
        }, req.model.upstream?.params, OWN_FIELDS)),
        signal: req.signal,
      };
      const { json, requestId, whole } = sink ? await streamedMessage(call, opts, sink) : { ...(await postJson(call, opts)), whole: false };

      const msg = json as Message | null;
      if (msg?.type !== 'message' || !Array.isArray(msg.content)) throw badResponse('upstream provider returned no message');
      // Only text blocks are output; thinking blocks (if an operator enables them) are billed, not returned.
      const text = msg.content.map((b) => (b?.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('');
      // A server that ignored `stream` answered in one piece: its text is the one delta.
      if (whole && sink && text !== '') sink.text(text);
      if (msg.stop_reason === 'refusal') {
        throw rejected('upstream model declined the request');
      }
      if (text.trim() === '') {
        throw rejected('upstream model returned no content');
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
        providerRequestId: requestId ?? responseId(msg.id),
      };
    },
  };
}
