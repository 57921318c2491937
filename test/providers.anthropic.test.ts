// The anthropic adapter against a real Messages API peer on loopback (as strict as Anthropic about
// headers and body): the documented request, usage, stop reasons, retries (429 retry-after, 529,
// 5xx, resets), timeouts, cancellation and client-safe errors; the shipped catalog entries.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import * as v from 'valibot';
import type { CatalogModel } from '../src/billing/catalog.ts';
import { ModelEntry } from '../src/cli/model-entry.ts';
import { createAnthropicProvider } from '../src/providers/anthropic.ts';
import type { AdapterOptions } from '../src/providers/upstream.ts';
import { getProvider, type TextRequest } from '../src/providers/index.ts';
import { errorReply, messageReply, startAnthropicPeer, type AnthropicPeer } from './_anthropic-peer.ts';
import { clientGone, png } from './_peer.ts';
import { providerError, textRequest } from './_adapter.ts';

const SECRET = 'sk-ant-test-secret-do-not-leak';
let peer: AnthropicPeer;

function model(over: Partial<CatalogModel> = {}): CatalogModel {
  return {
    id: 'test/claude',
    name: 'Test Claude',
    category: 'text',
    provider: 'anthropic',
    upstream: { baseUrl: peer.url, model: 'claude-test', apiKeyEnv: 'KILN_TEST_ANTHROPIC_KEY' },
    supports_image_input: true,
    input_modalities: ['text', 'image'],
    output_modalities: ['text'],
    cost: { input_micros_per_token: 3, output_micros_per_token: 15 },
    maxOutputTokens: 1000,
    markup: 1,
    enabled: true,
    ...over,
  };
}

function provider(opts: AdapterOptions = {}) {
  // A generous per-attempt timeout: the peer runs in this process, and on a loaded machine an
  // answer (an encoded image) can take seconds; one cut short is retried and the request counts
  // are off. The timeout tests set their own short one.
  return createAnthropicProvider({ timeoutMs: 10_000, maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20, env: { KILN_TEST_ANTHROPIC_KEY: SECRET }, ...opts });
}

const textReq = (over: Partial<TextRequest> = {}) => textRequest(model(), over);

const rejection = (p: Promise<unknown>) => providerError(p, { key: SECRET, origin: peer.origin });

before(async () => {
  peer = await startAnthropicPeer({ key: SECRET });
});
after(() => peer.close());
beforeEach(() => {
  peer.requests.length = 0;
  peer.script([]);
});

describe('anthropic peer', () => {
  it('is as strict as the Messages API: key, anthropic-version, max_tokens, content blocks, unknown fields', async () => {
    const body = { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    const post = (headers: Record<string, string>, b: unknown = body) =>
      fetch(`${peer.url}/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(b) })
        .then(async (r) => ({ status: r.status, json: (await r.json()) as any }));
    const ok = { 'x-api-key': SECRET, 'anthropic-version': '2023-06-01' };
    assert.equal((await post(ok)).status, 200);
    const noVersion = await post({ 'x-api-key': SECRET });
    assert.equal(noVersion.status, 400);
    assert.deepEqual(noVersion.json.type, 'error');
    assert.equal(noVersion.json.error.type, 'invalid_request_error');
    assert.equal((await post({ 'anthropic-version': '2023-06-01' })).json.error.type, 'authentication_error');
    const { max_tokens: _, ...noMax } = body;
    assert.match((await post(ok, noMax)).json.error.message, /max_tokens/);
    assert.match((await post(ok, { ...body, response_format: 'json' })).json.error.message, /Extra inputs/);
    assert.equal((await post(ok, { ...body, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'AA==' } }] }] })).status, 400);
    assert.equal((await post(ok, { ...body, messages: [{ role: 'assistant', content: 'hi' }] })).status, 400);
  });
});

describe('anthropic adapter', () => {
  it('sends the documented request: headers, model, max_tokens, system, text then image blocks', async () => {
    peer.script([messageReply('```tsx\nexport default function Card() { return <div/>; }\n```', { input_tokens: 101, output_tokens: 202 })]);
    const img = await png(8, 8);
    const out = await provider().generateText(textReq({
      images: [{ data: img, mediaType: 'image/png' }, { url: 'https://images.example.com/ref.webp', mediaType: 'image/webp' }],
      textInputs: [{ content: 'Brand: Kiln', label: 'Brief' }],
    }));
    assert.equal(out.text, 'export default function Card() { return <div/>; }');
    assert.deepEqual(out.usage, { inputTokens: 101, outputTokens: 202 });
    // Anthropic's request id header (`request-id`), as its SDK reports it.
    assert.match(out.providerRequestId!, /^req_peer\d+$/);

    assert.equal(peer.requests.length, 1);
    const r = peer.requests[0]!;
    assert.equal(r.invalid, null);
    assert.equal(r.path, '/v1/messages');
    assert.equal(r.headers['x-api-key'], SECRET);
    assert.equal(r.headers['anthropic-version'], '2023-06-01');
    assert.equal(r.headers.authorization, undefined, 'Anthropic takes x-api-key, not a bearer token');
    assert.deepEqual(Object.keys(r.json).sort(), ['max_tokens', 'messages', 'model', 'system']);
    assert.equal(r.json.model, 'claude-test');
    assert.equal(r.json.max_tokens, 321);
    assert.match(r.json.system, /TSX/);
    assert.equal(r.json.messages.length, 1);
    const [text, inline, byUrl] = r.json.messages[0].content;
    assert.equal(r.json.messages[0].role, 'user');
    assert.equal(text.type, 'text');
    assert.match(text.text, /A pricing card/);
    assert.match(text.text, /--- Brief ---\nBrand: Kiln/);
    assert.deepEqual(inline, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: img.toString('base64') } });
    assert.deepEqual(byUrl, { type: 'image', source: { type: 'url', url: 'https://images.example.com/ref.webp' } });
  });

  it('counts cache writes and reads as input tokens and joins every text block', async () => {
    peer.script([messageReply(['<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1">', '</svg>'], {
      input_tokens: 50, cache_creation_input_tokens: 7, cache_read_input_tokens: 3, output_tokens: 20,
    })]);
    const out = await provider().generateText(textReq({ model: model({ category: 'svg' }), targetLanguage: 'text' }));
    assert.equal(out.text, '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"></svg>');
    assert.deepEqual(out.usage, { inputTokens: 60, outputTokens: 20 });
    assert.match(peer.requests[0]!.json.system, /standalone SVG/);
  });

  it('sends no image blocks for a text-only entry, the prompt rules for screens and GLSL, and upstream.params', async () => {
    await provider().generateText(textReq({
      model: model({ supports_image_input: false, upstream: { baseUrl: peer.url, model: 'claude-test', apiKeyEnv: 'KILN_TEST_ANTHROPIC_KEY', params: { temperature: 0.2, max_tokens: 99999, model: 'other' } } }),
      images: [{ data: Buffer.from('x'), mediaType: 'image/png' }],
    }));
    await provider().generateText(textReq({ screenHtml: true }));
    await provider().generateText(textReq({ targetLanguage: 'glsl' }));
    const [plain, screen, glsl] = peer.requests.map((r) => r.json);
    assert.deepEqual(plain.messages[0].content.map((b: any) => b.type), ['text']);
    assert.equal(plain.temperature, 0.2);
    assert.equal(plain.max_tokens, 321, 'params cannot raise the billed cap');
    assert.equal(plain.model, 'claude-test');
    assert.match(screen.system, /<!doctype html>/);
    assert.match(glsl.system, /mainImage/);
  });

  it('returns what was written when max_tokens ends the answer', async () => {
    peer.script([messageReply('{"partial": ', { input_tokens: 10, output_tokens: 321 }, 'max_tokens')]);
    const out = await provider().generateText(textReq({ targetLanguage: 'json' }));
    assert.equal(out.text, '{"partial":');
    assert.deepEqual(out.usage, { inputTokens: 10, outputTokens: 321 });
  });

  it('a refusal and an empty answer are clear, non-retryable errors', async () => {
    peer.script([messageReply('I can\'t help with that.', undefined, 'refusal'), { json: { ...(messageReply('x') as { json: object }).json, content: [] } }]);
    const refused = await rejection(provider().generateText(textReq()));
    assert.equal(refused.code, 'rejected');
    assert.equal(refused.retryable, false);
    assert.equal(refused.message, 'upstream model declined the request');
    const empty = await rejection(provider().generateText(textReq()));
    assert.equal(empty.code, 'rejected');
    assert.equal(empty.message, 'upstream model returned no content');
    assert.equal(peer.requests.length, 2, 'neither is retried');
  });

  it('honours retry-after on 429 and then succeeds', async () => {
    peer.script([errorReply(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', { 'retry-after': '1' }), messageReply('ok')]);
    const t0 = Date.now();
    const out = await provider({ timeoutMs: 3000 }).generateText(textReq({ targetLanguage: 'text' }));
    assert.equal(out.text, 'ok');
    assert.equal(peer.requests.length, 2);
    assert.ok(Date.now() - t0 >= 950, 'waited for retry-after (1 s)');
  });

  it('fails fast (retryable, with retryAfterMs) when retry-after exceeds the cap', async () => {
    peer.script([errorReply(429, 'rate_limit_error', 'later', { 'retry-after': '120' })]);
    const err = await rejection(provider({ maxRetryAfterMs: 1000 }).generateText(textReq()));
    assert.equal(err.code, 'rate_limited');
    assert.equal(err.retryable, true);
    assert.equal(err.retryAfterMs, 120_000);
    assert.equal(peer.requests.length, 1);
  });

  it('retries 529 overloaded, a 500 and a connection reset, then succeeds', async () => {
    peer.script([errorReply(529, 'overloaded_error', 'Overloaded'), errorReply(500, 'api_error', 'Internal server error'), messageReply('recovered')]);
    assert.equal((await provider().generateText(textReq({ targetLanguage: 'text' }))).text, 'recovered');
    assert.equal(peer.requests.length, 3);
    peer.script([{ reset: true }, messageReply('again')]);
    assert.equal((await provider().generateText(textReq({ targetLanguage: 'text' }))).text, 'again');
    assert.equal(peer.requests.length, 5);
  });

  it('gives up after maxAttempts 529s with a retryable, summarised error', async () => {
    peer.script(() => errorReply(529, 'overloaded_error', `Overloaded; internal detail ${SECRET}`));
    const err = await rejection(provider().generateText(textReq()));
    assert.equal(err.code, 'upstream_error');
    assert.equal(err.retryable, true);
    assert.equal(err.status, 529);
    assert.equal(err.message, 'upstream provider returned 529 (overloaded_error) after 3 attempts');
    assert.equal(peer.requests.length, 3);
  });

  it('fails at once on other 4xx with only the error type shown', async () => {
    peer.script([
      errorReply(400, 'invalid_request_error', `prompt is too long: your key ${SECRET} <script>`),
      errorReply(403, 'permission_error', 'Your API key does not have permission'),
      errorReply(404, 'not_found_error', 'model: claude-nope'),
      errorReply(413, 'request_too_large', 'Request exceeds the maximum allowed number of bytes'),
    ]);
    const bad = await rejection(provider().generateText(textReq()));
    assert.equal(bad.code, 'rejected');
    assert.equal(bad.retryable, false);
    assert.equal(bad.message, 'upstream provider returned 400 (invalid_request_error)');
    assert.equal((await rejection(provider().generateText(textReq()))).message, 'upstream provider returned 403 (permission_error)');
    assert.equal((await rejection(provider().generateText(textReq()))).message, 'upstream provider returned 404 (not_found_error)');
    assert.equal((await rejection(provider().generateText(textReq()))).message, 'upstream provider returned 413 (request_too_large)');
    assert.equal(peer.requests.length, 4);
  });

  it('a missing or wrong key is the peer\'s 401 authentication_error, not retried', async () => {
    const none = await rejection(provider({ env: {} }).generateText(textReq()));
    assert.equal(peer.requests[0]!.headers['x-api-key'], undefined);
    assert.equal(none.message, 'upstream provider returned 401 (authentication_error)');
    const wrong = await rejection(provider({ env: { KILN_TEST_ANTHROPIC_KEY: 'sk-ant-wrong' } }).generateText(textReq()));
    assert.equal(wrong.retryable, false);
    assert.equal(peer.requests.length, 2);
  });

  it('reports malformed JSON and a body that is not a message without retrying', async () => {
    peer.script([{ body: '{"type": "message", "content": [' }, { json: { type: 'completion', completion: 'hi' } }]);
    const err = await rejection(provider().generateText(textReq()));
    assert.equal(err.code, 'bad_response');
    assert.equal(err.message, 'upstream provider returned malformed JSON');
    const other = await rejection(provider().generateText(textReq()));
    assert.equal(other.code, 'bad_response');
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
    peer.script(() => ({ ...messageReply('late'), delayMs: 5000 }));
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(new Error('canceled')), 100);
    const t0 = Date.now();
    const err = await rejection(provider({ timeoutMs: 10_000 }).generateText(textReq({ signal: ctl.signal })));
    assert.equal(err.code, 'aborted');
    assert.ok(Date.now() - t0 < 1000);
    assert.equal(peer.requests.length, 1);
    assert.ok(await clientGone(peer.requests[0]!), 'the upstream request was aborted');
  });

  it('makes no images (a config error, nothing sent) and is registered as `anthropic`', async () => {
    const err = await rejection(provider().generateImage({
      model: model({ category: 'image' }), prompt: 'x', aspectRatio: '1:1', images: [], textInputs: [], signal: new AbortController().signal,
    }));
    assert.equal(err.code, 'config');
    assert.equal(peer.requests.length, 0);
    const out = await getProvider('anthropic', { env: { KILN_TEST_ANTHROPIC_KEY: SECRET }, maxAttempts: 1 }).generateText(textReq({ targetLanguage: 'text' }));
    assert.equal(out.text, 'peer reply');
  });
});

describe('anthropic catalog entries', () => {
  const dir = path.resolve(import.meta.dirname, '..', 'catalog');
  const files = fs.readdirSync(dir).filter((f) => f.startsWith('anthropic-') && f.endsWith('.json'));

  it('ship as valid `kiln model upsert` files for text and svg', () => {
    assert.ok(files.length >= 2);
    const categories = new Set<string>();
    for (const f of files) {
      const entry = v.parse(ModelEntry, JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));
      assert.equal(entry.provider, 'anthropic', f);
      assert.equal(entry.upstream?.apiKeyEnv, 'ANTHROPIC_API_KEY', f);
      assert.ok(entry.upstream?.model, f);
      assert.ok(entry.maxOutputTokens, `${f}: a cap bounds the reservation`);
      categories.add(entry.category);
    }
    assert.deepEqual([...categories].sort(), ['svg', 'text']);
  });

  it('an image entry for anthropic is refused', () => {
    const entry = JSON.parse(fs.readFileSync(path.join(dir, files[0]!), 'utf8'));
    const r = v.safeParse(ModelEntry, { ...entry, category: 'image', cost: { micros_per_image: 1 } });
    assert.equal(r.success, false);
    assert.match(r.issues![0].message, /text and svg only/);
  });
});
