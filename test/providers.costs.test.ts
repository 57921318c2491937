// Pricing helpers: exact integer microdollars (cost × markup, rounded up), worst-case
// reservations that cover what adapters actually report, GLSL reserving its retry.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CatalogModel } from '../src/billing/catalog.ts';
import {
  actualMicros,
  generateCode,
  getProvider,
  inputTokenBound,
  maxTokensFor,
  reserveMicros,
  type CostRequest,
  type TargetLanguage,
} from '../src/providers/index.ts';

function model(over: Partial<CatalogModel> = {}): CatalogModel {
  return {
    id: 'm', name: 'M', category: 'text', provider: 'local', upstream: null, supports_image_input: true,
    input_modalities: ['text'], output_modalities: ['text'],
    cost: { input_micros_per_token: 0.15, output_micros_per_token: 0.6 },
    maxOutputTokens: 2000, markup: 1.1, enabled: true, ...over,
  };
}

describe('costs', () => {
  it('prices run time exactly: reserved at maxSeconds, settled per started millisecond, capped', () => {
    const m = model({ category: 'image', provider: 'replicate', cost: { micros_per_second: 1000 }, markup: 1, upstream: { maxSeconds: 20 } });
    assert.equal(reserveMicros(m, { type: 'image' }), 20_000);
    // 2.007 s is 2,007 ms: float maths (2.007 * 1000 = 2007.0000000000002) would bill 2,008.
    assert.equal(actualMicros(m, { seconds: 2.007 }), 2007);
    assert.equal(actualMicros(m, { seconds: 2.0071 }), 2008);
    assert.equal(actualMicros(m, { seconds: 0 }), 0);
    assert.equal(actualMicros(model({ ...m, cost: { micros_per_second: 975 }, markup: 1.25 }), { seconds: 2.345 }), 2858); // 2.345 × 975 × 1.25 = 2857.97 → 2858
    assert.equal(actualMicros(m, { seconds: 60 }, 20_000), 20_000);
    assert.equal(reserveMicros(model({ ...m, upstream: null }), { type: 'image' }), 300_000, 'default maxSeconds 300');
  });

  it('prices images as per-image cost × markup, rounded up', () => {
    const m = model({ category: 'image', cost: { micros_per_image: 40_000 }, markup: 1.25 });
    assert.equal(reserveMicros(m, { type: 'image' }), 50_000);
    assert.equal(actualMicros(m, { images: 1 }), 50_000);
    assert.equal(actualMicros(model({ cost: { micros_per_image: 3 }, markup: 1.3333 }), { images: 1 }), 4); // 3.9999 → 4
  });

  it('uses exact decimal arithmetic where floats would drift', () => {
    // 1000 × 0.15 + 1000 × 0.6 = 750; × 1.1 = 825 exactly (float math gives 825.0000000000001).
    assert.equal(actualMicros(model(), { inputTokens: 1000, outputTokens: 1000 }), 825);
    assert.notEqual(Math.ceil((1000 * 0.15 + 1000 * 0.6) * 1.1), 825, 'the float path really drifts');
    // 0.1 + 0.2 style: 1 × 0.1 + 1 × 0.2 = 0.3 → 1 micro; × 10 markup = 3 exactly.
    assert.equal(actualMicros(model({ cost: { input_micros_per_token: 0.1, output_micros_per_token: 0.2 }, markup: 10 }), { inputTokens: 1, outputTokens: 1 }), 3);
  });

  it('rounds every charge up to a whole micro and handles tiny prices', () => {
    assert.equal(actualMicros(model(), { inputTokens: 1, outputTokens: 0 }), 1);
    assert.equal(actualMicros(model({ cost: { input_micros_per_token: 1e-7, output_micros_per_token: 0 }, markup: 1 }), { inputTokens: 10_000_000, outputTokens: 0 }), 1);
    assert.equal(actualMicros(model(), { inputTokens: 0, outputTokens: 0 }), 0);
  });

  it('treats missing prices as free', () => {
    assert.equal(reserveMicros(model({ cost: null }), { type: 'image' }), 0);
    assert.equal(reserveMicros(model({ cost: null }), { type: 'code', prompt: 'x', targetLanguage: 'text' }), 0);
  });

  it('clamps the actual charge to the reservation', () => {
    assert.equal(actualMicros(model(), { inputTokens: 1e6, outputTokens: 1e6 }, 100), 100);
  });

  it('defaults max tokens to 4096', () => {
    assert.equal(maxTokensFor(model({ maxOutputTokens: null })), 4096);
    assert.equal(maxTokensFor(model()), 2000);
  });

  it('reserves bytes of the sent prompt plus max output tokens', () => {
    const m = model({ markup: 1 });
    const req: CostRequest = { type: 'code', prompt: 'héllo 😀', targetLanguage: 'tsx', textInputs: [{ content: 'abc' }] };
    const bound = inputTokenBound(m, req);
    assert.ok(bound > Buffer.byteLength('héllo 😀') + 3);
    assert.equal(reserveMicros(m, req), Math.ceil(bound * 0.15 + 2000 * 0.6));
    // Images count only for models that accept them.
    assert.equal(inputTokenBound(m, { ...req, imageCount: 2 }) - bound, 4000);
    assert.equal(inputTokenBound(model({ supports_image_input: false }), { ...req, imageCount: 2 }), bound);
    assert.ok(reserveMicros(m, { ...req, maxTokens: 10 }) < reserveMicros(m, req));
  });

  it('reserves two attempts (plus the repair text) for GLSL', () => {
    const m = model({ markup: 1 });
    const tsx = reserveMicros(m, { type: 'code', prompt: 'plasma', targetLanguage: 'tsx' });
    const glsl = reserveMicros(m, { type: 'code', prompt: 'plasma', targetLanguage: 'glsl' });
    assert.ok(glsl > 2 * tsx - 100, `${glsl} vs ${tsx}`);
    // screenHtml wins over glsl, so no second attempt is reserved.
    const screen = reserveMicros(m, { type: 'code', prompt: 'plasma', targetLanguage: 'glsl', screenHtml: true });
    assert.ok(screen < glsl);
  });

  it('never lets the local adapter report more than the reservation', async () => {
    const local = getProvider('local');
    const langs: TargetLanguage[] = ['text', 'tsx', 'jsx', 'css', 'svg', 'json', 'typescript', 'javascript', 'mdx', 'markdown', 'glsl'];
    const images = Array.from({ length: 10 }, () => ({ data: Buffer.from('img'), mediaType: 'image/png' }));
    for (const supports_image_input of [true, false]) {
      const m = model({ maxOutputTokens: 64, supports_image_input });
      for (const targetLanguage of langs) {
        for (const [prompt, textInputs] of [['x', []], ['ü'.repeat(500), [{ content: 'data '.repeat(200), label: 'Data' }]]] as const) {
          const reserved = reserveMicros(m, { type: 'code', prompt, targetLanguage, textInputs, imageCount: images.length });
          const out = await generateCode(local, {
            model: m, prompt, targetLanguage, screenHtml: false, images, textInputs: [...textInputs],
            maxTokens: maxTokensFor(m), signal: new AbortController().signal,
          });
          const actual = actualMicros(m, out.usage);
          assert.ok(actual > 0 && actual <= reserved, `${targetLanguage}/${supports_image_input}: ${actual} <= ${reserved}`);
        }
      }
    }
  });

  it('refuses negative or non-finite prices', () => {
    assert.throws(() => reserveMicros(model({ cost: { micros_per_image: -1 } }), { type: 'image' }), RangeError);
    assert.throws(() => reserveMicros(model({ markup: Number.NaN, cost: { micros_per_image: 1 } }), { type: 'image' }), RangeError);
  });
});
