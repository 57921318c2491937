// Prompt text sent to chat models: one system prompt per output kind and the user message that
// folds in text inputs. Cost reservation measures these same strings, so keep them the source.

import type { OutputKind, TextInput } from './types.ts';

const NO_PROSE =
  'Reply with the output only: no explanations before or after it and no markdown code fences.';

const LANGUAGE_RULES: Record<OutputKind, string> = {
  text: 'Write plain text.',
  markdown: 'Write GitHub-flavoured Markdown. Code fences are allowed inside the document.',
  mdx: 'Write MDX (Markdown with JSX). Escape literal `{`, `}` and `<` in prose.',
  tsx: 'Write a single self-contained TypeScript React (TSX) module with a default-exported component.',
  jsx: 'Write a single self-contained JavaScript React (JSX) module with a default-exported component.',
  typescript: 'Write TypeScript.',
  javascript: 'Write modern JavaScript (ES modules).',
  css: 'Write plain CSS.',
  json: 'Write one valid JSON value (RFC 8259). No comments, no trailing commas.',
  svg: 'Write one well-formed standalone SVG document: a single <svg> root element with xmlns="http://www.w3.org/2000/svg" and a viewBox. No scripts, no external references.',
  html: 'Write one complete HTML document for a full screen: start with <!doctype html>, include <html>, <head> with <meta charset="utf-8"> and a <title>, and <body>. Inline all CSS in a <style> element. No external scripts.',
  glsl: [
    'Write a GLSL fragment shader in the Shadertoy convention:',
    '- Define `void mainImage(out vec4 fragColor, in vec2 fragCoord)`. Do not define main().',
    '- iResolution (vec3), iTime, iTimeDelta (float), iFrame (int) and iMouse (vec4) are provided by the harness: never declare or #define them.',
    '- Do not emit a #version directive.',
    '- Declare 3 to 5 of your own tunable uniforms, each of type float or int, one per line, each followed on the same line by an annotation comment exactly like:',
    '  uniform float uSpeed; // @range 0.0 4.0 @default 1.0 @label Speed',
    '  min must be less than max, the default must lie within the range, int uniforms use integer values.',
  ].join('\n'),
};

export function systemPrompt(kind: OutputKind): string {
  return `You are a code and content generator. ${LANGUAGE_RULES[kind]}\n${NO_PROSE}`;
}

/** Renders text inputs as labelled blocks after the prompt, in request order. */
export function renderTextInputs(inputs: readonly TextInput[]): string {
  return inputs
    .map((input, i) => {
      const label = input.label?.trim() || `Input ${i + 1}`;
      const lang = input.language ? ` (${input.language})` : '';
      return `--- ${label}${lang} ---\n${input.content}\n--- end of ${label} ---`;
    })
    .join('\n\n');
}

export function userPrompt(prompt: string, inputs: readonly TextInput[]): string {
  if (inputs.length === 0) return prompt;
  return `${prompt}\n\nContext inputs:\n\n${renderTextInputs(inputs)}`;
}

/** The Images API takes a single prompt string, so context goes inline. */
export function imagePrompt(prompt: string, inputs: readonly TextInput[]): string {
  return userPrompt(prompt, inputs);
}
