// GLSL output rules (docs/api.md, "GLSL output"): validator table, and the one repair retry through the
// openai adapter against the loopback peer.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { CatalogModel } from '../src/billing/catalog.ts';
import { generateGlsl, glslRepairPrompt, validateGlsl } from '../src/providers/glsl.ts';
import { createOpenAIProvider, generateCode, ProviderError, type TextRequest } from '../src/providers/index.ts';
import { chatReply, startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';

const U1 = 'uniform float uSpeed; // @range 0.0 4.0 @default 1.0 @label Speed';
const U2 = 'uniform float uScale; // @range 0.5 8 @default 2 @label Pattern scale';
const U3 = 'uniform int uBands; // @range 1 12 @default 6 @label Bands';
const U4 = 'uniform highp float uGlow;   //   @range -1e-1 1.5E1 @default .5 @label Glow';
const U5 = 'uniform float uHue; // @range 0 1 @default 1 @label Hue';
const MAIN = `void mainImage(out vec4 fragColor, in vec2 fragCoord) {
  vec2 uv = fragCoord / iResolution.xy;
  vec3 col = mix(vec3(uv, 0.5), vec3(1.0), 0.5 + 0.5 * sin(iTime * uSpeed));
  fragColor = vec4(col, 1.0);
}`;
const shader = (...lines: string[]) => lines.join('\n');
const GOOD = shader(U1, U2, U3, MAIN);

describe('validateGlsl', () => {
  const good: Array<[string, string, number]> = [
    ['three uniforms', GOOD, 3],
    ['five uniforms with precision, exponents and spacing', shader(U1, U2, U3, U4, U5, MAIN), 5],
    ['mainImage without `in` and with helper functions', shader(U1, U2, U3, 'float f(float x) { return x * iTime; }', MAIN.replace('in vec2', 'vec2')), 3],
    ['block comments and harness names inside comments', shader('/* uses iTime; uniform vec3 iResolution; */', U1, U2, U3, '// float iTime;', MAIN), 3],
    ['default equal to a bound', shader(U1, U2, U5, MAIN), 3],
    ['harness names used in expressions with commas', shader(U1, U2, U3, 'vec3 f(vec3 a) { vec3 c = mix(a, iResolution, 0.5); return c; }', MAIN), 3],
  ];
  for (const [name, src, count] of good) {
    it(`accepts: ${name}`, () => {
      const v = validateGlsl(src);
      assert.ok(v.ok, v.ok ? '' : v.error);
      assert.equal(v.uniforms.length, count);
    });
  }

  it('returns the parsed annotations', () => {
    const v = validateGlsl(shader(U1, U2, U3, U4, MAIN));
    assert.ok(v.ok);
    assert.deepEqual(v.uniforms[0], { name: 'uSpeed', type: 'float', min: 0, max: 4, default: 1, label: 'Speed' });
    assert.deepEqual(v.uniforms[2], { name: 'uBands', type: 'int', min: 1, max: 12, default: 6, label: 'Bands' });
    assert.deepEqual(v.uniforms[3], { name: 'uGlow', type: 'float', min: -0.1, max: 15, default: 0.5, label: 'Glow' });
  });

  const bad: Array<[string, string, RegExp]> = [
    ['empty', '  ', /empty/],
    ['#version', shader('#version 300 es', GOOD), /#version/],
    ['no mainImage', shader(U1, U2, U3, 'void main() { gl_FragColor = vec4(1.0); }'), /mainImage/],
    ['mainImage prototype only', shader(U1, U2, U3, 'void mainImage(out vec4 c, in vec2 p);'), /mainImage/],
    ['wrong mainImage signature', shader(U1, U2, U3, MAIN.replace('out vec4', 'out vec3')), /mainImage/],
    ['defines main()', shader(GOOD, 'void main() { mainImage(gl_FragColor, gl_FragCoord.xy); }'), /main\(\)/],
    ['redeclares iResolution', shader('uniform vec3 iResolution;', GOOD), /iResolution/],
    ['redeclares iTime as a float', shader('float iTime = 0.0;', GOOD), /iTime/],
    ['redeclares iMouse in a list', shader('vec4 a, iMouse;', GOOD), /iMouse/],
    ['#defines iFrame', shader('#define iFrame 0', GOOD), /iFrame/],
    ['redeclares iTimeDelta', shader('uniform float iTimeDelta; // @range 0 1 @default 0 @label Dt', GOOD), /iTimeDelta/],
    ['two uniforms', shader(U1, U2, MAIN), /3 to 5/],
    ['six uniforms', shader(U1, U2, U3, U4, U5, 'uniform float uX; // @range 0 1 @default 0 @label X', MAIN), /3 to 5/],
    ['missing annotation', shader(U1, U2, 'uniform float uX;', MAIN), /uX needs a same-line comment/],
    ['annotation on the next line', shader(U1, U2, 'uniform float uX;\n// @range 0 1 @default 0 @label X', MAIN), /uX needs/],
    ['annotation in a block comment', shader(U1, U2, 'uniform float uX; /* @range 0 1 @default 0 @label X */', MAIN), /uX needs/],
    ['min not below max', shader(U1, U2, 'uniform float uX; // @range 2 1 @default 1.5 @label X', MAIN), /min must be less than max/],
    ['default out of range', shader(U1, U2, 'uniform float uX; // @range 0 1 @default 2 @label X', MAIN), /@default must lie within/],
    ['non-numeric bound', shader(U1, U2, 'uniform float uX; // @range zero 1 @default 0 @label X', MAIN), /not a number/],
    ['NaN-ish bound', shader(U1, U2, 'uniform float uX; // @range 0 1e999 @default 0 @label X', MAIN), /not a number/],
    ['fractional int default', shader(U1, U2, 'uniform int uX; // @range 0 4 @default 1.5 @label X', MAIN), /not an integer/],
    ['missing label', shader(U1, U2, 'uniform float uX; // @range 0 1 @default 0 @label', MAIN), /uX needs/],
    ['vec3 uniform', shader(U1, U2, 'uniform vec3 uColor; // @range 0 1 @default 0 @label Colour', MAIN), /float or int/],
    ['two names in one declaration', shader(U1, U2, 'uniform float uA, uB; // @range 0 1 @default 0 @label A', MAIN), /one uniform per statement/],
    ['duplicate uniform', shader(U1, U2, U1, MAIN), /declared twice/],
    ['unbalanced braces', shader(U1, U2, U3, MAIN.slice(0, -1)), /unbalanced/],
    ['unterminated block comment', shader(GOOD, '/* oops'), /unterminated/],
  ];
  for (const [name, src, pattern] of bad) {
    it(`rejects: ${name}`, () => {
      const v = validateGlsl(src);
      assert.equal(v.ok, false);
      assert.match((v as { error: string }).error, pattern);
    });
  }

  it('bounds the error quoted in the repair prompt', () => {
    const p = glslRepairPrompt('x'.repeat(5000));
    assert.ok(p.length < 1000);
    assert.match(glslRepairPrompt('remove the #version directive'), /rejected: remove the #version directive\./);
  });
});

describe('generateGlsl retry', () => {
  let peer: OpenAIPeer;
  before(async () => {
    peer = await startOpenAIPeer();
  });
  after(() => peer.close());
  beforeEach(() => {
    peer.requests.length = 0;
  });

  const model = (): CatalogModel => ({
    id: 'test/chat', name: 'Test', category: 'text', provider: 'openai',
    upstream: { baseUrl: peer.url, model: 'gpt-test' }, supports_image_input: false,
    input_modalities: ['text'], output_modalities: ['text'], cost: null, maxOutputTokens: null, markup: 1, enabled: true,
  });
  const req = (): TextRequest => ({
    model: model(), prompt: 'A plasma shader', targetLanguage: 'glsl', screenHtml: false,
    images: [], textInputs: [], maxTokens: 2000, signal: new AbortController().signal,
  });
  const provider = () => createOpenAIProvider({ baseDelayMs: 1, env: {} });

  it('returns the first answer when it is valid', async () => {
    peer.script([chatReply('```glsl\n' + GOOD + '\n```', { prompt_tokens: 10, completion_tokens: 20 })]);
    const out = await generateCode(provider(), req());
    assert.equal(out.text, GOOD);
    assert.deepEqual(out.usage, { inputTokens: 10, outputTokens: 20 });
    assert.equal(peer.requests.length, 1);
  });

  it('retries once with the validation error and sums usage', async () => {
    peer.script([
      chatReply(shader('#version 300 es', GOOD), { prompt_tokens: 10, completion_tokens: 20 }),
      chatReply(GOOD, { prompt_tokens: 30, completion_tokens: 40 }),
    ]);
    const out = await generateGlsl(provider(), req());
    assert.equal(out.text, GOOD);
    assert.deepEqual(out.usage, { inputTokens: 40, outputTokens: 60 });
    assert.equal(peer.requests.length, 2);
    const retried = peer.requests[1]!.json.messages[1].content as string;
    assert.ok(retried.startsWith('A plasma shader\n\nA previous attempt'));
    assert.match(retried, /remove the #version directive/);
  });

  it('fails permanently after a second invalid answer, carrying both usages', async () => {
    peer.script([
      chatReply('void main() {}', { prompt_tokens: 1, completion_tokens: 2 }),
      chatReply(shader(U1, MAIN), { prompt_tokens: 3, completion_tokens: 4 }),
    ]);
    await assert.rejects(generateGlsl(provider(), req()), (err: unknown) => {
      assert.ok(err instanceof ProviderError);
      assert.equal(err.code, 'invalid_output');
      assert.equal(err.retryable, false);
      assert.equal(err.message, 'generated shader is invalid: declare 3 to 5 annotated uniforms (found 1)');
      assert.deepEqual(err.usage, { inputTokens: 4, outputTokens: 6 });
      return true;
    });
    assert.equal(peer.requests.length, 2);
  });

  it('keeps the first attempt usage when the retry call itself fails', async () => {
    peer.script([chatReply('nonsense', { prompt_tokens: 5, completion_tokens: 6 }), { status: 400, json: { error: { type: 'invalid_request_error' } } }]);
    await assert.rejects(generateGlsl(provider(), req()), (err: unknown) => {
      assert.ok(err instanceof ProviderError);
      assert.equal(err.code, 'rejected');
      assert.deepEqual(err.usage, { inputTokens: 5, outputTokens: 6 });
      return true;
    });
  });
});
