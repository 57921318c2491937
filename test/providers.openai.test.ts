// The openai adapter against a real OpenAI-protocol peer on loopback: success paths, retries,
// timeouts, cancellation and client-safe errors.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import sharp from 'sharp';
import type { CatalogModel } from '../src/billing/catalog.ts';
import { createOpenAIProvider, ProviderError, type OpenAIOptions, type TextRequest, type ImageRequest } from '../src/providers/index.ts';
import { chatReply, errorReply, imageReply, png, startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';

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

function provider(opts: OpenAIOptions = {}) {
  return createOpenAIProvider({ timeoutMs: 1000, maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20, env: { KILN_TEST_KEY: SECRET }, ...opts });
}

function textReq(over: Partial<TextRequest> = {}): TextRequest {
  return {
    model: model(),
    prompt: 'A pricing card',
    targetLanguage: 'tsx',
    screenHtml: false,
    images: [],
    textInputs: [],
    maxTokens: 321,
    signal: new AbortController().signal,
    ...over,
  };
}

function imageReq(over: Partial<ImageRequest> = {}): ImageRequest {
  return { model: imageModel(), prompt: 'A red fox', aspectRatio: '1:1', images: [], textInputs: [], signal: new AbortController().signal, ...over };
}

async function rejection(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ProviderError, `expected ProviderError, got ${String(err)}`);
    assert.ok(!err.message.includes(SECRET));
    assert.ok(!err.message.includes(peer.origin), 'error message must not carry the upstream URL');
    return err;
  }
  assert.fail('expected a rejection');
}

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
    const out = await provider({ timeoutMs: 2000 }).generateText(textReq({ targetLanguage: 'text' }));
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
      upstream: { baseUrl: peer.url, model: 'dall-e-3', imageSizes: { '16:9': '1792x1024' }, imageParams: { quality: 'hd', response_format: null } } as CatalogModel['upstream'],
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
