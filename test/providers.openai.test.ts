// The openai adapter against a real OpenAI-protocol peer on loopback: success paths, retries,
// timeouts, cancellation and client-safe errors; each OpenAI model family's documented parameters
// against a peer as strict as OpenAI about them; the catalog entry rules.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import sharp from 'sharp';
import * as v from 'valibot';
import type { CatalogModel } from '../src/billing/catalog.ts';
import { ModelEntry } from '../src/cli/model-entry.ts';
import { createOpenAIProvider, generateCode, ProviderError, type AdapterOptions, type TextRequest, type ImageRequest } from '../src/providers/index.ts';
import { openaiFamily } from '../src/providers/openai-family.ts';
import { chatReply, errorReply, imageReply, png, REASONING_TOKENS, startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';
import { providerError, textRequest } from './_adapter.ts';

const SECRET = 'sk-test-secret-do-not-leak';
let peer: OpenAIPeer;

function model(over: Partial<CatalogModel> = {}): CatalogModel {
  return {
    id: 'test/chat',
    name: 'Test chat',
    category: 'text',
    provider: 'openai',
    upstream: { baseUrl: peer.url, model: 'gpt-test', apiKeyEnv: 'KILN_TEST_KEY' },
    supports_image_input: true,
    input_modalities: ['text', 'image'],
    output_modalities: ['text'],
    cost: { input_micros_per_token: 0.15, output_micros_per_token: 0.6 },
    maxOutputTokens: 1000,
    markup: 1.25,
    enabled: true,
    ...over,
  };
}

const imageModel = (over: Partial<CatalogModel> = {}) =>
  model({ id: 'test/image', category: 'image', supports_image_input: false, upstream: { baseUrl: peer.url, model: 'img-test', apiKeyEnv: 'KILN_TEST_KEY' }, ...over });

function provider(opts: AdapterOptions = {}) {
  // A generous per-attempt timeout: the peer runs in this process, and on a loaded machine an
  // answer (an encoded image) can take seconds; one cut short is retried and the request counts
  // are off. The timeout tests set their own short one.
  return createOpenAIProvider({ timeoutMs: 10_000, maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20, env: { KILN_TEST_KEY: SECRET }, ...opts });
}

const textReq = (over: Partial<TextRequest> = {}) => textRequest(model(), over);

function imageReq(over: Partial<ImageRequest> = {}): ImageRequest {
  return { model: imageModel(), prompt: 'A red fox', aspectRatio: '1:1', images: [], textInputs: [], signal: new AbortController().signal, ...over };
}

const rejection = (p: Promise<unknown>) => providerError(p, { key: SECRET, origin: peer.origin });

before(async () => {
  peer = await startOpenAIPeer();
});
after(() => peer.close());
beforeEach(() => {
  peer.requests.length = 0;
  peer.script([]);
});

describe('openai adapter: text', () => {
  it('sends system prompt, max_tokens, images and key; strips fences; reports usage', async () => {
    peer.script([chatReply('```tsx\nexport default function Card() { return <div/>; }\n```', { prompt_tokens: 101, completion_tokens: 202 })]);
    const img = await png(8, 8);
    const out = await provider().generateText(
      textReq({ images: [{ data: img, mediaType: 'image/png' }], textInputs: [{ content: 'Brand: Kiln', label: 'Brief' }] }),
    );
    assert.equal(out.text, 'export default function Card() { return <div/>; }');
    assert.deepEqual(out.usage, { inputTokens: 101, outputTokens: 202 });
    assert.equal(out.providerRequestId, 'req_peer_chat');

    assert.equal(peer.requests.length, 1);
    const r = peer.requests[0]!;
    assert.equal(r.path, '/v1/chat/completions');
    assert.equal(r.headers.authorization, `Bearer ${SECRET}`);
    assert.equal(r.json.model, 'gpt-test');
    assert.equal(r.json.max_tokens, 321);
    assert.equal(r.json.messages[0].role, 'system');
    assert.match(r.json.messages[0].content, /TSX/);
    const parts = r.json.messages[1].content;
    assert.equal(parts[0].type, 'text');
    assert.match(parts[0].text, /A pricing card/);
    assert.match(parts[0].text, /--- Brief ---\nBrand: Kiln/);
    assert.equal(parts[1].type, 'image_url');
    assert.equal(parts[1].image_url.url, `data:image/png;base64,${img.toString('base64')}`);
  });

  it('an answer that is only a code fence is no content: refused through generateCode, whatever the adapter', async () => {
    peer.script([chatReply('```tsx\n```'), chatReply('```tsx\n```')]);
    assert.equal((await provider().generateText(textReq({ targetLanguage: 'tsx' }))).text, '', 'the adapter strips it to nothing');
    await assert.rejects(generateCode(provider(), textReq({ targetLanguage: 'tsx' })), (err: unknown) =>
      err instanceof ProviderError && err.code === 'rejected' && !err.retryable && /no content/.test(err.message));
  });

  it('omits the Authorization header when the key variable is unset and images for text-only models', async () => {
    await provider({ env: {} }).generateText(
      textReq({ model: model({ supports_image_input: false }), images: [{ data: Buffer.from('x'), mediaType: 'image/png' }] }),
    );
    const r = peer.requests[0]!;
    assert.equal(r.headers.authorization, undefined);
    assert.equal(typeof r.json.messages[1].content, 'string');
  });

  it('tailors the system prompt to screen HTML and GLSL', async () => {
    await provider().generateText(textReq({ screenHtml: true }));
    await provider().generateText(textReq({ targetLanguage: 'glsl' }));
    assert.match(peer.requests[0]!.json.messages[0].content, /<!doctype html>/);
    assert.match(peer.requests[1]!.json.messages[0].content, /mainImage/);
    assert.match(peer.requests[1]!.json.messages[0].content, /@range/);
  });

  it('estimates usage when the server omits it', async () => {
    peer.script([{ json: { choices: [{ message: { content: 'hello world' } }] } }]);
    const out = await provider().generateText(textReq({ targetLanguage: 'text' }));
    assert.ok(out.usage.inputTokens > 0 && out.usage.outputTokens > 0);
  });

  it('succeeds when the upstream is slow but within the timeout', async () => {
    peer.script([{ ...chatReply('slow'), delayMs: 300 }]);
    const out = await provider({ timeoutMs: 5000 }).generateText(textReq({ targetLanguage: 'text' }));
    assert.equal(out.text, 'slow');
    assert.equal(peer.requests.length, 1);
  });

  it('honours retry-after on 429 and then succeeds', async () => {
    peer.script([errorReply(429, 'rate_limit_error', 'rate_limit_exceeded', 'slow down', { 'retry-after-ms': '200' }), chatReply('ok')]);
    const t0 = Date.now();
    const out = await provider().generateText(textReq({ targetLanguage: 'text' }));
    assert.equal(out.text, 'ok');
    assert.equal(peer.requests.length, 2);
    assert.ok(Date.now() - t0 >= 190, 'waited for retry-after');
  });

  it('fails fast (retryable, with retryAfterMs) when retry-after exceeds the cap', async () => {
    peer.script([errorReply(429, 'rate_limit_error', null, 'later', { 'retry-after': '120' })]);
    const err = await rejection(provider({ maxRetryAfterMs: 1000 }).generateText(textReq()));
    assert.equal(err.code, 'rate_limited');
    assert.equal(err.retryable, true);
    assert.equal(err.retryAfterMs, 120_000);
    assert.equal(peer.requests.length, 1);
  });

  it('does not retry 429 insufficient_quota', async () => {
    peer.script([errorReply(429, 'insufficient_quota', 'insufficient_quota')]);
    const err = await rejection(provider().generateText(textReq()));
    assert.equal(err.retryable, false);
    assert.equal(peer.requests.length, 1);
  });

  it('retries a 500 and then succeeds', async () => {
    peer.script([errorReply(500, 'server_error', null), chatReply('recovered')]);
    const out = await provider().generateText(textReq({ targetLanguage: 'text' }));
    assert.equal(out.text, 'recovered');
    assert.equal(peer.requests.length, 2);
  });

  it('retries a connection reset and then succeeds', async () => {
    peer.script([{ reset: true }, chatReply('again')]);
    const out = await provider().generateText(textReq({ targetLanguage: 'text' }));
    assert.equal(out.text, 'again');
    assert.equal(peer.requests.length, 2);
  });

  it('gives up after maxAttempts 5xx with a retryable error', async () => {
    peer.script(() => errorReply(503, 'server_error', 'overloaded', `internal detail ${SECRET}`));
    const err = await rejection(provider().generateText(textReq()));
    assert.equal(err.code, 'upstream_error');
    assert.equal(err.retryable, true);
    assert.equal(err.status, 503);
    assert.match(err.message, /503/);
    assert.match(err.message, /after 3 attempts/);
    assert.ok(!err.message.includes('internal detail'));
    assert.equal(peer.requests.length, 3);
  });

  it('fails at once on a 400 with a short safe summary', async () => {
    peer.script(() => errorReply(400, 'invalid_request_error', 'context_length_exceeded', `Your key ${SECRET} is bad <script>`));
    const err = await rejection(provider().generateText(textReq()));
    assert.equal(err.code, 'rejected');
    assert.equal(err.retryable, false);
    assert.equal(err.message, 'upstream provider returned 400 (invalid_request_error/context_length_exceeded)');
    assert.equal(peer.requests.length, 1);
  });

  it('drops free text and key-like values from the summary', async () => {
    peer.script([errorReply(401, `bad ${SECRET} type`, null), errorReply(403, 'permission_error', SECRET), errorReply(404, 'not_found_error', 'sk-abc123')]);
    assert.equal((await rejection(provider().generateText(textReq()))).message, 'upstream provider returned 401');
    assert.equal((await rejection(provider().generateText(textReq()))).message, 'upstream provider returned 403 (permission_error)');
    assert.equal((await rejection(provider().generateText(textReq()))).message, 'upstream provider returned 404 (not_found_error)');
  });

  it('reports malformed JSON without retrying', async () => {
    peer.script(() => ({ body: '{"choices": [' }));
    const err = await rejection(provider().generateText(textReq()));
    assert.equal(err.code, 'bad_response');
    assert.equal(err.message, 'upstream provider returned malformed JSON');
    assert.equal(peer.requests.length, 1);
  });

  it('an error inside a 200 answer (OpenRouter): a 4xx there is final, a 5xx may pass', async () => {
    peer.script(() => ({ json: { error: { code: 402, message: `credits exhausted for ${SECRET}` } } }));
    let err = await rejection(provider().generateText(textReq()));
    assert.deepEqual([err.code, err.retryable, err.message], ['rejected', false, 'upstream provider returned an error (402)']);
    assert.equal(peer.requests.length, 1);
    peer.requests.length = 0;
    peer.script(() => ({ json: { error: { code: 502, message: 'provider returned error' } } }));
    err = await rejection(provider().generateText(textReq()));
    assert.deepEqual([err.code, err.retryable, err.message], ['upstream_error', true, 'upstream provider returned an error (502)']);
  });

  it('reports an empty answer', async () => {
    peer.script([chatReply('   ')]);
    const err = await rejection(provider().generateText(textReq()));
    assert.equal(err.code, 'rejected');
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

  it('stops at once when the caller aborts', async () => {
    peer.script(() => ({ ...chatReply('late'), delayMs: 5000 }));
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(new Error('shutdown')), 100);
    const t0 = Date.now();
    const err = await rejection(provider({ timeoutMs: 10_000 }).generateText(textReq({ signal: ctl.signal })));
    assert.equal(err.code, 'aborted');
    assert.ok(Date.now() - t0 < 1000);
    assert.equal(peer.requests.length, 1);
  });

  it('does not start when already aborted', async () => {
    const ctl = new AbortController();
    ctl.abort();
    const err = await rejection(provider().generateText(textReq({ signal: ctl.signal })));
    assert.equal(err.code, 'aborted');
    assert.equal(peer.requests.length, 0);
  });
});

describe('openai adapter: images', () => {
  it('decodes b64_json, sends size and response_format, crops to the exact ratio', async () => {
    peer.script([await imageReply(1536, 1024)]);
    const out = await provider().generateImage(imageReq({ aspectRatio: '16:9', textInputs: [{ content: 'autumn palette' }] }));
    const r = peer.requests[0]!;
    assert.equal(r.path, '/v1/images/generations');
    assert.equal(r.json.size, '1536x1024');
    assert.equal(r.json.response_format, 'b64_json');
    assert.equal(r.json.model, 'img-test');
    assert.match(r.json.prompt, /A red fox[\s\S]*autumn palette/);
    assert.equal(out.mediaType, 'image/png');
    assert.equal(out.width, 1536);
    assert.equal(out.height, 864);
    const meta = await sharp(out.data).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['png', 1536, 864]);
    assert.equal(out.providerRequestId, 'req_peer_image');
  });

  it('fetches url responses from the endpoint origin without sending the key', async () => {
    const url = peer.file('gen.png', await png(1024, 1024, '#ff0000'));
    peer.script([{ json: { data: [{ url }] } }]);
    const out = await provider().generateImage(imageReq());
    assert.deepEqual([out.width, out.height, out.mediaType], [1024, 1024, 'image/png']);
  });

  it('caps url downloads', async () => {
    const url = peer.file('big.png', await png(1024, 1024));
    peer.script([{ json: { data: [{ url }] } }]);
    const err = await rejection(provider({ maxImageBytes: 100 }).generateImage(imageReq()));
    assert.equal(err.code, 'bad_response');
  });

  it('refuses url responses pointing at private hosts off the endpoint origin', async () => {
    peer.script([{ json: { data: [{ url: 'https://169.254.169.254/latest/meta-data' } ] } }]);
    const err = await rejection(provider().generateImage(imageReq()));
    assert.equal(err.code, 'network');
    assert.match(err.message, /not allowed/);
  });

  it('uses catalog size overrides and extra params', async () => {
    peer.script([await imageReply(1792, 1024)]);
    const m = imageModel({
      upstream: { baseUrl: peer.url, model: 'sdxl-turbo', imageSizes: { '16:9': '1792x1024' }, imageParams: { quality: 'hd', response_format: null } } as CatalogModel['upstream'],
    });
    const out = await provider().generateImage(imageReq({ model: m, aspectRatio: '16:9' }));
    const r = peer.requests[0]!;
    assert.equal(r.json.size, '1792x1024');
    assert.equal(r.json.quality, 'hd');
    assert.equal('response_format' in r.json, false);
    assert.equal(out.height, 1008);
  });

  it('sends reference images to /images/edits as multipart', async () => {
    const m = imageModel({ supports_image_input: true });
    const ref = await png(16, 16);
    await provider().generateImage(imageReq({ model: m, images: [{ data: ref, mediaType: 'image/png' }] }));
    const r = peer.requests[0]!;
    assert.equal(r.path, '/v1/images/edits');
    assert.equal(r.headers.authorization, `Bearer ${SECRET}`);
    assert.deepEqual(r.form!.prompt, ['A red fox']);
    assert.deepEqual(r.form!.image, [{ filename: 'input-1.png', type: 'image/png', size: ref.length }]);
  });

  it('rejects a response without image data', async () => {
    peer.script([{ json: { data: [] } }]);
    const err = await rejection(provider().generateImage(imageReq()));
    assert.equal(err.code, 'bad_response');
  });

  it('rejects bytes that are not an image', async () => {
    peer.script([{ json: { data: [{ b64_json: Buffer.from('not an image').toString('base64') }] } }]);
    const err = await rejection(provider().generateImage(imageReq()));
    assert.equal(err.message, 'upstream provider returned an unreadable image');
  });
});

const upstream = (u: Record<string, unknown>) => ({ baseUrl: peer.url, apiKeyEnv: 'KILN_TEST_KEY', ...u }) as CatalogModel['upstream'];
const metaOf = async (data: Buffer) => {
  const m = await sharp(data).metadata();
  return [m.format, m.width, m.height];
};

async function rawPost(path: string, body: unknown) {
  const res = await fetch(`${peer.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as any };
}

describe('the loopback peer is as strict as OpenAI', () => {
  it('answers OpenAI\'s 400s for response_format on gpt-image, max_tokens on reasoning models and unknown sizes', async () => {
    const fmt = await rawPost('/images/generations', { model: 'gpt-image-1', prompt: 'x', response_format: 'b64_json' });
    assert.equal(fmt.status, 400);
    assert.deepEqual(fmt.json, { error: { message: "Unknown parameter: 'response_format'.", type: 'invalid_request_error', param: 'response_format', code: 'unknown_parameter' } });
    const size = await rawPost('/images/generations', { model: 'gpt-image-1', prompt: 'x', size: '1792x1024' });
    assert.deepEqual(size.json, { error: { message: "Invalid value: '1792x1024'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'.", type: 'invalid_request_error', param: 'size', code: 'invalid_value' } });
    const d3 = await rawPost('/images/generations', { model: 'dall-e-3', prompt: 'x', size: '1536x1024' });
    assert.equal(d3.json.error.param, 'size');
    const max = await rawPost('/chat/completions', { model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 });
    assert.equal(max.status, 400);
    assert.deepEqual(max.json, { error: { message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", type: 'invalid_request_error', param: 'max_tokens', code: 'unsupported_parameter' } });
    const temp = await rawPost('/chat/completions', { model: 'o3', messages: [{ role: 'user', content: 'hi' }], temperature: 0.2 });
    assert.equal(temp.json.error.code, 'unsupported_value');
    const ok = await rawPost('/chat/completions', { model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 1000 });
    assert.equal(ok.status, 200);
    assert.equal(ok.json.usage.completion_tokens_details.reasoning_tokens, REASONING_TOKENS);
    assert.equal(peer.requests.length, 6);
  });
});

describe('openai adapter: OpenAI model families', () => {
  it('picks the family from the upstream model name, the endpoint and upstream.family', () => {
    const fam = (model: string, over: Partial<CatalogModel> & { baseUrl?: string; family?: string } = {}) =>
      openaiFamily({ id: 'x', category: over.category ?? 'text', upstream: { baseUrl: over.baseUrl ?? 'http://127.0.0.1:1/v1', model, ...(over.family ? { family: over.family } : {}) } });
    for (const m of ['gpt-image-1', 'gpt-image-1-mini', 'gpt-image-1.5', 'chatgpt-image-latest']) assert.equal(fam(m, { category: 'image' }), 'gpt-image', m);
    assert.equal(fam('dall-e-2', { category: 'image' }), 'dall-e-2');
    assert.equal(fam('dall-e-3', { category: 'image' }), 'dall-e-3');
    for (const m of ['o1', 'o1-mini', 'o3', 'o3-pro', 'o4-mini-2025-04-16', 'gpt-5', 'gpt-5-mini', 'gpt-5.1', 'gpt-5-codex', 'codex-mini-latest']) assert.equal(fam(m), 'reasoning', m);
    for (const m of ['gpt-5-chat-latest', 'gpt-4o', 'gpt-4.1-mini', 'chatgpt-4o-latest', 'gpt-3.5-turbo']) assert.equal(fam(m), 'chat', m);
    // Routers and local servers: vendor-prefixed or non-OpenAI names.
    assert.equal(fam('openai/gpt-5', { baseUrl: 'https://openrouter.ai/api/v1' }), 'compatible');
    assert.equal(fam('llama3.1:8b'), 'compatible');
    assert.equal(fam('omni-moderation-latest'), 'compatible');
    assert.equal(fam('ft:my-finetune', { baseUrl: 'https://api.openai.com/v1' }), 'chat');
    assert.equal(fam('sdxl', { category: 'image', baseUrl: 'https://api.openai.com/v1' }), 'compatible');
    assert.equal(fam('gpt-5', { family: 'compatible' }), 'compatible');
    assert.equal(fam('qwen3', { family: 'reasoning' }), 'reasoning');
  });

  it('gpt-image: no response_format, its sizes, quality/output_format/background/moderation passed, base64 decoded', async () => {
    const m = imageModel({ upstream: upstream({ model: 'gpt-image-1', params: { quality: 'medium', output_format: 'webp', background: 'opaque', moderation: 'low' } }) });
    const expected: Array<[ImageRequest['aspectRatio'], string, number, number]> = [
      ['1:1', '1024x1024', 1024, 1024], ['16:9', '1536x1024', 1536, 864], ['3:2', '1536x1024', 1536, 1024],
      ['4:3', '1536x1024', 1365, 1024], ['9:16', '1024x1536', 864, 1536], ['2:3', '1024x1536', 1024, 1536], ['3:4', '1024x1536', 1024, 1365],
    ];
    for (const [ratio, size, w, h] of expected) {
      const out = await provider().generateImage(imageReq({ model: m, aspectRatio: ratio }));
      const r = peer.requests.at(-1)!;
      assert.equal(r.path, '/v1/images/generations');
      assert.equal(r.json.size, size, ratio);
      assert.equal('response_format' in r.json, false);
      assert.deepEqual([r.json.model, r.json.quality, r.json.output_format, r.json.background, r.json.moderation, r.json.n], ['gpt-image-1', 'medium', 'webp', 'opaque', 'low', 1]);
      assert.equal(out.mediaType, 'image/webp');
      assert.deepEqual(await metaOf(out.data), ['webp', w, h], ratio);
      assert.deepEqual([out.width, out.height], [w, h]);
    }
  });

  it('gpt-image edits: multipart image[] (one or several), no response_format', async () => {
    const m = imageModel({ supports_image_input: true, upstream: upstream({ model: 'gpt-image-1', params: { quality: 'low', input_fidelity: 'high' } }) });
    const a = await png(16, 16), b = await png(24, 24, '#ff0000');
    await provider().generateImage(imageReq({ model: m, aspectRatio: '3:2', images: [{ data: a, mediaType: 'image/png' }, { data: b, mediaType: 'image/png' }] }));
    await provider().generateImage(imageReq({ model: m, images: [{ data: a, mediaType: 'image/png' }] }));
    const [two, one] = peer.requests;
    assert.equal(two!.path, '/v1/images/edits');
    assert.deepEqual(two!.form!['image[]'], [{ filename: 'input-1.png', type: 'image/png', size: a.length }, { filename: 'input-2.png', type: 'image/png', size: b.length }]);
    assert.equal(two!.form!.image, undefined);
    assert.equal(two!.form!.response_format, undefined);
    assert.deepEqual([two!.form!.size, two!.form!.quality, two!.form!.input_fidelity, two!.form!.n], [['1536x1024'], ['low'], ['high'], ['1']]);
    assert.equal(one!.form!['image[]']!.length, 1);
  });

  it('gpt-image: an entry that still asks for response_format fails before any call; the old null workaround works', async () => {
    const legacy = imageModel({ upstream: upstream({ model: 'gpt-image-1', imageParams: { response_format: 'b64_json' } }) });
    const err = await rejection(provider().generateImage(imageReq({ model: legacy })));
    assert.equal(err.code, 'config');
    assert.match(err.message, /response_format/);
    assert.equal(peer.requests.length, 0);
    const workaround = imageModel({ upstream: upstream({ model: 'gpt-image-1', imageParams: { response_format: null } }) });
    const out = await provider().generateImage(imageReq({ model: workaround }));
    assert.equal(out.width, 1024);
  });

  it('image prompts: the family\'s documented length and upstream.maxPromptBytes are enforced before any call', async () => {
    const gi = imageModel({ upstream: upstream({ model: 'gpt-image-1' }) });
    const long = await rejection(provider().generateImage(imageReq({ model: gi, prompt: 'x'.repeat(32_001) })));
    assert.equal(long.code, 'rejected');
    assert.match(long.message, /at most 32000 characters/);
    const capped = imageModel({ upstream: upstream({ model: 'gpt-image-1', maxPromptBytes: 100 }) });
    const bytes = await rejection(provider().generateImage(imageReq({ model: capped, prompt: 'é'.repeat(60) })));
    assert.match(bytes.message, /at most 100 bytes/);
    assert.equal(peer.requests.length, 0);
    await provider().generateImage(imageReq({ model: capped, prompt: 'é'.repeat(50) }));
    assert.equal(peer.requests.length, 1);
  });

  it('dall-e-3: its sizes, response_format b64_json (or a URL the operator asked for), style and hd quality', async () => {
    const m = imageModel({ upstream: upstream({ model: 'dall-e-3', params: { quality: 'hd', style: 'natural' } }) });
    const wide = await provider().generateImage(imageReq({ model: m, aspectRatio: '16:9' }));
    const tall = await provider().generateImage(imageReq({ model: m, aspectRatio: '9:16' }));
    const [w, t] = peer.requests;
    assert.deepEqual([w!.json.size, w!.json.response_format, w!.json.quality, w!.json.style], ['1792x1024', 'b64_json', 'hd', 'natural']);
    assert.equal(t!.json.size, '1024x1792');
    assert.deepEqual([wide.width, wide.height, tall.width, tall.height], [1792, 1008, 1008, 1792]);
    const url = imageModel({ upstream: upstream({ model: 'dall-e-3', params: { response_format: 'url' } }) });
    const fetched = await provider().generateImage(imageReq({ model: url }));
    assert.equal(peer.requests[2]!.json.response_format, 'url');
    assert.deepEqual([fetched.width, fetched.height], [1024, 1024]);
  });

  it('dall-e-2: square sizes cropped to the ratio; edits send one `image`, two are refused before any call', async () => {
    const m = imageModel({ supports_image_input: true, upstream: upstream({ model: 'dall-e-2' }) });
    const out = await provider().generateImage(imageReq({ model: m, aspectRatio: '16:9' }));
    assert.equal(peer.requests[0]!.json.size, '1024x1024');
    assert.deepEqual([out.width, out.height], [1024, 576]);
    const ref = await png(32, 32);
    await provider().generateImage(imageReq({ model: m, images: [{ data: ref, mediaType: 'image/png' }] }));
    assert.deepEqual(peer.requests[1]!.form!.image, [{ filename: 'input-1.png', type: 'image/png', size: ref.length }]);
    assert.deepEqual(peer.requests[1]!.form!.response_format, ['b64_json']);
    const two = await rejection(provider().generateImage(imageReq({ model: m, images: [{ data: ref, mediaType: 'image/png' }, { data: ref, mediaType: 'image/png' }] })));
    assert.equal(two.code, 'rejected');
    assert.equal(peer.requests.length, 2);
  });

  it('reasoning models: max_completion_tokens, a developer message, no temperature, reasoning_effort; reasoning tokens billed', async () => {
    const m = model({ upstream: upstream({ model: 'gpt-5', params: { reasoning_effort: 'low', verbosity: 'low' } }) });
    const out = await provider().generateText(textReq({ model: m }));
    const r = peer.requests[0]!;
    assert.equal(r.json.max_completion_tokens, 321);
    assert.equal('max_tokens' in r.json, false);
    assert.equal('temperature' in r.json, false);
    assert.deepEqual(r.json.messages.map((x: any) => x.role), ['developer', 'user']);
    assert.match(r.json.messages[0].content, /TSX/);
    assert.deepEqual([r.json.reasoning_effort, r.json.verbosity], ['low', 'low']);
    assert.equal(out.text, 'peer reply');
    // completion_tokens (34 visible + 64 reasoning) — all billed at the output price.
    assert.deepEqual(out.usage, { inputTokens: 12, outputTokens: 34 + REASONING_TOKENS });
  });

  it('reasoning models: a budget spent on reasoning fails clearly; missing usage bills the whole budget', async () => {
    const m = model({ upstream: upstream({ model: 'o4-mini' }) });
    const err = await rejection(provider().generateText(textReq({ model: m, maxTokens: 50 })));
    assert.equal(err.code, 'rejected');
    assert.match(err.message, /output token limit/);
    peer.script([{ json: { choices: [{ message: { content: 'no usage here' }, finish_reason: 'stop' }] } }]);
    const out = await provider().generateText(textReq({ model: m, targetLanguage: 'text' }));
    assert.equal(out.usage.outputTokens, 321);
  });

  it('o1-mini takes neither system nor developer messages: the instructions lead the user turn', async () => {
    const m = model({ supports_image_input: false, upstream: upstream({ model: 'o1-mini' }) });
    await provider().generateText(textReq({ model: m }));
    const r = peer.requests[0]!;
    assert.deepEqual(r.json.messages.map((x: any) => x.role), ['user']);
    assert.match(r.json.messages[0].content, /^You are a code and content generator[\s\S]*\n\nA pricing card$/);
  });

  it('OpenAI chat models take max_completion_tokens and a system message; upstream.family overrides the name', async () => {
    await provider().generateText(textReq({ model: model({ upstream: upstream({ model: 'gpt-4.1-mini', params: { temperature: 0.2 } }) }) }));
    await provider().generateText(textReq({ model: model({ upstream: upstream({ model: 'my-vllm-model', family: 'chat' }) }) }));
    for (const r of peer.requests) {
      assert.equal(r.json.max_completion_tokens, 321);
      assert.equal('max_tokens' in r.json, false);
      assert.equal(r.json.messages[0].role, 'system');
    }
    assert.equal(peer.requests[0]!.json.temperature, 0.2);
    // Forcing the compatible dialect onto a reasoning model: OpenAI's own 400, not retried.
    const err = await rejection(provider().generateText(textReq({ model: model({ upstream: upstream({ model: 'gpt-5', family: 'compatible' }) }) })));
    assert.equal(err.message, 'upstream provider returned 400 (invalid_request_error/unsupported_parameter)');
    assert.equal(peer.requests.length, 3);
    assert.equal(peer.requests[2]!.json.max_tokens, 321);
  });

  it('compatible servers that report reasoning beside completion_tokens are billed for it', async () => {
    const m = model({ upstream: upstream({ model: 'deepseek-r1' }) });
    peer.script([
      chatReply('a', { prompt_tokens: 10, completion_tokens: 20, total_tokens: 130, completion_tokens_details: { reasoning_tokens: 100 } }),
      chatReply('b', { prompt_tokens: 10, completion_tokens: 20, completion_tokens_details: { reasoning_tokens: 100 } }),
      chatReply('c', { prompt_tokens: 10, completion_tokens: 120, completion_tokens_details: { reasoning_tokens: 100 } }),
    ]);
    const p = provider();
    assert.deepEqual((await p.generateText(textReq({ model: m, targetLanguage: 'text' }))).usage, { inputTokens: 10, outputTokens: 120 });
    assert.deepEqual((await p.generateText(textReq({ model: m, targetLanguage: 'text' }))).usage, { inputTokens: 10, outputTokens: 120 });
    assert.deepEqual((await p.generateText(textReq({ model: m, targetLanguage: 'text' }))).usage, { inputTokens: 10, outputTokens: 120 });
    assert.equal(peer.requests[0]!.json.max_tokens, 321);
  });
});

describe('openai catalog entries: rules per family (kiln model upsert)', () => {
  const entry = (over: Record<string, unknown>, up: Record<string, unknown>) => ({
    id: 'acme/x', name: 'X', category: 'text', provider: 'openai',
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, ...over,
    upstream: { baseUrl: 'https://api.openai.com/v1', ...up },
  });
  const image = { category: 'image', cost: { micros_per_image: 40000 } };
  const problem = (e: unknown) => {
    const r = v.safeParse(ModelEntry, e);
    return r.success ? null : r.issues.map((i) => i.message).join('; ');
  };

  it('refuses what the family rejects, with a message naming it', () => {
    assert.match(problem(entry(image, { model: 'gpt-image-1', imageParams: { response_format: 'b64_json' } }))!, /response_format/);
    assert.match(problem(entry(image, { model: 'gpt-image-1', params: { size: '1024x1024' } }))!, /imageSizes/);
    assert.match(problem(entry({}, { model: 'gpt-5', params: { temperature: 0.2 } }))!, /temperature is not supported by reasoning models/);
    assert.match(problem(entry({}, { model: 'gpt-5', params: { max_tokens: 100 } }))!, /max_tokens/);
    assert.match(problem(entry({}, { model: 'gpt-4o', params: { reasoning_effort: 'low' } }))!, /reasoning_effort/);
    assert.match(problem(entry({ ...image, supports_image_input: true }, { model: 'dall-e-3' }))!, /no edits endpoint/);
    assert.match(problem(entry(image, { model: 'dall-e-3', imageSizes: { '16:9': '1536x1024' } }))!, /1792x1024/);
    assert.match(problem(entry(image, { model: 'dall-e-2', params: { output_format: 'webp' } }))!, /only for gpt-image/);
    assert.match(problem(entry({}, { model: 'llama', family: 'gpt-image' }))!, /for image entries/);
    assert.ok(problem(entry({}, { model: 'llama', family: 'bogus' })));
    assert.ok(problem(entry({}, { model: 'llama', maxPromptBytes: 0 })));
  });

  it('accepts documented parameters and leaves compatible servers alone', () => {
    assert.equal(problem(entry(image, { model: 'gpt-image-1', params: { quality: 'medium', background: 'transparent' }, maxPromptBytes: 4000 })), null);
    assert.equal(problem(entry({}, { model: 'gpt-5', params: { reasoning_effort: 'minimal' } })), null);
    assert.equal(problem(entry(image, { model: 'dall-e-3', imageSizes: { '16:9': '1792x1024' }, params: { style: 'vivid' } })), null);
    assert.equal(problem(entry({}, { baseUrl: 'http://127.0.0.1:11434/v1', model: 'llama3.1', params: { temperature: 0.2 } })), null);
    assert.equal(problem(entry({}, { baseUrl: 'https://openrouter.ai/api/v1', model: 'openai/gpt-5', params: { temperature: 1 } })), null);
  });
});
