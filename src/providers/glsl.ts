// GLSL output rules (docs/api.md, "GLSL output"): a validator for generated Shadertoy-style shaders
// and the single repair retry that generation jobs run when a model breaks the rules.

import { ProviderError, type Provider, type TextOutput, type TextRequest } from './types.ts';

export interface GlslUniform {
  name: string;
  type: 'float' | 'int';
  min: number;
  max: number;
  default: number;
  label: string;
}

export type GlslValidation = { ok: true; uniforms: GlslUniform[] } | { ok: false; error: string };

const HARNESS_NAMES = ['iResolution', 'iTime', 'iTimeDelta', 'iFrame', 'iMouse'] as const;
const MIN_UNIFORMS = 3;
const MAX_UNIFORMS = 5;
const MAX_LABEL = 80;
/** Bounds the repair prompt so the cost reservation can account for it. */
export const GLSL_ERROR_MAX_CHARS = 300;

const NUMBER = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;
const INTEGER = /^[-+]?\d+$/;
const ANNOTATION = /^\/\/\s*@range\s+(\S+)\s+(\S+)\s+@default\s+(\S+)\s+@label\s+(.*?)\s*$/;
const TYPES = String.raw`(?:float|int|uint|bool|[biu]?vec[234]|mat[234](?:x[234])?|sampler\w*)`;
const PRECISION = String.raw`(?:(?:lowp|mediump|highp)\s+)?`;

interface Stripped {
  /** Source with comments replaced by spaces; newlines kept so line numbers still match. */
  code: string;
  /** Text of the `//` comment on each line (0-based), including the slashes. */
  lineComments: Map<number, string>;
}

function stripComments(src: string): Stripped | { error: string } {
  let code = '';
  const lineComments = new Map<number, string>();
  let line = 0;
  for (let i = 0; i < src.length; ) {
    const c = src[i];
    if (c === '/' && src[i + 1] === '/') {
      const end = src.indexOf('\n', i);
      const stop = end === -1 ? src.length : end;
      lineComments.set(line, src.slice(i, stop));
      code += ' '.repeat(stop - i);
      i = stop;
    } else if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      if (end === -1) return { error: 'unterminated /* comment' };
      for (const ch of src.slice(i, end + 2)) {
        if (ch === '\n') line++;
        code += ch === '\n' ? '\n' : ' ';
      }
      i = end + 2;
    } else {
      if (c === '\n') line++;
      code += c;
      i++;
    }
  }
  return { code, lineComments };
}

function balanced(code: string): boolean {
  const open: string[] = [];
  const pairs: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
  for (const ch of code) {
    if (ch === '(' || ch === '[' || ch === '{') open.push(ch);
    else if (ch in pairs && open.pop() !== pairs[ch]) return false;
  }
  return open.length === 0;
}

function lineOf(code: string, index: number): number {
  let n = 0;
  for (let i = 0; i < index; i++) if (code.charCodeAt(i) === 10) n++;
  return n;
}

export function validateGlsl(source: string): GlslValidation {
  const fail = (error: string): GlslValidation => ({ ok: false, error });
  if (source.trim() === '') return fail('the shader is empty');
  const stripped = stripComments(source);
  if ('error' in stripped) return fail(stripped.error);
  const { code, lineComments } = stripped;

  if (/^[ \t]*#[ \t]*version\b/m.test(code)) return fail('remove the #version directive');
  if (!balanced(code)) return fail('unbalanced brackets or braces');
  if (!new RegExp(String.raw`\bvoid\s+mainImage\s*\(\s*out\s+${PRECISION}vec4\s+\w+\s*,\s*(?:in\s+)?${PRECISION}vec2\s+\w+\s*\)\s*\{`).test(code)) {
    return fail('define void mainImage(out vec4 fragColor, in vec2 fragCoord) { ... }');
  }
  if (/\bvoid\s+main\s*\(/.test(code)) return fail('do not define main(); the harness provides it');

  for (const name of HARNESS_NAMES) {
    const declared =
      new RegExp(String.raw`\b${TYPES}\s+${PRECISION}(?:\w+\s*(?:=[^,;()]*)?,\s*)*${name}\b(?!\s*\()`).test(code) ||
      new RegExp(String.raw`^[ \t]*#[ \t]*(?:define|undef)[ \t]+${name}\b`, 'm').test(code);
    if (declared) return fail(`do not declare ${name}; the harness provides it`);
  }

  const uniforms: GlslUniform[] = [];
  const decl = /\buniform\b([^;]*);/g;
  for (let m: RegExpExecArray | null; (m = decl.exec(code)); ) {
    const body = m[1]!.trim().replace(/\s+/g, ' ');
    const parts = /^(?:(?:lowp|mediump|highp) )?(\w+) (\w+)$/.exec(body);
    if (!parts) return fail(`declare one uniform per statement as "uniform float name;" (got "uniform ${body.slice(0, 60)}")`);
    const [, type, name] = parts as unknown as [string, string, string];
    if (type !== 'float' && type !== 'int') return fail(`uniform ${name} has type ${type}; tunable uniforms must be float or int`);
    if (uniforms.some((u) => u.name === name)) return fail(`uniform ${name} is declared twice`);
    const start = lineOf(code, m.index);
    const end = lineOf(code, m.index + m[0].length);
    if (start !== end) return fail(`keep the declaration of uniform ${name} on one line`);
    const comment = lineComments.get(end);
    const a = comment === undefined ? null : ANNOTATION.exec(comment);
    if (!a) return fail(`uniform ${name} needs a same-line comment "// @range <min> <max> @default <value> @label <label>"`);
    const [, minS, maxS, defS, labelRaw] = a as unknown as [string, string, string, string, string];
    const pattern = type === 'int' ? INTEGER : NUMBER;
    for (const [what, s] of [['min', minS], ['max', maxS], ['default', defS]] as const) {
      if (!pattern.test(s) || !Number.isFinite(Number(s))) {
        return fail(`uniform ${name}: @range/@default ${what} "${s.slice(0, 20)}" is not ${type === 'int' ? 'an integer' : 'a number'}`);
      }
    }
    const min = Number(minS), max = Number(maxS), def = Number(defS);
    if (!(min < max)) return fail(`uniform ${name}: @range min must be less than max`);
    if (def < min || def > max) return fail(`uniform ${name}: @default must lie within @range`);
    const label = labelRaw.trim();
    if (label === '' || label.length > MAX_LABEL) return fail(`uniform ${name}: @label must be 1 to ${MAX_LABEL} characters`);
    uniforms.push({ name, type, min, max, default: def, label });
  }
  if (uniforms.length < MIN_UNIFORMS || uniforms.length > MAX_UNIFORMS) {
    return fail(`declare ${MIN_UNIFORMS} to ${MAX_UNIFORMS} annotated uniforms (found ${uniforms.length})`);
  }
  return { ok: true, uniforms };
}

/** Appended to the original prompt for the one retry; the error text is bounded for costing. */
export function glslRepairPrompt(error: string): string {
  const reason = error.length > GLSL_ERROR_MAX_CHARS ? `${error.slice(0, GLSL_ERROR_MAX_CHARS)}…` : error;
  return (
    `\n\nA previous attempt at this shader was rejected: ${reason}.\n` +
    'Write the whole shader again following every rule: mainImage only, no #version, no declarations ' +
    'of iResolution/iTime/iTimeDelta/iFrame/iMouse, and 3 to 5 float or int uniforms each annotated on ' +
    'the same line with "// @range <min> <max> @default <value> @label <label>".'
  );
}

/**
 * One generation plus at most one repair attempt. Usage of both attempts is summed because both
 * were paid for upstream; on final failure it rides on the error for accounting.
 */
export async function generateGlsl(provider: Provider, req: TextRequest): Promise<TextOutput> {
  const first = await provider.generateText(req);
  const firstCheck = validateGlsl(first.text);
  if (firstCheck.ok) return first;

  let second: TextOutput;
  // The repair is a new answer: clients drop the first one's text.
  req.sink?.restart();
  try {
    second = await provider.generateText({ ...req, prompt: req.prompt + glslRepairPrompt(firstCheck.error) });
  } catch (err) {
    if (err instanceof ProviderError && err.usage === undefined) {
      throw new ProviderError(err.message, {
        code: err.code, retryable: err.retryable, retryAfterMs: err.retryAfterMs, status: err.status,
        usage: first.usage, cause: err,
      });
    }
    throw err;
  }
  const usage = {
    inputTokens: first.usage.inputTokens + second.usage.inputTokens,
    outputTokens: first.usage.outputTokens + second.usage.outputTokens,
  };
  const secondCheck = validateGlsl(second.text);
  if (!secondCheck.ok) {
    throw new ProviderError(`generated shader is invalid: ${secondCheck.error}`, {
      code: 'invalid_output',
      retryable: false,
      usage,
    });
  }
  return { text: second.text, usage, providerRequestId: second.providerRequestId ?? first.providerRequestId ?? null };
}
