// The `gemini` adapter: Google's Gemini API generateContent (POST /v1beta/models/{model}:generateContent)
// for text and svg entries and for image entries (the image comes back as inline data).

import sharp from 'sharp';
import type { CatalogModel } from '../billing/catalog.ts';
import { IMAGE_INPUT_TOKENS } from './costs.ts';
import { stripCodeFences } from './fences.ts';
import { eventJson, malformedEvent, postJson, postStream, streamErrorEvent, type Call, type StreamOptions } from './http.ts';
import { decodeBase64Image, toImageOutput } from './images.ts';
import { imagePrompt, systemPrompt, userPrompt } from './prompts.ts';
import { outputKind, type ImageInputData, type ImageOutput, type ImageRequest, type OutputSink, type Provider, type TextOutput, type TextRequest } from './types.ts';
import { authHeaders, badResponse, entryOptions, baseUrl, misconfigured, nonNegInt, rejected, responseId, streams, upstreamModel, withParams, type AdapterOptions } from './upstream.ts';

const DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com/v1beta';
/** Image types Gemini reads inline; anything else (GIF) is converted to PNG first. */
const INLINE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/heic', 'image/heif']);
/** Finish reasons that end a normal answer; every other one (SAFETY, RECITATION, NO_IMAGE, …) is a refusal. */
const FINISHED = new Set(['STOP', 'MAX_TOKENS', 'FINISH_REASON_UNSPECIFIED']);
/** generationConfig fields `upstream.params` may not replace: the reservation is sized from the request's own cap. */
const OWN_CONFIG = new Set(['maxOutputTokens']);

/** Gemini's enum values (SAFETY, IMAGE_PROHIBITED_CONTENT, …) are safe to show; anything else is dropped. */
function reasonToken(v: unknown): string {
  return typeof v === 'string' && /^[A-Z][A-Z_]{0,47}$/.test(v) ? ` (${v})` : '';
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
  if (!('data' in img)) throw misconfigured('image inputs must be uploaded for this model');
  if (INLINE_TYPES.has(img.mediaType)) return { inlineData: { mimeType: img.mediaType, data: img.data.toString('base64') } };
  const png = await sharp(img.data, { limitInputPixels: 100_000_000 }).png().toBuffer().catch(() => {
    throw rejected('an image input could not be read');
  });
  return { inlineData: { mimeType: 'image/png', data: png.toString('base64') } };
}

/** `upstream.params` merged into generationConfig (thinkingConfig, temperature, imageConfig, …); null removes a field. */
function generationConfig(base: Record<string, unknown>, model: CatalogModel): Record<string, unknown> {
  return withParams(base, model.upstream?.params, OWN_CONFIG);
}

/**
 * The first candidate's answer parts, after the checks every reply needs: a blocked prompt and a
 * refusal finish are content errors (not retried), a reply without candidates is a bad response.
 */
function answerParts(json: unknown): { parts: Part[]; finish: unknown } {
  const a = json as Answer | null;
  if (!a || typeof a !== 'object') throw badResponse('upstream provider returned no candidates');
  const cand = Array.isArray(a.candidates) ? a.candidates[0] : undefined;
  if (!cand) {
    if (a.promptFeedback?.blockReason !== undefined) {
      throw rejected(`upstream provider blocked the prompt${reasonToken(a.promptFeedback.blockReason)}`);
    }
    throw badResponse('upstream provider returned no candidates');
  }
  const finish = cand.finishReason;
  if (finish !== undefined && !FINISHED.has(String(finish))) {
    throw rejected(`upstream model declined the request${reasonToken(finish)}`);
  }
  const parts = cand.content?.parts;
  // Thought summaries and interim "thinking" images are not the answer.
  return { parts: Array.isArray(parts) ? parts.filter((p) => p && typeof p === 'object' && p.thought !== true) : [], finish };
}

/**
 * A streamed generateContent (`streamGenerateContent?alt=sse`: each event a GenerateContentResponse
 * chunk), its answer text (thought parts skipped) handed to the sink as it arrives, put back
 * together into the one answer a non-streamed call returns: every chunk's parts, the finish reason,
 * the last usageMetadata. The chunk with a finishReason (or a blocked prompt's feedback) completes
 * it; a trailing chunk after it is still read. `whole`: the server answered in one piece.
 */
async function streamedAnswer(request: Call, options: StreamOptions, sink: OutputSink): Promise<{ json: unknown; requestId: string | null; whole: boolean }> {
  const parts: Part[] = [];
  let candidate = false;
  let finish: unknown;
  let usage: unknown;
  let feedback: Answer['promptFeedback'];
  let id: unknown;
  const answer = await postStream(request, options, (ev) => {
    const chunk = eventJson(ev) as (Answer & { error?: { code?: unknown; status?: unknown } | null }) | null;
    if (!chunk || typeof chunk !== 'object' || Array.isArray(chunk)) throw malformedEvent();
    if (chunk.error) throw streamErrorEvent(chunk.error.status, chunk.error.code);
    id ??= chunk.responseId;
    if (chunk.usageMetadata !== undefined) usage = chunk.usageMetadata;
    if (chunk.promptFeedback !== undefined) feedback = chunk.promptFeedback;
    const cand = Array.isArray(chunk.candidates) ? chunk.candidates[0] : undefined;
    if (cand) {
      candidate = true;
      for (const p of Array.isArray(cand.content?.parts) ? cand.content.parts : []) {
        if (!p || typeof p !== 'object') continue;
        parts.push(p);
        if (p.thought !== true && typeof p.text === 'string' && p.text !== '') sink.text(p.text);
      }
      if (cand.finishReason !== undefined) finish = cand.finishReason;
    }
    if (finish !== undefined || (!candidate && feedback?.blockReason !== undefined)) return 'complete';
  });
  if (answer.json !== undefined) return { json: answer.json, requestId: answer.requestId, whole: true };
  return {
    json: {
      candidates: candidate ? [{ content: { parts }, ...(finish === undefined ? {} : { finishReason: finish }) }] : [],
      ...(feedback === undefined ? {} : { promptFeedback: feedback }),
      ...(usage === undefined ? {} : { usageMetadata: usage }),
      responseId: id,
    },
    requestId: answer.requestId,
    whole: false,
  };
}

export function createGeminiProvider(options: AdapterOptions = {}): Provider {
  const authOf = authHeaders(options, 'x-goog-api-key');

  function call(model: CatalogModel, body: Record<string, unknown>, signal: AbortSignal, stream = false): Call {
    const name = upstreamModel(model).replace(/^models\//, '');
    const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
    return {
      url: `${baseUrl(model, DEFAULT_BASE_URL)}/models/${encodeURIComponent(name)}:${method}`,
      headers: { 'content-type': 'application/json', accept: stream ? 'text/event-stream' : 'application/json', ...authOf(model) },
      body: JSON.stringify(body),
      signal,
    };
  }

  const request = (model: CatalogModel, body: Record<string, unknown>, signal: AbortSignal) => postJson(call(model, body, signal), entryOptions(options, model));

  return {
    async generateText(req: TextRequest): Promise<TextOutput> {
      const kind = outputKind(req);
      const system = systemPrompt(kind);
      const prompt = userPrompt(req.prompt, req.textInputs);
      const images = req.model.supports_image_input ? req.images : [];
      const body = {
        contents: [{ role: 'user', parts: [{ text: prompt }, ...(await Promise.all(images.map(inlinePart)))] }],
        systemInstruction: { parts: [{ text: system }] },
        generationConfig: generationConfig({ maxOutputTokens: req.maxTokens }, req.model),
      };
      const sink = streams(req.model, req.sink);
      const { json, requestId, whole } = sink
        ? await streamedAnswer(call(req.model, body, req.signal, true), entryOptions(options, req.model), sink)
        : { ...(await request(req.model, body, req.signal)), whole: false };
      const { parts, finish } = answerParts(json);
      const text = parts.map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
      // A server that ignored `alt=sse` answered in one piece: its text is the one delta.
      if (whole && sink && text !== '') sink.text(text);
      if (text.trim() === '') {
        // e.g. MAX_TOKENS spent entirely on thinking: nothing to deliver, so nothing is charged.
        throw rejected(`upstream model returned no content${reasonToken(finish)}`);
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
      return {
        text: stripCodeFences(text, kind),
        usage: { inputTokens, outputTokens },
        providerRequestId: requestId ?? responseId((json as Answer).responseId),
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
      if (!found) throw rejected('upstream model returned no image');
      const data = decodeBase64Image(found.inlineData!.data as string);
      return {
        ...(await toImageOutput(data, req.aspectRatio)),
        providerRequestId: requestId ?? responseId((json as Answer).responseId),
      };
    },
  };
}
