// A real Gemini API (generativelanguage v1beta) server on loopback for adapter tests. It is as
// strict as Google about what it accepts (x-goog-api-key, the models/{model}:generateContent path,
// contents/parts shapes, known generationConfig fields, no unknown names — camelCase or snake_case
// like Google's JSON mapping) and answers in Gemini's shapes: text parts for text models, an
// inlineData image for image models (sized per the documented aspect-ratio table). Replies are
// scriptable and every request is recorded.

import type { IncomingMessage } from 'node:http';
import { png, sse, startLoopbackPeer, streamOf, type LoopbackPeer, type PeerReply, type PeerRequest as LoopbackRequest, type Script as LoopbackScript, type StreamOpts } from './_peer.ts';

export { png, type PeerReply, type StreamOpts } from './_peer.ts';

export interface PeerRequest extends LoopbackRequest {
  /** The `{model}` of the path, or null. */
  model: string | null;
  /** Whether it was `:streamGenerateContent` (with `alt=sse`: the only form this peer streams). */
  stream: boolean;
  /** The error the peer answered itself because the request broke the protocol, else null. */
  invalid: { code: number; status: string; message: string } | null;
}

export type Script = LoopbackScript<PeerRequest>;

export interface GeminiPeer extends LoopbackPeer<PeerRequest> {
  /** Base URL for a catalog entry's `upstream.baseUrl` (ends in /v1beta). */
  url: string;
}

export interface UsageMetadata {
  promptTokenCount: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  cachedContentTokenCount?: number;
}

let seq = 0;

function answer(parts: unknown[], finishReason: string | null, usage: UsageMetadata | null): PeerReply {
  const total = usage ? usage.promptTokenCount + (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0) : 0;
  return {
    json: {
      candidates: [{ content: { parts, role: 'model' }, ...(finishReason ? { finishReason } : {}), index: 0 }],
      ...(usage ? { usageMetadata: { ...usage, totalTokenCount: total } } : {}),
      modelVersion: 'gemini-peer',
      responseId: `resp_peer${++seq}`,
    },
  };
}

export function textReply(text: string | string[], usage: UsageMetadata | null = { promptTokenCount: 12, candidatesTokenCount: 34 }, finishReason = 'STOP'): PeerReply {
  return answer((Array.isArray(text) ? text : [text]).map((t) => ({ text: t })), finishReason, usage);
}

/**
 * A streamed answer as `streamGenerateContent?alt=sse` writes it: one GenerateContentResponse
 * chunk per piece (each with the usage so far), the last one carrying the finishReason and the
 * final usageMetadata; `thoughts` come first as thought parts. Without the end marker the
 * finishReason chunk is left out. The error event is Google's error object.
 */
export function geminiStream(
  pieces: string[],
  usage: UsageMetadata | null = { promptTokenCount: 12, candidatesTokenCount: 34 },
  opts: StreamOpts & { finishReason?: string; thoughts?: string[] } = {},
): PeerReply {
  const id = `resp_peer${++seq}`;
  const chunk = (parts: unknown[], finishReason?: string, u: UsageMetadata | null = usage ? { promptTokenCount: usage.promptTokenCount } : null) => sse({
    candidates: [{ content: { parts, role: 'model' }, ...(finishReason ? { finishReason } : {}), index: 0 }],
    ...(u ? { usageMetadata: { ...u, totalTokenCount: u.promptTokenCount + (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0) } } : {}),
    modelVersion: 'gemini-peer',
    responseId: id,
  });
  const events = [
    ...(opts.thoughts ?? []).map((t) => chunk([{ text: t, thought: true }])),
    ...pieces.slice(0, -1).map((p) => chunk([{ text: p }])),
  ];
  const last = pieces.at(-1);
  const end = [chunk(last === undefined ? [] : [{ text: last }], opts.finishReason ?? 'STOP', usage)];
  if (opts.noEnd && last !== undefined) events.push(chunk([{ text: last }]));
  const error = sse({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } });
  return streamOf(events, opts, end, error);
}

/** gemini-2.5-flash-image's output sizes per aspect ratio (Gemini API image generation docs). */
export const IMAGE_SIZES: Record<string, [number, number]> = {
  '1:1': [1024, 1024], '2:3': [832, 1248], '3:2': [1248, 832], '3:4': [864, 1184], '4:3': [1184, 864],
  '4:5': [896, 1152], '5:4': [1152, 896], '9:16': [768, 1344], '16:9': [1344, 768], '21:9': [1536, 672],
};

export async function imageReply(width = 1024, height = 1024, opts: { caption?: string; thoughtImage?: boolean } = {}): Promise<PeerReply> {
  const parts: unknown[] = [];
  if (opts.thoughtImage) parts.push({ inlineData: { mimeType: 'image/png', data: (await png(64, 64, '#ff0000')).toString('base64') }, thought: true });
  if (opts.caption) parts.push({ text: opts.caption });
  parts.push({ inlineData: { mimeType: 'image/png', data: (await png(width, height)).toString('base64') } });
  return answer(parts, 'STOP', { promptTokenCount: 20, candidatesTokenCount: 1290 });
}

/** A 200 whose candidate ended with `reason` and no content (SAFETY, RECITATION, IMAGE_SAFETY, …). */
export function finishReply(reason: string, usage: UsageMetadata | null = { promptTokenCount: 12 }): PeerReply {
  return { json: { candidates: [{ finishReason: reason, index: 0 }], ...(usage ? { usageMetadata: usage } : {}), responseId: `resp_peer${++seq}` } };
}

/** A prompt blocked before generation: no candidates, promptFeedback.blockReason. */
export function blockedReply(reason: string): PeerReply {
  return { json: { promptFeedback: { blockReason: reason }, usageMetadata: { promptTokenCount: 12, totalTokenCount: 12 }, responseId: `resp_peer${++seq}` } };
}

const STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED',
};

/** Google's error envelope: {error: {code, message, status}}. */
export function errorReply(code: number, message = 'upstream says no', headers: Record<string, string> = {}, status = STATUS[code] ?? 'UNKNOWN'): PeerReply {
  return { status: code, headers, json: { error: { code, message, status } } };
}

type Invalid = NonNullable<PeerRequest['invalid']>;
const invalid = (message: string): Invalid => ({ code: 400, status: 'INVALID_ARGUMENT', message });

/** Google's JSON mapping accepts a field by its proto name (snake_case) or its JSON name (camelCase). */
const camel = (k: string) => k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

function unknownName(obj: Record<string, unknown>, known: Set<string>, at: string): Invalid | null {
  for (const k of Object.keys(obj)) {
    if (!known.has(camel(k))) return invalid(`Invalid JSON payload received. Unknown name "${k}" at '${at}': Cannot find field.`);
  }
  return null;
}

const get = (obj: any, name: string) => obj?.[name] ?? obj?.[name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)];

const REQUEST_FIELDS = new Set(['contents', 'systemInstruction', 'generationConfig', 'safetySettings', 'tools', 'toolConfig', 'cachedContent']);
const CONTENT_FIELDS = new Set(['role', 'parts']);
const PART_FIELDS = new Set(['text', 'inlineData', 'fileData', 'thought', 'thoughtSignature', 'functionCall', 'functionResponse', 'videoMetadata', 'executableCode', 'codeExecutionResult']);
const DATA_FIELDS = new Set(['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse', 'executableCode', 'codeExecutionResult']);
const CONFIG_FIELDS = new Set([
  'stopSequences', 'responseMimeType', 'responseSchema', 'responseJsonSchema', 'responseModalities', 'candidateCount',
  'maxOutputTokens', 'temperature', 'topP', 'topK', 'seed', 'presencePenalty', 'frequencyPenalty', 'responseLogprobs',
  'logprobs', 'enableEnhancedCivicAnswers', 'speechConfig', 'thinkingConfig', 'imageConfig', 'mediaResolution',
]);
const INLINE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/heic', 'image/heif']);

function checkContent(c: any, at: string): Invalid | null {
  if (!c || typeof c !== 'object') return invalid(`Invalid value at '${at}'`);
  const u = unknownName(c, CONTENT_FIELDS, at);
  if (u) return u;
  if (c.role !== undefined && c.role !== 'user' && c.role !== 'model') return invalid(`Please use a valid role: user, model.`);
  if (!Array.isArray(c.parts) || c.parts.length === 0) return invalid(`* GenerateContentRequest.${at}.parts: contents.parts must not be empty.`);
  for (const [i, p] of c.parts.entries()) {
    const where = `${at}.parts[${i}]`;
    if (!p || typeof p !== 'object') return invalid(`Invalid value at '${where}'`);
    const u2 = unknownName(p, PART_FIELDS, where);
    if (u2) return u2;
    const data = Object.keys(p).filter((k) => DATA_FIELDS.has(camel(k)));
    if (data.length !== 1) return invalid(`* GenerateContentRequest.${where}.data: required oneof field 'data' must have one initialized field`);
    const inline = get(p, 'inlineData');
    if (inline !== undefined) {
      const mime = get(inline, 'mimeType');
      if (typeof mime !== 'string' || mime === '') return invalid(`* GenerateContentRequest.${where}.inline_data.mime_type: mime_type must be set`);
      if (mime.startsWith('image/') && !INLINE_TYPES.has(mime)) return invalid(`Unsupported MIME type: ${mime}`);
      if (typeof inline.data !== 'string' || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(inline.data)) return invalid(`Invalid value at '${where}.inline_data.data' (TYPE_BYTES), Base64 decoding failed`);
    } else if (p.text !== undefined && typeof p.text !== 'string') {
      return invalid(`Invalid value at '${where}.text' (TYPE_STRING)`);
    }
  }
  return null;
}

function validate(req: IncomingMessage, model: string | null, json: any, key: string | null, imageModel: (m: string) => boolean): Invalid | null {
  if (req.method !== 'POST' || model === null) return { code: 404, status: 'NOT_FOUND', message: 'Requested entity was not found.' };
  const given = req.headers['x-goog-api-key'] ?? new URL(req.url ?? '/', 'http://peer').searchParams.get('key');
  if (!given) return { code: 403, status: 'PERMISSION_DENIED', message: 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.' };
  if (key !== null && given !== key) return invalid('API key not valid. Please pass a valid API key.');
  if (!json || typeof json !== 'object' || Array.isArray(json)) return invalid('Invalid JSON payload received.');
  const u = unknownName(json, REQUEST_FIELDS, '');
  if (u) return u;
  const contents = json.contents;
  if (!Array.isArray(contents) || contents.length === 0) return invalid('* GenerateContentRequest.contents: contents is not specified');
  for (const [i, c] of contents.entries()) {
    const e = checkContent(c, `contents[${i}]`);
    if (e) return e;
  }
  const sys = get(json, 'systemInstruction');
  if (sys !== undefined) {
    const e = checkContent(sys, 'system_instruction');
    if (e) return e;
  }
  const config = get(json, 'generationConfig');
  if (config !== undefined) {
    if (!config || typeof config !== 'object') return invalid(`Invalid value at 'generation_config'`);
    const e = unknownName(config, CONFIG_FIELDS, 'generation_config');
    if (e) return e;
    const max = get(config, 'maxOutputTokens');
    if (max !== undefined && (!Number.isInteger(max) || max < 1)) return invalid(`Invalid value at 'generation_config.max_output_tokens' (TYPE_INT32)`);
    const modalities = get(config, 'responseModalities');
    if (modalities !== undefined) {
      if (!Array.isArray(modalities) || modalities.some((m: unknown) => !['TEXT', 'IMAGE', 'AUDIO'].includes(String(m).toUpperCase()))) {
        return invalid(`Invalid value at 'generation_config.response_modalities'`);
      }
      if (!imageModel(model) && modalities.some((m: string) => m.toUpperCase() === 'IMAGE')) {
        return invalid('The requested combination of response modalities (TEXT, IMAGE) is not supported by the model.');
      }
    }
    const ratio = get(get(config, 'imageConfig'), 'aspectRatio');
    if (ratio !== undefined && !(ratio in IMAGE_SIZES)) return invalid(`Invalid value at 'generation_config.image_config.aspect_ratio'`);
  }
  return null;
}

/**
 * `key`: the only API key accepted (null accepts any). Models whose name contains "image" are
 * image models: by default they answer with an image at the requested aspect ratio.
 */
export async function startGeminiPeer(opts: { key?: string | null } = {}): Promise<GeminiPeer> {
  const key = opts.key ?? null;
  const imageModel = (m: string) => m.includes('image');

  async function defaultReply(r: PeerRequest): Promise<PeerReply> {
    if (r.stream) return imageModel(r.model!) ? errorReply(400, 'this peer streams text models only') : geminiStream(['peer ', 'reply']);
    if (!imageModel(r.model!)) return textReply('peer reply');
    const ratio = get(get(get(r.json, 'generationConfig'), 'imageConfig'), 'aspectRatio') ?? '1:1';
    const [w, h] = IMAGE_SIZES[ratio]!;
    return imageReply(w, h, { caption: 'Here is your image.' });
  }

  const peer = await startLoopbackPeer<PeerRequest>(defaultReply, {
    describe(req, base) {
      const m = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(base.path);
      const stream = m?.[2] === 'streamGenerateContent';
      // Without alt=sse Google streams a JSON array, which Kiln never asks for.
      const sseAsked = new URL(req.url ?? '/', 'http://peer').searchParams.get('alt') === 'sse';
      const model = m && (!stream || sseAsked) ? decodeURIComponent(m[1]!) : null;
      return { ...base, model, stream, invalid: validate(req, model, base.json, key, imageModel) };
    },
    refuse: (r) => (r.invalid ? errorReply(r.invalid.code, r.invalid.message, {}, r.invalid.status) : null),
    contentType: 'application/json; charset=UTF-8',
  });
  return { ...peer, url: `${peer.origin}/v1beta` };
}
