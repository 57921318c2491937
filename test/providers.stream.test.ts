// Streaming adapters (docs/providers.md, "Streaming") against real peers that speak each provider's
// streaming protocol over HTTP, chunk by chunk: what reaches the sink (raw text deltas, partial
// images, queue progress) and when, that the result equals the non-streamed answer for the same
// content, each kind of break, retries before the first event only, the request bodies, and
// `upstream.stream: false`. The SSE reader's parsing rules are checked on their own first.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import * as v from 'valibot';
import type { CatalogModel } from '../src/billing/catalog.ts';
import { ModelEntry } from '../src/cli/model-entry.ts';
import { createAnthropicProvider } from '../src/providers/anthropic.ts';
import { createFalProvider } from '../src/providers/fal.ts';
import { createGeminiProvider } from '../src/providers/gemini.ts';
import { createOpenAIProvider, generateCode, localProvider, ProviderError, type ImageRequest, type OutputSink, type TextRequest } from '../src/providers/index.ts';
import { openaiEntryProblem } from '../src/providers/openai-family.ts';
import { lastPercent, progressMessage } from '../src/providers/queued.ts';
import { createReplicateProvider } from '../src/providers/replicate.ts';
import { readSse, SseParser } from '../src/providers/sse.ts';
import type { AdapterOptions } from '../src/providers/upstream.ts';
import { providerError, textRequest } from './_adapter.ts';
import { errorReply as anthropicError, messageReply, messageStream, startAnthropicPeer, type AnthropicPeer } from './_anthropic-peer.ts';
import { startFalPeer, type FalPeer } from './_fal-peer.ts';
import { errorReply as geminiError, finishReply, geminiStream, startGeminiPeer, textReply, type GeminiPeer } from './_gemini-peer.ts';
import { chatReply, chatStream, errorReply as openaiError, imageStream, png, startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';
import { sse, type PeerReply } from './_peer.ts';
import { startReplicatePeer, type ReplicatePeer } from './_replicate-peer.ts';

const SECRET = 'sk-stream-secret-do-not-leak';
const env = { KILN_TEST_KEY: SECRET };
let openai: OpenAIPeer;
let anthropic: AnthropicPeer;
let gemini: GeminiPeer;
let fal: FalPeer;
let replicate: ReplicatePeer;

/** A sink that records everything, in order, with when it arrived. */
class Recorder implements OutputSink {
  texts: string[] = [];
  previews: Array<{ index: number; data: Buffer; mediaType: string }> = [];
  progresses: Array<[number | null, string | null]> = [];
  log: string[] = [];
  firstAt: number | null = null;
  text(chunk: string): void {
    this.firstAt ??= Date.now();
    this.texts.push(chunk);
    this.log.push('text');
  }
  preview(index: number, data: Buffer, mediaType: string): void {
    this.firstAt ??= Date.now();
    this.previews.push({ index, data, mediaType });
    this.log.push('preview');
  }
  progress(percent: number | null, message: string | null): void {
    this.firstAt ??= Date.now();
    this.progresses.push([percent, message]);
    this.log.push('progress');
  }
  restart(): void {
    this.log.push('restart');
  }
  get joined(): string {
    return this.texts.join('');
  }
}

function entry(provider: string, upstream: Record<string, unknown>, over: Partial<CatalogModel> = {}): CatalogModel {
  return {
    id: `test/${provider}`, name: 'Test', category: 'text', provider, upstream: { apiKeyEnv: 'KILN_TEST_KEY', ...upstream },
    supports_image_input: false, input_modalities: ['text'], output_modalities: ['text'],
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 1000, markup: 1, enabled: true, ...over,
  };
}

const options = (over: AdapterOptions = {}): AdapterOptions => ({ timeoutMs: 10_000, maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20, env, ...over });

/** `text` in pieces of `n` code points. */
function cut(text: string, n: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += n) out.push(chars.slice(i, i + n).join(''));
  return out;
}

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A gate the peer waits on before its last chunk. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/** Starts `run`, checks the sink had something while the answer was not done, then lets the peer finish. */
async function beforeTheEnd<T>(run: () => Promise<T>, sink: Recorder, go: () => void): Promise<T> {
  let settled = false;
  const p = run();
  p.then(() => (settled = true), () => (settled = true));
  await waitFor(() => sink.log.length > 0);
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(settled, false, 'the sink heard from the adapter before the upstream had finished');
  go();
  return p;
}

// Raw text as a model writes it: fences (stripped from the result, not from the deltas), a blank
// line (`\n\n` inside the JSON strings), a CRLF, "data:" inside the text, and multi-byte UTF-8.
const RAW = '```tsx\nexport const s = "a\\n\\nb"; // data: not an event\n\nconst t = `héllo — 😀 ✓ 日本語`;\r\nexport default s;\n```';

const rejection = (p: Promise<unknown>) => providerError(p, { key: SECRET, origin: openai.origin });

before(async () => {
  [openai, anthropic, gemini, fal, replicate] = await Promise.all([
    startOpenAIPeer(), startAnthropicPeer(), startGeminiPeer(), startFalPeer({ key: SECRET }), startReplicatePeer({ token: SECRET }),
  ]);
});
after(() => Promise.all([openai, anthropic, gemini, fal, replicate].map((p) => p.close())));
beforeEach(() => {
  for (const p of [openai, anthropic, gemini, fal, replicate]) {
    p.requests.length = 0;
    p.script([]);
  }
  fal.plan(null);
  replicate.plan(null);
});

describe('SSE reader', () => {
  const events = (p: SseParser, ...texts: string[]) => texts.flatMap((t) => p.feed(t));

  it('parses fields, multi-line data, comments, CRLF / CR / LF, event names and ids as the standard says', () => {
    const p = new SseParser();
    const got = events(p,
      ': a comment\r\n',
      'event: one\r\ndata: a\r\ndata:b\r\n\r\n',
      'data:  two spaces\rid: 7\r\r',
      'data\n\n', // a field with no colon: empty data, still dispatched
      'id: x\0y\nevent: skipped\n\n', // no data: not dispatched; an id with NUL is ignored
      'retry: 10\nunknown: 1\ndata: {"x":"a\\n\\nb"}\n\n',
      'data: cut\n', // no blank line: dropped at the end
    );
    assert.deepEqual(got, [
      { event: 'one', data: 'a\nb', id: null },
      { event: 'message', data: ' two spaces', id: '7' },
      { event: 'message', data: '', id: '7' },
      { event: 'message', data: '{"x":"a\\n\\nb"}', id: '7' },
    ]);
    assert.deepEqual(p.end(), []);
  });

  it('a CRLF split across chunks is one line end; a CR at the very end of the stream ends its line', () => {
    const p = new SseParser();
    assert.deepEqual(events(p, 'data: a\r', '\n', '\r', '\ndata: b\r\n\r'), [{ event: 'message', data: 'a', id: null }]);
    assert.deepEqual(p.end(), [{ event: 'message', data: 'b', id: null }]);
  });

  async function read(chunks: Uint8Array[], opts: Partial<Parameters<typeof readSse>[1]> = {}) {
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const x of chunks) c.enqueue(x);
        c.close();
      },
    });
    const out = [];
    for await (const ev of readSse(body, { signal: new AbortController().signal, idleMs: 1000, maxEventChars: 1 << 20, maxTotalBytes: 1 << 20, ...opts })) out.push(ev);
    return out;
  }

  it('decodes UTF-8 split across chunks (a BOM first is dropped), one byte at a time', async () => {
    const text = '\uFEFFdata: héllo 😀 日本\n\n';
    const bytes = Buffer.from(text, 'utf8');
    const got = await read([...bytes].map((b) => Uint8Array.of(b)));
    assert.deepEqual(got, [{ event: 'message', data: 'héllo 😀 日本', id: null }]);
  });

  it('caps one event and the whole stream: bad_response, not retryable', async () => {
    const big = await read([Buffer.from(`data: ${'x'.repeat(200)}\n\n`)], { maxEventChars: 100 }).catch((e) => e);
    assert.ok(big instanceof ProviderError && big.code === 'bad_response' && !big.retryable, String(big));
    const many = await read(Array.from({ length: 20 }, () => Buffer.from('data: 0123456789\n\n')), { maxTotalBytes: 200 }).catch((e) => e);
    assert.ok(many instanceof ProviderError && many.code === 'bad_response', String(many));
    assert.equal(many.message, 'upstream stream is too large');
  });

  it('a silence longer than idleMs is a retryable network error; an abort is `aborted`', async () => {
    const silent = new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(Buffer.from('data: 1\n\n')) });
    const seen: string[] = [];
    const started = Date.now();
    const err = await (async () => {
      for await (const ev of readSse(silent, { signal: new AbortController().signal, idleMs: 150, maxEventChars: 1000, maxTotalBytes: 1000 })) seen.push(ev.data);
    })().catch((e) => e);
    assert.deepEqual(seen, ['1']);
    assert.ok(err instanceof ProviderError && err.code === 'network' && err.retryable, String(err));
    assert.match(err.message, /silent for 150 ms/);
    assert.ok(Date.now() - started >= 140);

    const ctl = new AbortController();
    const stalled = new ReadableStream<Uint8Array>({ start: () => {} });
    setTimeout(() => ctl.abort(), 30);
    const aborted = await (async () => {
      for await (const _ of readSse(stalled, { signal: ctl.signal, idleMs: 5000, maxEventChars: 1000, maxTotalBytes: 1000 }));
    })().catch((e) => e);
    assert.ok(aborted instanceof ProviderError && aborted.code === 'aborted', String(aborted));
  });
});

describe('openai: streamed chat completions', () => {
  const chat = (model = 'gpt-4o', over: Record<string, unknown> = {}) => entry('openai', { baseUrl: openai.url, model, ...over });
  const provider = (over: AdapterOptions = {}) => createOpenAIProvider(options(over));
  const req = (model: CatalogModel, over: Partial<TextRequest> = {}) => textRequest(model, over);

  it('deltas are the raw text, split anywhere on the wire; the result equals the non-streamed answer; the body asks for a stream', async () => {
    const usage = { prompt_tokens: 101, completion_tokens: 57 };
    const pieces = cut(RAW, 6);
    const reply = chatStream(pieces, usage, { splitEvery: 7, chunkMs: 1 }) as unknown as { stream: { chunks: Buffer[] } };
    // The peer's writes really cut UTF-8 sequences: some piece starts with a continuation byte.
    assert.ok(reply.stream.chunks.some((c) => c[0]! >= 0x80 && c[0]! < 0xc0), 'a multi-byte character is split across writes');
    openai.script([reply, chatReply(RAW, usage)]);
    const sink = new Recorder();
    const streamed = await provider().generateText(req(chat(), { sink }));
    const plain = await provider().generateText(req(chat()));
    assert.equal(sink.joined, RAW);
    assert.deepEqual(sink.texts, pieces);
    assert.deepEqual(streamed, plain);
    assert.equal(streamed.text, 'export const s = "a\\n\\nb"; // data: not an event\n\nconst t = `héllo — 😀 ✓ 日本語`;\nexport default s;');
    assert.deepEqual(streamed.usage, { inputTokens: 101, outputTokens: 57 });

    const [s, p] = openai.requests;
    assert.equal(s!.json.stream, true);
    assert.deepEqual(s!.json.stream_options, { include_usage: true });
    assert.equal(s!.headers.accept, 'text/event-stream');
    assert.equal(s!.json.max_completion_tokens, 321);
    assert.equal('stream' in p!.json, false);
    assert.equal('stream_options' in p!.json, false);
  });

  it('every family streams; reasoning deltas are not output but count where usage is missing, as non-streamed', async () => {
    for (const model of ['gpt-4o', 'o3-mini', 'llama-test', 'openai/gpt-5']) {
      const m = chat(model);
      // With usage.
      openai.script([
        chatStream(['Hello', ' world'], { prompt_tokens: 9, completion_tokens: 30, completion_tokens_details: { reasoning_tokens: 20 } }, { reasoning: ['thinking ', 'hard'] }),
        chatReply('Hello world', { prompt_tokens: 9, completion_tokens: 30, completion_tokens_details: { reasoning_tokens: 20 } }),
      ]);
      const sink = new Recorder();
      const streamed = await provider().generateText(req(m, { sink }));
      assert.equal(sink.joined, 'Hello world', model);
      assert.deepEqual(streamed, await provider().generateText(req(m)), model);
      // Without a usage chunk: the same fallback as an answer without usage.
      const noUsage: PeerReply = {
        headers: { 'x-request-id': 'req_peer_chat' },
        json: { id: 'chatcmpl-peer', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello world', reasoning: 'thinking hard' }, finish_reason: 'stop' }] },
      };
      openai.script([chatStream(['Hello', ' world'], null, { reasoning: ['thinking ', 'hard'] }), noUsage]);
      const a = await provider().generateText(req(m, { sink: new Recorder() }));
      const b = await provider().generateText(req(m));
      assert.deepEqual(a, b, model);
    }
    // The reasoning family's estimate is its whole budget; others count the text and reasoning.
    openai.script([chatStream(['Hello', ' world'], null, { reasoning: ['thinking ', 'hard'] })]);
    assert.equal((await provider().generateText(req(chat('o3-mini'), { sink: new Recorder() }))).usage.outputTokens, 321);
    openai.script([chatStream(['Hello', ' world'], null, { reasoning: ['thinking ', 'hard'] })]);
    assert.equal((await provider().generateText(req(chat('llama-test'), { sink: new Recorder() }))).usage.outputTokens, Math.ceil('Hello worldthinking hard'.length / 4));
  });

  it('refusals, a length finish and empty content fail as the non-streamed answer does', async () => {
    const cases: Array<[PeerReply, PeerReply]> = [
      [chatStream([], undefined, { refusal: ['I ', 'cannot help'] }), { json: { choices: [{ message: { content: null, refusal: 'I cannot help' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 2 } } }],
      [chatStream([], undefined, { finish: 'length' }), chatReply('', undefined, 'length')],
      [chatStream([], undefined, { finish: 'content_filter' }), chatReply('', undefined, 'content_filter')],
      [chatStream(['  '], undefined), chatReply('  ')],
    ];
    for (const [stream, plain] of cases) {
      openai.script([stream, plain]);
      const a = await rejection(provider().generateText(req(chat(), { sink: new Recorder() })));
      const b = await rejection(provider().generateText(req(chat())));
      assert.equal(a.message, b.message);
      assert.equal(a.code, 'rejected');
      assert.equal(a.retryable, false);
    }
  });

  it('the first delta reaches the sink while the peer still holds its last chunk', async () => {
    const g = gate();
    openai.script([chatStream(['first', ' second', ' third'], undefined, { gate: g.promise })]);
    const sink = new Recorder();
    const out = await beforeTheEnd(() => provider().generateText(req(chat(), { sink })), sink, g.open);
    assert.equal(out.text, 'first second third');
  });

  it('breaks once events have started are not retried here: cut, no [DONE], silence → network (retryable); error chunks; malformed data', async () => {
    const deltas = ['a', 'b', 'c', 'd'];
    const check = async (reply: PeerReply, code: string, retryable: boolean, message: RegExp, over: AdapterOptions = {}) => {
      openai.requests.length = 0;
      openai.script([reply, chatReply('never asked')]);
      const sink = new Recorder();
      const err = await rejection(provider(over).generateText(req(chat(), { sink })));
      assert.equal(err.code, code, err.message);
      assert.equal(err.retryable, retryable);
      assert.match(err.message, message);
      assert.equal(openai.requests.length, 1, 'nothing retried inside the adapter');
      return sink;
    };
    const cutSink = await check(chatStream(deltas, undefined, { breakAfter: 3 }), 'network', true, /^upstream connection was cut during the stream$/);
    assert.deepEqual(cutSink.texts, ['a', 'b'], 'what arrived before the cut was handed over');
    await check(chatStream(deltas, undefined, { noEnd: true }), 'network', true, /^upstream stream ended before it was complete$/);
    const started = Date.now();
    await check(chatStream(deltas, undefined, { noEnd: true, hold: true }), 'network', true, /^upstream stream was silent for 400 ms$/, { timeoutMs: 400 });
    assert.ok(Date.now() - started >= 390);
    await check(chatStream(deltas, undefined, { errorAfter: 2 }), 'upstream_error', true, /^upstream provider returned an error \(502\)$/);
    await check(chatStream(deltas, undefined, { errorAfter: 2, errorCode: 400 }), 'rejected', false, /^upstream provider returned an error \(400\)$/);
    await check({ stream: { chunks: [sse({ choices: [{ index: 0, delta: { content: 'a' } }] }), 'data: {"choices": [\n\n'] } }, 'bad_response', false, /malformed data/);
  });

  it('failures before the first event are retried as today: 5xx, 429 with retry-after, a reset, a cut before any event, a slow answer', async () => {
    const ok = () => chatStream(['fine'], { prompt_tokens: 1, completion_tokens: 1 });
    const tries: PeerReply[][] = [
      [openaiError(500, 'server_error', null), ok()],
      [openaiError(429, 'requests', 'rate_limit_exceeded', 'slow down', { 'retry-after-ms': '20' }), ok()],
      [{ reset: true }, ok()],
      [chatStream(['x'], undefined, { breakAfter: 0 }), ok()],
      [{ stream: { chunks: [': keep-alive\n\n'], hold: true } }, ok()],
    ];
    for (const script of tries) {
      openai.requests.length = 0;
      openai.script(script);
      const sink = new Recorder();
      const out = await provider({ timeoutMs: 300 }).generateText(req(chat(), { sink }));
      assert.equal(out.text, 'fine');
      assert.equal(sink.joined, 'fine');
      assert.equal(openai.requests.length, 2);
    }
    // A 4xx is final, as today; and one that keeps failing names its attempts.
    openai.script([openaiError(400, 'invalid_request_error', 'bad')]);
    assert.equal((await rejection(provider().generateText(req(chat(), { sink: new Recorder() })))).message, 'upstream provider returned 400 (invalid_request_error/bad)');
    openai.script(() => openaiError(503, 'server_error', null));
    const err = await rejection(provider().generateText(req(chat(), { sink: new Recorder() })));
    assert.equal(err.message, 'upstream provider returned 503 (server_error) after 3 attempts');
    assert.equal(err.retryable, true);
  });

  it('upstream.stream: false keeps today\'s request and hands nothing to the sink; a server that ignores stream answers in one delta', async () => {
    openai.script([chatReply(RAW)]);
    const sink = new Recorder();
    const out = await provider().generateText(req(chat('gpt-4o', { stream: false }), { sink }));
    assert.equal(sink.log.length, 0);
    assert.equal('stream' in openai.requests[0]!.json, false);
    assert.equal(openai.requests[0]!.headers.accept, 'application/json');

    openai.script([chatReply(RAW)]);
    const whole = new Recorder();
    assert.deepEqual(await provider().generateText(req(chat(), { sink: whole })), out);
    assert.equal(openai.requests[1]!.json.stream, true);
    assert.deepEqual(whole.texts, [RAW]);
  });

  it('the caller\'s abort ends a stream at once, as `aborted`', async () => {
    const ctl = new AbortController();
    openai.script([chatStream(['a', 'b'], undefined, { noEnd: true, hold: true })]);
    const sink = new Recorder();
    const p = provider().generateText(req(chat(), { sink, signal: ctl.signal }));
    await waitFor(() => sink.texts.length === 2);
    ctl.abort();
    const err = await rejection(p);
    assert.equal(err.code, 'aborted');
  });

  it('GLSL: the repair call restarts the sink before its own text', async () => {
    const GOOD = [
      'uniform float uSpeed; // @range 0.0 4.0 @default 1.0 @label Speed',
      'uniform float uScale; // @range 0.5 8 @default 2 @label Pattern scale',
      'uniform int uBands; // @range 1 12 @default 6 @label Bands',
      'void mainImage(out vec4 fragColor, in vec2 fragCoord) {\n  vec2 uv = fragCoord / iResolution.xy;\n  fragColor = vec4(uv, 0.5 + 0.5 * sin(iTime * uSpeed), 1.0);\n}',
    ].join('\n');
    openai.script([chatStream(['#version 300 es\n', GOOD]), chatStream([GOOD.slice(0, 40), GOOD.slice(40)])]);
    const sink = new Recorder();
    const out = await generateCode(provider(), req(chat(), { targetLanguage: 'glsl', sink }));
    assert.equal(out.text, GOOD);
    assert.deepEqual(sink.log, ['text', 'text', 'restart', 'text', 'text']);
    assert.equal(sink.texts.slice(2).join(''), GOOD);
  });
});

describe('openai: streamed images (upstream.partialImages)', () => {
  const image = (upstream: Record<string, unknown> = {}, over: Partial<CatalogModel> = {}) =>
    entry('openai', { baseUrl: openai.url, model: 'gpt-image-1', ...upstream }, { category: 'image', output_modalities: ['image'], cost: { micros_per_image: 1000 }, maxOutputTokens: null, ...over });
  const provider = () => createOpenAIProvider(options());
  const req = (model: CatalogModel, over: Partial<ImageRequest> = {}): ImageRequest =>
    ({ model, prompt: 'A red fox', aspectRatio: '1:1', images: [], textInputs: [], signal: new AbortController().signal, ...over });

  it('partial images reach the sink with their indexes; the final image equals the non-streamed answer', async () => {
    const sink = new Recorder();
    const streamed = await provider().generateImage(req(image({ partialImages: 2 }), { sink }));
    const plain = await provider().generateImage(req(image({ partialImages: 2 })));
    assert.deepEqual(sink.previews.map((p) => [p.index, p.mediaType]), [[0, 'image/png'], [1, 'image/png']]);
    assert.ok(sink.previews.every((p) => p.data.subarray(1, 4).toString() === 'PNG'));
    assert.deepEqual({ ...streamed, data: streamed.data.length }, { ...plain, data: plain.data.length });
    assert.ok(streamed.data.equals(plain.data));
    const [s, p] = openai.requests;
    assert.equal(s!.path, '/v1/images/generations');
    assert.equal(s!.json.stream, true);
    assert.equal(s!.json.partial_images, 2);
    assert.equal('stream' in p!.json, false, 'no sink: today\'s request');
  });

  it('edits stream too (multipart stream / partial_images fields, image_edit events); a jpeg preview says so', async () => {
    const sink = new Recorder();
    const m = image({ partialImages: 1, params: { output_format: 'jpeg' } }, { supports_image_input: true });
    await provider().generateImage(req(m, { sink, images: [{ data: await png(8, 8), mediaType: 'image/png' }] }));
    const r = openai.requests[0]!;
    assert.equal(r.path, '/v1/images/edits');
    assert.deepEqual(r.form!.stream, ['true']);
    assert.deepEqual(r.form!.partial_images, ['1']);
    assert.deepEqual(sink.previews.map((p) => p.index), [0]);
    // The peer's events name jpeg as their output_format.
    openai.script([imageStream([await png(4, 4)], await png(64, 64), { format: 'jpeg' })]);
    const jpeg = new Recorder();
    await provider().generateImage(req(image({ partialImages: 1 }), { sink: jpeg }));
    assert.equal(jpeg.previews[0]!.mediaType, 'image/jpeg');
  });

  it('the first partial image arrives before the final one; breaks and error events as for text', async () => {
    const g = gate();
    openai.script([imageStream([await png(8, 8), await png(8, 8)], await png(64, 64), { gate: g.promise })]);
    const sink = new Recorder();
    const out = await beforeTheEnd(() => provider().generateImage(req(image({ partialImages: 2 }), { sink })), sink, g.open);
    assert.equal(out.width, 64);

    openai.script([imageStream([await png(8, 8)], await png(64, 64), { noEnd: true })]);
    const cut = await rejection(provider().generateImage(req(image({ partialImages: 1 }), { sink: new Recorder() })));
    assert.deepEqual([cut.code, cut.retryable], ['network', true]);
    openai.script([imageStream([await png(8, 8)], await png(64, 64), { errorAfter: 1 })]);
    const failed = await rejection(provider().generateImage(req(image({ partialImages: 1 }), { sink: new Recorder() })));
    assert.deepEqual([failed.code, failed.retryable, failed.message], ['upstream_error', true, 'upstream provider reported an error during the stream (server_error)']);
  });

  it('without partialImages (or with 0, or upstream.stream: false) an image is not streamed', async () => {
    for (const upstream of [{}, { partialImages: 0 }, { partialImages: 2, stream: false }]) {
      openai.requests.length = 0;
      const sink = new Recorder();
      await provider().generateImage(req(image(upstream), { sink }));
      assert.equal('stream' in openai.requests[0]!.json, false);
      assert.equal(sink.log.length, 0);
    }
  });

  it('entries: partialImages is 0–3, for gpt-image or compatible image entries; stream is a boolean', () => {
    const base = { id: 'x/img', name: 'X', category: 'image', provider: 'openai', cost: { micros_per_image: 1 } };
    const problems = (upstream: Record<string, unknown>, over: Record<string, unknown> = {}) =>
      v.safeParse(ModelEntry, { ...base, ...over, upstream: { baseUrl: 'https://api.openai.com/v1', ...upstream } }).issues?.map((i) => i.message) ?? [];
    assert.deepEqual(problems({ model: 'gpt-image-1', partialImages: 3, stream: true }), []);
    assert.deepEqual(problems({ model: 'my-image', family: 'compatible', partialImages: 1 }), []);
    assert.ok(problems({ model: 'gpt-image-1', partialImages: 4 }).length);
    assert.ok(problems({ model: 'gpt-image-1', stream: 'yes' }).length);
    assert.deepEqual(problems({ model: 'dall-e-3', partialImages: 1 }), ['upstream.partialImages: dall-e-3 models stream no partial images']);
    assert.deepEqual(problems({ app: 'fal-ai/flux/schnell', partialImages: 1 }, { provider: 'fal' }), ['upstream.partialImages is for openai image entries']);
    assert.equal(openaiEntryProblem({ id: 't', category: 'text', upstream: { model: 'gpt-4o', partialImages: 1 } }), 'upstream.partialImages is for image entries');
    assert.equal(openaiEntryProblem({ id: 't', category: 'image', upstream: { model: 'gpt-image-1', partialImages: 1.5 } }), 'upstream.partialImages must be an integer from 0 to 3');
  });
});

describe('anthropic: streamed messages', () => {
  const model = (over: Record<string, unknown> = {}) => entry('anthropic', { baseUrl: anthropic.url, model: 'claude-test', ...over });
  const provider = (over: AdapterOptions = {}) => createAnthropicProvider(options(over));
  const usage = { input_tokens: 50, output_tokens: 77, cache_creation_input_tokens: 5, cache_read_input_tokens: 7 };

  it('text deltas are the raw text (thinking is not); usage and result equal the non-streamed answer; stream: true is sent', async () => {
    const [first, second] = [RAW.slice(0, 30), RAW.slice(30)];
    anthropic.script([
      messageStream([cut(first, 5), cut(second, 9)], usage, { thinking: ['let me ', 'think'], splitEvery: 11, chunkMs: 1 }),
      messageReply([first, second], usage),
    ]);
    const sink = new Recorder();
    const streamed = await provider().generateText(textRequest(model(), { sink }));
    const plain = await provider().generateText(textRequest(model()));
    assert.equal(sink.joined, RAW);
    assert.deepEqual({ ...streamed, providerRequestId: null }, { ...plain, providerRequestId: null });
    assert.deepEqual(streamed.usage, { inputTokens: 62, outputTokens: 77 });
    assert.match(streamed.providerRequestId!, /^req_peer\d+$/);
    assert.equal(anthropic.requests[0]!.json.stream, true);
    assert.equal(anthropic.requests[0]!.headers.accept, 'text/event-stream');
    assert.equal('stream' in anthropic.requests[1]!.json, false);
  });

  it('the first delta arrives before message_stop; a refusal fails as non-streamed', async () => {
    const g = gate();
    anthropic.script([messageStream([['one', ' two']], undefined, { gate: g.promise })]);
    const sink = new Recorder();
    assert.equal((await beforeTheEnd(() => provider().generateText(textRequest(model(), { sink })), sink, g.open)).text, 'one two');

    anthropic.script([messageStream([['I will not']], undefined, { stopReason: 'refusal' })]);
    const err = await rejection(provider().generateText(textRequest(model(), { sink: new Recorder() })));
    assert.deepEqual([err.code, err.message], ['rejected', 'upstream model declined the request']);
  });

  it('error events (overloaded_error, api_error) are retryable upstream errors; a cut, no message_stop and malformed data as for openai; nothing retried', async () => {
    const cases: Array<[PeerReply, string, boolean, string]> = [
      [messageStream([['a', 'b']], undefined, { errorAfter: 4 }), 'upstream_error', true, 'upstream provider reported an error during the stream (overloaded_error)'],
      [messageStream([['a', 'b']], undefined, { errorAfter: 4, errorType: 'api_error' }), 'upstream_error', true, 'upstream provider reported an error during the stream (api_error)'],
      [messageStream([['a', 'b']], undefined, { noEnd: true }), 'network', true, 'upstream stream ended before it was complete'],
      [messageStream([['a', 'b']], undefined, { breakAfter: 4 }), 'network', true, 'upstream connection was cut during the stream'],
      [{ stream: { chunks: [sse({ type: 'message_start', message: { id: 'm', type: 'message', content: [], usage: {} } }, 'message_start'), 'event: ping\ndata: {oops\n\n'] } }, 'bad_response', false, 'upstream provider sent malformed data in its stream'],
    ];
    for (const [reply, code, retryable, message] of cases) {
      anthropic.requests.length = 0;
      anthropic.script([reply, messageReply('never asked')]);
      const err = await rejection(provider().generateText(textRequest(model(), { sink: new Recorder() })));
      assert.deepEqual([err.code, err.retryable, err.message], [code, retryable, message]);
      assert.equal(anthropic.requests.length, 1);
    }
  });

  it('a 529 before the stream is retried as today; upstream.stream: false sends no stream', async () => {
    anthropic.script([anthropicError(529, 'overloaded_error'), messageStream([['fine']])]);
    assert.equal((await provider().generateText(textRequest(model(), { sink: new Recorder() }))).text, 'fine');
    assert.equal(anthropic.requests.length, 2);

    const sink = new Recorder();
    await provider().generateText(textRequest(model({ stream: false }), { sink }));
    assert.equal('stream' in anthropic.requests[2]!.json, false);
    assert.equal(sink.log.length, 0);
  });
});

describe('gemini: streamGenerateContent?alt=sse', () => {
  const model = (over: Record<string, unknown> = {}) => entry('gemini', { baseUrl: gemini.url, model: 'gemini-test-flash', ...over });
  const provider = (over: AdapterOptions = {}) => createGeminiProvider(options(over));
  const usage = { promptTokenCount: 40, candidatesTokenCount: 60, thoughtsTokenCount: 25 };

  it('text parts are the deltas (thoughts skipped); usage (the last one) and result equal the non-streamed answer', async () => {
    gemini.script([geminiStream(cut(RAW, 8), usage, { thoughts: ['hmm'], splitEvery: 9, chunkMs: 1 }), textReply(RAW, usage)]);
    const sink = new Recorder();
    const streamed = await provider().generateText(textRequest(model(), { sink }));
    const plain = await provider().generateText(textRequest(model()));
    assert.equal(sink.joined, RAW);
    assert.deepEqual({ ...streamed, providerRequestId: null }, { ...plain, providerRequestId: null });
    assert.deepEqual(streamed.usage, { inputTokens: 40, outputTokens: 85 });
    const [s, p] = gemini.requests;
    assert.equal(s!.path, '/v1beta/models/gemini-test-flash:streamGenerateContent');
    assert.equal(s!.query.get('alt'), 'sse');
    assert.deepEqual(s!.json, p!.json, 'the same body');
    assert.equal(p!.path, '/v1beta/models/gemini-test-flash:generateContent');
  });

  it('the first delta arrives before the finishReason chunk; SAFETY and a blocked prompt fail as non-streamed', async () => {
    const g = gate();
    gemini.script([geminiStream(['a', 'b', 'c'], undefined, { gate: g.promise })]);
    const sink = new Recorder();
    assert.equal((await beforeTheEnd(() => provider().generateText(textRequest(model(), { sink })), sink, g.open)).text, 'abc');

    gemini.script([geminiStream(['partial'], undefined, { finishReason: 'SAFETY' }), finishReply('SAFETY')]);
    const a = await rejection(provider().generateText(textRequest(model(), { sink: new Recorder() })));
    const b = await rejection(provider().generateText(textRequest(model())));
    assert.deepEqual([a.code, a.message], [b.code, b.message]);
    assert.equal(a.message, 'upstream model declined the request (SAFETY)');

    gemini.script([{ stream: { chunks: [sse({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata: { promptTokenCount: 3 } })] } }]);
    assert.equal((await rejection(provider().generateText(textRequest(model(), { sink: new Recorder() })))).message, 'upstream provider blocked the prompt (PROHIBITED_CONTENT)');
  });

  it('no finishReason chunk, a cut and an error object are breaks; a 503 before the stream is retried', async () => {
    const cases: Array<[PeerReply, string, boolean]> = [
      [geminiStream(['a', 'b'], undefined, { noEnd: true }), 'network', true],
      [geminiStream(['a', 'b', 'c'], undefined, { breakAfter: 1 }), 'network', true],
      [geminiStream(['a', 'b'], undefined, { errorAfter: 1 }), 'upstream_error', true],
    ];
    for (const [reply, code, retryable] of cases) {
      gemini.requests.length = 0;
      gemini.script([reply, textReply('never asked')]);
      const err = await rejection(provider().generateText(textRequest(model(), { sink: new Recorder() })));
      assert.deepEqual([err.code, err.retryable], [code, retryable], err.message);
      assert.equal(gemini.requests.length, 1);
    }
    gemini.requests.length = 0;
    gemini.script([geminiError(503), geminiStream(['ok'])]);
    assert.equal((await provider().generateText(textRequest(model(), { sink: new Recorder() }))).text, 'ok');
    assert.equal(gemini.requests.length, 2);

    gemini.script([textReply('plain')]);
    const sink = new Recorder();
    await provider().generateText(textRequest(model({ stream: false }), { sink }));
    assert.equal(gemini.requests[2]!.path, '/v1beta/models/gemini-test-flash:generateContent');
    assert.equal(sink.log.length, 0);
  });
});

describe('queued jobs: progress from fal and Replicate', () => {
  const imageEntry = (provider: string, upstream: Record<string, unknown>) =>
    entry(provider, { pollIntervalMs: 15, ...upstream }, { category: 'image', output_modalities: ['image'], cost: { micros_per_image: 1000 }, maxOutputTokens: null });
  const req = (model: CatalogModel, sink?: OutputSink): ImageRequest =>
    ({ model, prompt: 'A fox', aspectRatio: '1:1', images: [], textInputs: [], signal: new AbortController().signal, ...(sink ? { sink } : {}) });

  it('fal: queue positions, then the last log line and the last percentage a line carries, each change once; logs=1 only with a sink', async () => {
    const long = `\u001b[31mred\u001b[0m\tdone ${'y'.repeat(300)}`;
    fal.plan(() => ({
      queued: 2, running: 4,
      logs: (job) => [
        { message: 'Loading model' },
        ...(job.polls >= 4 ? [{ message: ' 45%|████▌     | 9/20 [00:02<00:02,  4.5it/s]' }] : []),
        ...(job.polls >= 5 ? [{ message: long }] : []),
      ],
    }));
    const sink = new Recorder();
    const m = imageEntry('fal', { baseUrl: fal.url, app: 'fal-ai/flux/schnell' });
    await createFalProvider(options()).generateImage(req(m, sink));
    assert.deepEqual(sink.progresses, [
      [null, 'queued (position 1)'],
      [null, 'queued (position 0)'],
      [null, 'Loading model'],
      [45, '45%|████▌ | 9/20 [00:02<00:02, 4.5it/s]'],
      [45, `red done ${'y'.repeat(190)}…`],
    ]);
    assert.equal([...sink.progresses.at(-1)![1]!].length, 200);
    const statuses = fal.requests.filter((r) => r.path.endsWith('/status'));
    assert.ok(statuses.length >= 6 && statuses.every((r) => r.query.get('logs') === '1'));

    fal.requests.length = 0;
    await createFalProvider(options()).generateImage(req(m));
    assert.ok(fal.requests.filter((r) => r.path.endsWith('/status')).every((r) => !r.query.has('logs')));
  });

  it('Replicate: starting, then the last log line (tqdm redraws) and the last percentage', async () => {
    replicate.plan(() => ({
      starting: 1, processing: 2,
      logs: (p) => (p.polls >= 2 ? 'Using seed 1\n  0%|          | 0/4\r 50%|█████     | 2/4\r' : '') + (p.polls >= 3 ? '\n100%|██████████| 4/4\n' : ''),
    }));
    const sink = new Recorder();
    await createReplicateProvider(options()).generateImage(req(imageEntry('replicate', { baseUrl: replicate.url, model: 'owner/model' }), sink));
    assert.deepEqual(sink.progresses, [[null, 'starting'], [50, '50%|█████ | 2/4'], [100, '100%|██████████| 4/4']]);
  });

  it('messages lose control characters and are capped; percentages are 0–100', () => {
    assert.equal(progressMessage('a\u0000b\u007f\u009bc\r\n'), 'a b c');
    assert.equal(progressMessage(' \u0007 '), null);
    assert.equal(lastPercent('step 3 of 10, 30% then 250% then 7.5 %'), 8);
    assert.equal(lastPercent('no numbers'), null);
  });
});

describe('local: streaming over upstream.delayMs', () => {
  const model = (category: 'text' | 'image', delayMs: number | undefined) =>
    entry('local', delayMs === undefined ? {} : { delayMs }, { category, output_modalities: [category] });

  it('text arrives in about 20 chunks spread over the delay, joining to the same text; images report progress', async () => {
    const sink = new Recorder();
    const started = Date.now();
    const out = await localProvider.generateText(textRequest(model('text', 300), { sink }));
    const plain = await localProvider.generateText(textRequest(model('text', undefined)));
    assert.deepEqual(out, plain);
    assert.equal(sink.joined, out.text);
    assert.ok(sink.texts.length >= 10 && sink.texts.length <= 20, String(sink.texts.length));
    assert.ok(sink.firstAt! - started < 200, 'the first chunk comes early');
    assert.ok(Date.now() - started >= 290);

    const images = new Recorder();
    await localProvider.generateImage({ model: model('image', 100), prompt: 'x', aspectRatio: '1:1', images: [], textInputs: [], signal: new AbortController().signal, sink: images });
    assert.equal(images.progresses.length, 20);
    assert.deepEqual(images.progresses.at(-1), [100, null]);
    assert.ok(images.progresses.every(([p], i) => i === 0 || p! > images.progresses[i - 1]![0]!));

    const none = new Recorder();
    await localProvider.generateText(textRequest(model('text', 0), { sink: none }));
    assert.equal(none.log.length, 0, 'no delay: nothing to pace');
  });
});
