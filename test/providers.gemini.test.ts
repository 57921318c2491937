// The gemini adapter against a real Gemini API peer on loopback (as strict as Google about the
// path, key header and body): text and image generateContent, usage with thoughts, finish and
// block reasons, retries (429 retry-after, 5xx, resets), timeouts, cancellation, client-safe
// errors; the shipped catalog entries.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import sharp from 'sharp';
import * as v from 'valibot';
import type { CatalogModel } from '../src/billing/catalog.ts';
import { ModelEntry } from '../src/cli/model-entry.ts';
import { createGeminiProvider } from '../src/providers/gemini.ts';
import type { AdapterOptions } from '../src/providers/upstream.ts';
import { getProvider, type ImageRequest, type TextRequest } from '../src/providers/index.ts';
import { blockedReply, errorReply, finishReply, imageReply, png, startGeminiPeer, textReply, type GeminiPeer } from './_gemini-peer.ts';
import { providerError, textRequest } from './_adapter.ts';
import { clientGone } from './_peer.ts';

const SECRET = 'AIzaTestSecretDoNotLeak0123456789';
let peer: GeminiPeer;

function model(over: Partial<CatalogModel> = {}): CatalogModel {
  return {
    id: 'test/gemini',
    name: 'Test Gemini',
    category: 'text',
    provider: 'gemini',
    upstream: { baseUrl: peer.url, model: 'gemini-test-flash', apiKeyEnv: 'KILN_TEST_GEMINI_KEY' },
    supports_image_input: true,
    input_modalities: ['text', 'image'],
    output_modalities: ['text'],
    cost: { input_micros_per_token: 0.3, output_micros_per_token: 2.5 },
    maxOutputTokens: 1000,
    markup: 1,
    enabled: true,
    ...over,
  };
}

const imageModel = (over: Partial<CatalogModel> = {}) => model({
  id: 'test/gemini-image', category: 'image', output_modalities: ['image'], cost: { micros_per_image: 39000 },
  upstream: { baseUrl: peer.url, model: 'gemini-test-flash-image', apiKeyEnv: 'KILN_TEST_GEMINI_KEY' }, ...over,
});

function provider(opts: AdapterOptions = {}) {
  // A generous per-attempt timeout: the peer runs in this process, and on a loaded machine an
  // answer (an encoded image) can take seconds; one cut short is retried and the request counts
  // are off. The timeout tests set their own short one.
  return createGeminiProvider({ timeoutMs: 10_000, maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20, env: { KILN_TEST_GEMINI_KEY: SECRET }, ...opts });
}

const textReq = (over: Partial<TextRequest> = {}) => textRequest(model(), over);

function imageReq(over: Partial<ImageRequest> = {}): ImageRequest {
  return { model: imageModel(), prompt: 'A red fox', aspectRatio: '1:1', images: [], textInputs: [], signal: new AbortController().signal, ...over };
}

const rejection = (p: Promise<unknown>) => providerError(p, { key: SECRET, origin: peer.origin });

before(async () => {
  peer = await startGeminiPeer({ key: SECRET });
});
after(() => peer.close());
beforeEach(() => {
  peer.requests.length = 0;
  peer.script([]);
});

describe('gemini peer', () => {
  it('is as strict as the Gemini API: key, path, contents, parts, known generationConfig fields', async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
    const post = (b: unknown, headers: Record<string, string> = { 'x-goog-api-key': SECRET }, model = 'gemini-test-flash') =>
      fetch(`${peer.url}/models/${model}:generateContent`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(b) })
        .then(async (r) => ({ status: r.status, json: (await r.json()) as any }));
    assert.equal((await post(body)).status, 200);
    assert.equal((await post({ ...body, generation_config: { max_output_tokens: 5 } })).status, 200, 'snake_case is accepted too');
    const noKey = await post(body, {});
    assert.equal(noKey.status, 403);
    assert.equal(noKey.json.error.status, 'PERMISSION_DENIED');
    assert.equal((await post(body, { 'x-goog-api-key': 'wrong' })).json.error.status, 'INVALID_ARGUMENT');
    assert.equal((await post({})).status, 400);
    assert.match((await post({ ...body, max_tokens: 5 })).json.error.message, /Unknown name "max_tokens"/);
    assert.match((await post({ ...body, generationConfig: { max_tokens: 5 } })).json.error.message, /Unknown name "max_tokens"/);
    assert.equal((await post({ contents: [{ parts: [] }] })).status, 400);
    assert.equal((await post({ contents: [{ parts: [{ text: 'a', inlineData: { mimeType: 'image/png', data: 'AA==' } }] }] })).status, 400, 'one data field per part');
    assert.equal((await post({ contents: [{ parts: [{ inlineData: { mimeType: 'image/gif', data: 'AA==' } }] }] })).status, 400);
    assert.equal((await post({ ...body, generationConfig: { responseModalities: ['TEXT', 'IMAGE'] } })).status, 400, 'a text model makes no images');
    assert.equal((await post({ ...body, generationConfig: { imageConfig: { aspectRatio: '7:5' } } }, undefined, 'x-image')).status, 400);
  });
});

describe('gemini adapter: text', () => {
  it('sends the documented request: path, key header, contents, systemInstruction, maxOutputTokens, inline images', async () => {
    peer.script([textReply('```tsx\nexport default function Card() { return <div/>; }\n```', { promptTokenCount: 101, candidatesTokenCount: 202 })]);
    const img = await png(8, 8);
    const out = await provider().generateText(textReq({ images: [{ data: img, mediaType: 'image/png' }], textInputs: [{ content: 'Brand: Kiln', label: 'Brief' }] }));
    assert.equal(out.text, 'export default function Card() { return <div/>; }');
    assert.deepEqual(out.usage, { inputTokens: 101, outputTokens: 202 });
    assert.match(out.providerRequestId!, /^resp_peer\d+$/);

    assert.equal(peer.requests.length, 1);
    const r = peer.requests[0]!;
    assert.equal(r.invalid, null);
    assert.equal(r.path, '/v1beta/models/gemini-test-flash:generateContent');
    assert.equal(r.headers['x-goog-api-key'], SECRET);
    assert.equal(r.headers.authorization, undefined);
    assert.deepEqual(Object.keys(r.json).sort(), ['contents', 'generationConfig', 'systemInstruction']);
    assert.deepEqual(r.json.generationConfig, { maxOutputTokens: 321 });
    assert.match(r.json.systemInstruction.parts[0].text, /TSX/);
    assert.equal(r.json.contents.length, 1);
    assert.equal(r.json.contents[0].role, 'user');
    const [text, inline] = r.json.contents[0].parts;
    assert.match(text.text, /A pricing card/);
    assert.match(text.text, /--- Brief ---\nBrand: Kiln/);
    assert.deepEqual(inline, { inlineData: { mimeType: 'image/png', data: img.toString('base64') } });
  });

  it('bills thoughts at the output price, skips thought parts, and converts GIF inputs to PNG', async () => {
    peer.script([textReply(['plan: ', 'hello'], { promptTokenCount: 40, candidatesTokenCount: 20, thoughtsTokenCount: 30 })]);
    const gif = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#00ff00' } }).gif().toBuffer();
    const out = await provider().generateText(textReq({ targetLanguage: 'text', images: [{ data: gif, mediaType: 'image/gif' }] }));
    assert.equal(out.text, 'plan: hello');
    assert.deepEqual(out.usage, { inputTokens: 40, outputTokens: 50 });
    const inline = peer.requests[0]!.json.contents[0].parts[1].inlineData;
    assert.equal(inline.mimeType, 'image/png');
    assert.equal((await sharp(Buffer.from(inline.data, 'base64')).metadata()).format, 'png');

    const reply = textReply('answer', { promptTokenCount: 5, candidatesTokenCount: 1, thoughtsTokenCount: 9 }) as { json: any };
    reply.json.candidates[0].content.parts.unshift({ text: 'secret reasoning summary', thought: true });
    peer.script([reply]);
    const second = await provider().generateText(textReq({ targetLanguage: 'text' }));
    assert.equal(second.text, 'answer');
    assert.deepEqual(second.usage, { inputTokens: 5, outputTokens: 10 });
  });

  it('sends no images for a text-only entry; upstream.params go into generationConfig without raising the cap', async () => {
    const m = model({
      supports_image_input: false,
      upstream: { baseUrl: peer.url, model: 'models/gemini-test-flash', apiKeyEnv: 'KILN_TEST_GEMINI_KEY', params: { temperature: 0.2, thinkingConfig: { thinkingBudget: 0 }, maxOutputTokens: 99999 } },
    });
    await provider().generateText(textReq({ model: m, images: [{ data: Buffer.from('x'), mediaType: 'image/png' }] }));
    const r = peer.requests[0]!;
    assert.equal(r.invalid, null);
    assert.equal(r.model, 'gemini-test-flash', 'a models/ prefix is not doubled');
    assert.equal(r.json.contents[0].parts.length, 1);
    assert.deepEqual(r.json.generationConfig, { maxOutputTokens: 321, temperature: 0.2, thinkingConfig: { thinkingBudget: 0 } });
  });

  it('estimates usage when usageMetadata is missing', async () => {
    peer.script([textReply('hello world', null)]);
    const out = await provider().generateText(textReq({ targetLanguage: 'text' }));
    assert.ok(out.usage.inputTokens > 0 && out.usage.outputTokens > 0);
  });

  it('MAX_TOKENS returns what was written; with nothing written it is a non-retryable error', async () => {
    peer.script([textReply('{"partial": ', { promptTokenCount: 10, candidatesTokenCount: 300, thoughtsTokenCount: 21 }, 'MAX_TOKENS'), finishReply('MAX_TOKENS', { promptTokenCount: 10, thoughtsTokenCount: 321 })]);
    const out = await provider().generateText(textReq({ targetLanguage: 'json' }));
    assert.equal(out.text, '{"partial":');
    assert.deepEqual(out.usage, { inputTokens: 10, outputTokens: 321 });
    const err = await rejection(provider().generateText(textReq()));
    assert.equal(err.code, 'rejected');
    assert.equal(err.retryable, false);
    assert.equal(err.message, 'upstream model returned no content (MAX_TOKENS)');
  });

  it('a blocked prompt and a safety or recitation finish are refusals, not retried', async () => {
    const withText = textReply('half an answer', undefined, 'RECITATION');
    peer.script([blockedReply('SAFETY'), finishReply('SAFETY'), withText, blockedReply(`PROHIBITED ${SECRET}`)]);
    const blocked = await rejection(provider().generateText(textReq()));
    assert.equal(blocked.code, 'rejected');
    assert.equal(blocked.retryable, false);
    assert.equal(blocked.message, 'upstream provider blocked the prompt (SAFETY)');
    assert.equal((await rejection(provider().generateText(textReq()))).message, 'upstream model declined the request (SAFETY)');
    assert.equal((await rejection(provider().generateText(textReq()))).message, 'upstream model declined the request (RECITATION)');
    assert.equal((await rejection(provider().generateText(textReq()))).message, 'upstream provider blocked the prompt', 'only enum tokens are shown');
    assert.equal(peer.requests.length, 4);
  });

  it('honours retry-after on 429 RESOURCE_EXHAUSTED and then succeeds', async () => {
    peer.script([errorReply(429, 'Resource has been exhausted (e.g. check quota).', { 'retry-after': '1' }), textReply('ok')]);
    const t0 = Date.now();
    const out = await provider({ timeoutMs: 3000 }).generateText(textReq({ targetLanguage: 'text' }));
    assert.equal(out.text, 'ok');
    assert.equal(peer.requests.length, 2);
    assert.ok(Date.now() - t0 >= 950, 'waited for retry-after (1 s)');
  });

  it('retries 503 UNAVAILABLE, 500 and a reset, then succeeds', async () => {
    peer.script([errorReply(503, 'The model is overloaded. Please try again later.'), errorReply(500, 'An internal error has occurred.'), { reset: true }, textReply('recovered')]);
    const out = await provider({ maxAttempts: 4 }).generateText(textReq({ targetLanguage: 'text' }));
    assert.equal(out.text, 'recovered');
    assert.equal(peer.requests.length, 4);
  });

  it('gives up after maxAttempts 5xx with a retryable, summarised error', async () => {
    peer.script(() => errorReply(500, `internal detail ${SECRET}`));
    const err = await rejection(provider().generateText(textReq()));
    assert.equal(err.code, 'upstream_error');
    assert.equal(err.retryable, true);
    assert.equal(err.status, 500);
    // Google's reason token (`error.status`), never its message; the HTTP status echoed in `error.code` is not repeated.
    assert.equal(err.message, 'upstream provider returned 500 (INTERNAL) after 3 attempts');
    assert.equal(peer.requests.length, 3);
  });

  it('fails at once on 4xx without the upstream message; a missing key is the peer\'s 403', async () => {
    peer.script([errorReply(400, `* GenerateContentRequest.model: unexpected model name format ${SECRET}`), errorReply(404, 'models/nope is not found for API version v1beta')]);
    const bad = await rejection(provider().generateText(textReq()));
    assert.equal(bad.code, 'rejected');
    assert.equal(bad.retryable, false);
    assert.equal(bad.message, 'upstream provider returned 400 (INVALID_ARGUMENT)');
    assert.equal((await rejection(provider().generateText(textReq()))).message, 'upstream provider returned 404 (NOT_FOUND)');
    const noKey = await rejection(provider({ env: {} }).generateText(textReq()));
    assert.equal(peer.requests[2]!.headers['x-goog-api-key'], undefined);
    assert.equal(noKey.message, 'upstream provider returned 403 (PERMISSION_DENIED)');
    const wrongKey = await rejection(provider({ env: { KILN_TEST_GEMINI_KEY: 'AIzaWrong' } }).generateText(textReq()));
    assert.equal(wrongKey.message, 'upstream provider returned 400 (INVALID_ARGUMENT)');
    assert.equal(peer.requests.length, 4);
  });

  it('reports malformed JSON and an answer without candidates without retrying', async () => {
    peer.script([{ body: '{"candidates": [' }, { json: { usageMetadata: { promptTokenCount: 1 } } }]);
    const err = await rejection(provider().generateText(textReq()));
    assert.equal(err.code, 'bad_response');
    assert.equal(err.message, 'upstream provider returned malformed JSON');
    const none = await rejection(provider().generateText(textReq()));
    assert.equal(none.code, 'bad_response');
    assert.equal(none.message, 'upstream provider returned no candidates');
    assert.equal(peer.requests.length, 2);
  });

  it('times out each attempt and retries until attempts run out', async () => {
    peer.script(() => ({ hang: true }));
    const t0 = Date.now();
    const err = await rejection(provider({ timeoutMs: 150, maxAttempts: 2 }).generateText(textReq()));
    assert.equal(err.code, 'timeout');
    assert.equal(err.retryable, true);
    assert.equal(peer.requests.length, 2);
    assert.ok(Date.now() - t0 < 2000);
  });

  it('stops at once when the caller aborts, and the peer sees the connection go', async () => {
    peer.script(() => ({ ...textReply('late'), delayMs: 5000 }));
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(new Error('canceled')), 100);
    const t0 = Date.now();
    const err = await rejection(provider({ timeoutMs: 10_000 }).generateText(textReq({ signal: ctl.signal })));
    assert.equal(err.code, 'aborted');
    assert.ok(Date.now() - t0 < 1000);
    assert.ok(await clientGone(peer.requests[0]!), 'the upstream request was aborted');
  });
});

describe('gemini adapter: images', () => {
  it('asks for TEXT and IMAGE at the aspect ratio, decodes the inline image and crops it to the exact ratio', async () => {
    const out = await provider().generateImage(imageReq({ aspectRatio: '16:9', textInputs: [{ content: 'autumn palette' }] }));
    const r = peer.requests[0]!;
    assert.equal(r.invalid, null);
    assert.equal(r.path, '/v1beta/models/gemini-test-flash-image:generateContent');
    assert.deepEqual(r.json.generationConfig, { responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: '16:9' } });
    assert.equal(r.json.systemInstruction, undefined);
    assert.match(r.json.contents[0].parts[0].text, /A red fox[\s\S]*autumn palette/);
    // The peer draws 1344×768 (1.75) for 16:9, as gemini-2.5-flash-image does: cropped to 1344×756.
    assert.deepEqual([out.width, out.height], [1344, 756]);
    const meta = await sharp(out.data).metadata();
    assert.deepEqual([meta.width, meta.height, meta.format], [1344, 756, 'png']);
    assert.equal(out.mediaType, 'image/png');
    assert.match(out.providerRequestId!, /^resp_peer\d+$/);
  });

  it('sends reference images inline, skips thought images, and honours upstream.params (null removes imageConfig)', async () => {
    peer.script([await imageReply(1024, 1024, { thoughtImage: true, caption: 'Here you go' })]);
    const ref = await png(16, 16, '#00aa00');
    const m = imageModel({ upstream: { baseUrl: peer.url, model: 'gemini-test-flash-image', apiKeyEnv: 'KILN_TEST_GEMINI_KEY', params: { imageConfig: null, responseModalities: ['IMAGE'] } } });
    const out = await provider().generateImage(imageReq({ model: m, images: [{ data: ref, mediaType: 'image/png' }] }));
    const r = peer.requests[0]!;
    assert.deepEqual(r.json.generationConfig, { responseModalities: ['IMAGE'] });
    assert.deepEqual(r.json.contents[0].parts[1], { inlineData: { mimeType: 'image/png', data: ref.toString('base64') } });
    assert.deepEqual([out.width, out.height], [1024, 1024], 'the 64×64 thought image is not the answer');
  });

  it('an answer without an image, an IMAGE_SAFETY finish and malformed image data are errors', async () => {
    peer.script([textReply('I cannot draw that.'), finishReply('IMAGE_SAFETY'), { json: { candidates: [{ content: { parts: [{ inlineData: { mimeType: 'image/png', data: 'bm90IGFuIGltYWdl' } }] }, finishReason: 'STOP' }] } }]);
    const noImage = await rejection(provider().generateImage(imageReq()));
    assert.equal(noImage.code, 'rejected');
    assert.equal(noImage.message, 'upstream model returned no image');
    assert.equal((await rejection(provider().generateImage(imageReq()))).message, 'upstream model declined the request (IMAGE_SAFETY)');
    const unreadable = await rejection(provider().generateImage(imageReq()));
    assert.equal(unreadable.code, 'bad_response');
    assert.equal(peer.requests.length, 3);
  });

  it('is registered as `gemini`', async () => {
    const out = await getProvider('gemini', { env: { KILN_TEST_GEMINI_KEY: SECRET }, maxAttempts: 1 }).generateImage(imageReq({ aspectRatio: '3:4' }));
    assert.deepEqual([out.width, out.height], [864, 1152]);
  });
});

describe('gemini catalog entries', () => {
  it('ship as valid `kiln model upsert` files for an image and a text model', () => {
    const dir = path.resolve(import.meta.dirname, '..', 'catalog');
    const files = fs.readdirSync(dir).filter((f) => f.startsWith('gemini-') && f.endsWith('.json'));
    const categories = new Set<string>();
    for (const f of files) {
      const entry = v.parse(ModelEntry, JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));
      assert.equal(entry.provider, 'gemini', f);
      assert.equal(entry.upstream?.apiKeyEnv, 'GEMINI_API_KEY', f);
      assert.ok(entry.upstream?.model, f);
      categories.add(entry.category);
    }
    assert.deepEqual([...categories].sort(), ['image', 'text']);
  });
});
