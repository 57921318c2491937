// A real OpenAI-protocol HTTP server on loopback for adapter tests: scriptable replies (success,
// delays, 429, 5xx, malformed bodies, hangs, resets) and a record of every request it received.
// For OpenAI's own model names it is as strict as OpenAI about their documented parameters
// (gpt-image rejects response_format and unknown sizes, reasoning models reject max_tokens, …),
// answering with OpenAI's 400 error shape before any scripted reply; other names are served like
// a lenient compatible server.

import type { IncomingMessage } from 'node:http';
import sharp from 'sharp';
import { png, sse, startLoopbackPeer, streamOf, type LoopbackPeer, type PeerReply, type PeerRequest as LoopbackRequest, type Script as LoopbackScript, type StreamOpts } from './_peer.ts';

export { png, type PeerReply, type StreamOpts } from './_peer.ts';

export interface PeerRequest extends LoopbackRequest {
  /** Multipart fields (files summarised) for /images/edits. */
  form: Record<string, Array<string | { filename: string; type: string; size: number }>> | null;
}

export type Script = LoopbackScript<PeerRequest>;

export interface OpenAIPeer extends LoopbackPeer<PeerRequest> {
  /** Base URL to put in a catalog entry's `upstream.baseUrl` (ends in /v1). */
  url: string;
}

export interface PeerUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
  completion_tokens_details?: { reasoning_tokens: number };
}

/** A chat completion; total_tokens defaults to prompt + completion, as OpenAI reports it. */
export function chatReply(content: string, usage: PeerUsage = { prompt_tokens: 12, completion_tokens: 34 }, finish = 'stop'): PeerReply {
  return {
    headers: { 'x-request-id': 'req_peer_chat' },
    json: {
      id: 'chatcmpl-peer',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, finish_reason: finish }],
      usage: { total_tokens: usage.prompt_tokens + usage.completion_tokens, ...usage },
    },
  };
}

/**
 * A streamed chat completion as OpenAI writes it: a role chunk, one chunk per delta, a chunk with
 * the finish_reason, then (usage not null, as `stream_options.include_usage` asks) the usage chunk
 * with `choices: []`, then `data: [DONE]`. `refusal` deltas and `reasoning` deltas (as vLLM and
 * OpenRouter send) go before the content. The error event is OpenRouter's mid-stream error chunk.
 */
export function chatStream(
  deltas: string[],
  usage: PeerUsage | null = { prompt_tokens: 12, completion_tokens: 34 },
  opts: StreamOpts & { finish?: string; refusal?: string[]; reasoning?: string[]; errorCode?: number } = {},
): PeerReply {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    sse({ id: 'chatcmpl-peer', object: 'chat.completion.chunk', created: 1, model: 'peer', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null });
  const events = [
    chunk({ role: 'assistant', content: '', refusal: null }),
    ...(opts.reasoning ?? []).map((r) => chunk({ reasoning: r })),
    ...(opts.refusal ?? []).map((r) => chunk({ refusal: r })),
    ...deltas.map((d) => chunk({ content: d })),
    chunk({}, opts.finish ?? 'stop'),
    ...(usage ? [sse({ id: 'chatcmpl-peer', object: 'chat.completion.chunk', created: 1, model: 'peer', choices: [], usage: { total_tokens: usage.prompt_tokens + usage.completion_tokens, ...usage } })] : []),
  ];
  const error = sse({ id: 'chatcmpl-peer', object: 'chat.completion.chunk', error: { code: opts.errorCode ?? 502, message: 'upstream says no' }, choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error' }] });
  return streamOf(events, { ...opts, headers: { 'x-request-id': 'req_peer_chat', ...opts.headers } }, [sse('[DONE]')], error);
}

/**
 * A streamed Images API answer: `partials` as `{prefix}.partial_image` events (indexes from 0),
 * then `{prefix}.completed` with `final` and gpt-image's usage; `prefix` is image_generation or
 * image_edit. The error event is OpenAI's `error` event.
 */
export function imageStream(partials: Buffer[], final: Buffer, opts: StreamOpts & { prefix?: 'image_generation' | 'image_edit'; format?: string } = {}): PeerReply {
  const prefix = opts.prefix ?? 'image_generation';
  const common = { created_at: 1, size: '1024x1024', quality: 'medium', background: 'opaque', output_format: opts.format ?? 'png' };
  const events = partials.map((p, i) => sse({ type: `${prefix}.partial_image`, b64_json: p.toString('base64'), partial_image_index: i, ...common }, `${prefix}.partial_image`));
  const completed = sse({
    type: `${prefix}.completed`, b64_json: final.toString('base64'), ...common,
    usage: { input_tokens: 20, input_tokens_details: { text_tokens: 20, image_tokens: 0 }, output_tokens: 1056, total_tokens: 1076 },
  }, `${prefix}.completed`);
  const error = sse({ type: 'error', error: { type: 'server_error', code: null, message: 'upstream says no' } }, 'error');
  return streamOf(events, { ...opts, headers: { 'x-request-id': 'req_peer_image', ...opts.headers } }, [completed], error);
}

export async function imageReply(width = 1536, height = 1024): Promise<PeerReply> {
  const data = await png(width, height);
  return { headers: { 'x-request-id': 'req_peer_image' }, json: { created: 1, data: [{ b64_json: data.toString('base64') }] } };
}

export function errorReply(status: number, type: string, code: string | null, message = 'upstream says no', headers: Record<string, string> = {}, param: string | null = null): PeerReply {
  return { status, headers, json: { error: { message, type, code, param } } };
}

/** OpenAI's 400 for a request its model does not accept. */
export function invalidRequest(message: string, param: string | null, code: string): PeerReply {
  return errorReply(400, 'invalid_request_error', code, message, {}, param);
}

// ---- OpenAI's documented parameters per model family (by OpenAI's model names) ----

export type PeerFamily = 'reasoning' | 'chat' | 'gpt-image' | 'dall-e-2' | 'dall-e-3' | null;

export function peerFamily(model: unknown): PeerFamily {
  const m = typeof model === 'string' ? model.toLowerCase() : '';
  if (/^(gpt-image-|chatgpt-image)/.test(m)) return 'gpt-image';
  if (m === 'dall-e-2' || m === 'dall-e-3') return m;
  if (/^(o[1-9](-|$)|codex-mini|gpt-5)/.test(m) && !m.includes('-chat')) return 'reasoning';
  if (/^(gpt-4|gpt-3\.5|chatgpt-|gpt-5)/.test(m)) return 'chat';
  return null;
}

const list = (xs: readonly string[]) => xs.length === 1 ? `'${xs[0]}'` : `${xs.slice(0, -1).map((x) => `'${x}'`).join(', ')}, and '${xs.at(-1)}'`;

function oneOf(fields: Record<string, unknown>, param: string, allowed: readonly string[]): PeerReply | null {
  if (!(param in fields) || fields[param] === null) return null;
  const v = fields[param];
  return typeof v === 'string' && allowed.includes(v) ? null : invalidRequest(`Invalid value: '${String(v)}'. Supported values are: ${list(allowed)}.`, param, 'invalid_value');
}

const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'];

function chatRules(body: any): PeerReply | null {
  if (!body || typeof body !== 'object') return null;
  const family = peerFamily(body.model);
  if (family === 'reasoning') {
    if ('max_tokens' in body) {
      return invalidRequest("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", 'max_tokens', 'unsupported_parameter');
    }
    for (const p of ['temperature', 'top_p']) {
      if (p in body && body[p] !== 1) {
        return invalidRequest(`Unsupported value: '${p}' does not support ${JSON.stringify(body[p])} with this model. Only the default (1) value is supported.`, p, 'unsupported_value');
      }
    }
    const effort = oneOf(body, 'reasoning_effort', REASONING_EFFORTS);
    if (effort) return effort;
    if (/^o1-(mini|preview)/.test(String(body.model))) {
      const i = (body.messages ?? []).findIndex((m: any) => m?.role === 'system' || m?.role === 'developer');
      if (i >= 0) return invalidRequest(`Unsupported value: 'messages[${i}].role' does not support '${body.messages[i].role}' with this model.`, `messages[${i}].role`, 'unsupported_value');
    }
  } else if (family === 'chat' && 'reasoning_effort' in body) {
    return invalidRequest("Unsupported parameter: 'reasoning_effort' is not supported with this model.", 'reasoning_effort', 'unsupported_parameter');
  }
  return null;
}

const SIZES = {
  'gpt-image': ['1024x1024', '1024x1536', '1536x1024', 'auto'],
  'dall-e-3': ['1024x1024', '1024x1792', '1792x1024'],
  'dall-e-2': ['256x256', '512x512', '1024x1024'],
} as const;
const QUALITY = { 'gpt-image': ['low', 'medium', 'high', 'auto'], 'dall-e-3': ['standard', 'hd', 'auto'], 'dall-e-2': ['standard', 'auto'] } as const;
const PROMPT_MAX = { 'gpt-image': 32_000, 'dall-e-3': 4_000, 'dall-e-2': 1_000 } as const;
const GPT_IMAGE_COMMON = ['prompt', 'model', 'n', 'quality', 'size', 'background', 'moderation', 'output_format', 'output_compression', 'partial_images', 'stream', 'user'];
const PARAMS = {
  generations: {
    'gpt-image': GPT_IMAGE_COMMON,
    'dall-e-3': ['prompt', 'model', 'n', 'quality', 'response_format', 'size', 'style', 'user'],
    'dall-e-2': ['prompt', 'model', 'n', 'quality', 'response_format', 'size', 'user'],
  },
  edits: {
    'gpt-image': [...GPT_IMAGE_COMMON, 'image', 'image[]', 'mask', 'input_fidelity'],
    'dall-e-2': ['prompt', 'model', 'n', 'quality', 'response_format', 'size', 'user', 'image', 'mask'],
  },
} as const;

/** JSON body or multipart fields, flattened: one value per field, files counted. */
function imageFields(req: PeerRequest): { fields: Record<string, unknown>; files: number } {
  if (req.form) {
    const fields: Record<string, unknown> = {};
    let files = 0;
    for (const [k, vs] of Object.entries(req.form)) {
      fields[k] = typeof vs[0] === 'string' ? vs[0] : '<file>';
      if (k === 'image' || k === 'image[]') files += vs.length;
    }
    return { fields, files };
  }
  return { fields: req.json && typeof req.json === 'object' ? req.json : {}, files: 0 };
}

function imageRules(req: PeerRequest, edits: boolean): PeerReply | null {
  const { fields, files } = imageFields(req);
  const family = peerFamily(fields.model);
  if (family !== 'gpt-image' && family !== 'dall-e-2' && family !== 'dall-e-3') return null;
  if (edits && family === 'dall-e-3') {
    return invalidRequest("Invalid value: 'dall-e-3'. Supported values are: 'dall-e-2' and 'gpt-image-1'.", 'model', 'invalid_value');
  }
  const known: readonly string[] = edits ? PARAMS.edits[family as 'gpt-image' | 'dall-e-2'] : PARAMS.generations[family];
  for (const k of Object.keys(fields)) {
    if (!known.includes(k)) return invalidRequest(`Unknown parameter: '${k}'.`, k, 'unknown_parameter');
  }
  const prompt = typeof fields.prompt === 'string' ? fields.prompt : '';
  if (!prompt) return invalidRequest("Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter');
  if (prompt.length > PROMPT_MAX[family]) {
    return invalidRequest(`Invalid 'prompt': string too long. Expected a string with maximum length ${PROMPT_MAX[family]}, but got a string with length ${prompt.length} instead.`, 'prompt', 'string_above_max_length');
  }
  if (edits && files === 0) return invalidRequest("Missing required parameter: 'image'.", 'image', 'missing_required_parameter');
  if (edits && family === 'dall-e-2' && files > 1) return invalidRequest("Invalid 'image': dall-e-2 takes a single image.", 'image', 'invalid_value');
  if (family === 'dall-e-3' && 'n' in fields && Number(fields.n) !== 1) {
    return invalidRequest("Invalid 'n': dall-e-3 only supports n=1.", 'n', 'invalid_value');
  }
  return (
    oneOf(fields, 'size', SIZES[family]) ??
    oneOf(fields, 'quality', QUALITY[family]) ??
    (family === 'gpt-image'
      ? oneOf(fields, 'background', ['transparent', 'opaque', 'auto']) ??
        oneOf(fields, 'moderation', ['low', 'auto']) ??
        oneOf(fields, 'output_format', ['png', 'jpeg', 'webp']) ??
        oneOf(fields, 'input_fidelity', ['high', 'low'])
      : oneOf(fields, 'response_format', ['url', 'b64_json']) ?? oneOf(fields, 'style', ['vivid', 'natural']))
  );
}

/** The 400 OpenAI would give this request, or null when OpenAI would accept it. */
export function openaiRules(req: PeerRequest): PeerReply | null {
  if (req.method !== 'POST') return null;
  if (req.path.endsWith('/chat/completions')) return chatRules(req.json);
  if (req.path.endsWith('/images/generations')) return imageRules(req, false);
  if (req.path.endsWith('/images/edits')) return imageRules(req, true);
  return null;
}

/** gpt-image-1 output image tokens by quality and size (auto billed as high here: the worst case). */
export const GPT_IMAGE_OUTPUT_TOKENS: Record<string, Record<string, number>> = {
  low: { '1024x1024': 272, '1024x1536': 408, '1536x1024': 400 },
  medium: { '1024x1024': 1056, '1024x1536': 1584, '1536x1024': 1568 },
  high: { '1024x1024': 4160, '1024x1536': 6240, '1536x1024': 6208 },
};

/**
 * A reasoning model thinks before it answers: REASONING_TOKENS hidden tokens, then 34 visible
 * ones, all inside max_completion_tokens — when that runs out first the answer is empty with
 * finish_reason "length" and the whole budget billed, as OpenAI does.
 */
export const REASONING_TOKENS = 64;

/** A non-streamed reply as the stream the request asked for (`stream: true`). */
function asStream(reply: PeerReply, body: any): PeerReply {
  if (body?.stream !== true || !('json' in reply)) return reply;
  const j = reply.json as { choices: Array<{ message: { content: string }; finish_reason: string }>; usage: PeerUsage };
  const usage = body.stream_options?.include_usage ? j.usage : null;
  return chatStream(j.choices[0]!.message.content ? [j.choices[0]!.message.content] : [], usage, { finish: j.choices[0]!.finish_reason });
}

function defaultChat(body: any): PeerReply {
  return asStream(nonStreamedChat(body), body);
}

function nonStreamedChat(body: any): PeerReply {
  if (peerFamily(body?.model) !== 'reasoning') return chatReply('peer reply');
  const cap = typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : Infinity;
  if (cap < REASONING_TOKENS + 34) {
    return chatReply('', { prompt_tokens: 12, completion_tokens: cap, completion_tokens_details: { reasoning_tokens: cap } }, 'length');
  }
  return chatReply('peer reply', { prompt_tokens: 12, completion_tokens: REASONING_TOKENS + 34, completion_tokens_details: { reasoning_tokens: REASONING_TOKENS } });
}

/** What OpenAI answers to a valid Images API request for one of its own models. */
async function familyImage(req: PeerRequest, file: (name: string, data: Buffer, type: string) => string, n: number): Promise<PeerReply | null> {
  const { fields, files } = imageFields(req);
  const family = peerFamily(fields.model);
  if (family !== 'gpt-image' && family !== 'dall-e-2' && family !== 'dall-e-3') return null;
  const size = typeof fields.size === 'string' && fields.size !== 'auto' ? fields.size : '1024x1024';
  const [w, h] = size.split('x').map(Number) as [number, number];
  const format = family === 'gpt-image' && typeof fields.output_format === 'string' ? fields.output_format : 'png';
  const data = await sharp({ create: { width: w, height: h, channels: 3, background: '#2a7f62' } }).toFormat(format as 'png').toBuffer();
  const headers = { 'x-request-id': 'req_peer_image' };
  if (family !== 'gpt-image') {
    const item = fields.response_format === 'b64_json'
      ? { b64_json: data.toString('base64') }
      : { url: file(`gen-${n}.png`, data, 'image/png') };
    return { headers, json: { created: 1, data: [{ ...item, ...(family === 'dall-e-3' ? { revised_prompt: String(fields.prompt) } : {}) }] } };
  }
  const quality = typeof fields.quality === 'string' && fields.quality !== 'auto' ? fields.quality : 'high';
  const output = GPT_IMAGE_OUTPUT_TOKENS[quality]![size]!;
  const text = Math.ceil(Buffer.byteLength(String(fields.prompt), 'utf8') / 4) + 6;
  const image = files * 194;
  return {
    headers,
    json: {
      created: 1,
      background: fields.background ?? 'opaque',
      output_format: format,
      quality,
      size,
      data: [{ b64_json: data.toString('base64') }],
      usage: {
        input_tokens: text + image,
        input_tokens_details: { text_tokens: text, image_tokens: image },
        output_tokens: output,
        total_tokens: text + image + output,
      },
    },
  };
}

/** A multipart body's fields, files summarised; null for any other body (its JSON is in `json`). */
async function parseForm(req: IncomingMessage, raw: Buffer): Promise<PeerRequest['form']> {
  const type = req.headers['content-type'] ?? '';
  if (!type.startsWith('multipart/form-data')) return null;
  const fd = await new Request('http://peer/', { method: 'POST', headers: { 'content-type': type }, body: new Uint8Array(raw) }).formData();
  const form: NonNullable<PeerRequest['form']> = {};
  for (const [k, v] of fd.entries()) {
    const entry = typeof v === 'string' ? v : { filename: (v as File).name, type: v.type, size: v.size };
    (form[k] ??= []).push(entry);
  }
  return form;
}

/** `strict: false` serves every model like a lenient compatible server. */
export async function startOpenAIPeer(opts: { strict?: boolean } = {}): Promise<OpenAIPeer> {
  const strict = opts.strict ?? true;
  const defaultImage = await imageReply();
  const peer: LoopbackPeer<PeerRequest> = await startLoopbackPeer<PeerRequest>(
    async (req, _origin, index) => {
      if (req.path.endsWith('/chat/completions')) return defaultChat(req.json);
      if (req.path.endsWith('/images/generations') || req.path.endsWith('/images/edits')) {
        const reply = (await familyImage(req, (name, data, type) => peer.file(name, data, type), index)) ?? defaultImage;
        const { fields } = imageFields(req);
        const stream = fields.stream === true || fields.stream === 'true';
        if (!stream || !('json' in reply)) return reply;
        // As asked: `partial_images` partial images (here the final one, smaller), then the final.
        const final = Buffer.from((reply.json as { data: Array<{ b64_json: string }> }).data[0]!.b64_json, 'base64');
        const n = Math.max(0, Math.min(3, Number(fields.partial_images ?? 0)));
        const partial = await sharp(final).resize(64).png().toBuffer();
        return imageStream(Array.from({ length: n }, () => partial), final, { prefix: req.path.endsWith('/edits') ? 'image_edit' : 'image_generation' });
      }
      return errorReply(404, 'invalid_request_error', 'unknown_url');
    },
    {
      describe: async (req, base, raw) => ({ ...base, form: await parseForm(req, raw) }),
      refuse: (req) => (strict ? openaiRules(req) : null),
    },
  );
  return { ...peer, url: `${peer.origin}/v1` };
}
