// The offline local adapter: outputs valid per output kind, deterministic, images at the asked
// aspect ratio that differ between prompts, and the `upstream.delayMs` latency knob.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import ts from 'typescript';
import type { CatalogModel } from '../src/billing/catalog.ts';
import { validateGlsl } from '../src/providers/glsl.ts';
import {
  ASPECT_RATIOS,
  generateCode,
  getProvider,
  ProviderError,
  structuredOutput,
  type TargetLanguage,
  type TextRequest,
} from '../src/providers/index.ts';

const local = getProvider('local');
const TRICKY = `Pricing "card" <b>bold</b> & 'quote' */ \`tick\` {brace} \\ back\nslash ü 😀 ]]> --> $\{x}`;

function model(over: Partial<CatalogModel> = {}): CatalogModel {
  return {
    id: 'local/dev',
    name: 'Local development model',
    category: 'text',
    provider: 'local',
    upstream: null,
    supports_image_input: true,
    input_modalities: ['text', 'image'],
    output_modalities: ['text'],
    cost: { input_micros_per_token: 0.01, output_micros_per_token: 0.02 },
    maxOutputTokens: null,
    markup: 1,
    enabled: true,
    ...over,
  };
}

function textReq(targetLanguage: TargetLanguage, over: Partial<TextRequest> = {}): TextRequest {
  return {
    model: model(),
    prompt: TRICKY,
    targetLanguage,
    screenHtml: false,
    images: [],
    textInputs: [{ content: 'Brand notes', label: 'Brief <1>' }],
    maxTokens: 4096,
    signal: new AbortController().signal,
    ...over,
  };
}

/** Minimal XML well-formedness: one root, balanced tags, quoted unique attributes, valid references. */
function assertWellFormedXml(doc: string): void {
  const s = doc.replace(/^\s*<\?xml[^?]*\?>/, '').trim();
  const stack: string[] = [];
  let roots = 0;
  let i = 0;
  const NAME = /^[A-Za-z_:][\w.:-]*/;
  const checkText = (t: string) => {
    assert.ok(!t.includes('<'), `raw < in text: ${t}`);
    for (const m of t.matchAll(/&([^;\s]*);?/g)) {
      assert.match(m[0], /^&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);$/, `bad reference ${m[0]}`);
    }
  };
  while (i < s.length) {
    const lt = s.indexOf('<', i);
    const text = s.slice(i, lt === -1 ? s.length : lt);
    if (stack.length === 0) assert.equal(text.trim(), '', 'text outside the root element');
    else checkText(text);
    if (lt === -1) break;
    if (s.startsWith('<!--', lt)) {
      const end = s.indexOf('-->', lt + 4);
      assert.ok(end !== -1 && !s.slice(lt + 4, end).includes('--'), 'bad comment');
      i = end + 3;
      continue;
    }
    const gt = s.indexOf('>', lt);
    assert.ok(gt !== -1, 'unterminated tag');
    let tag = s.slice(lt + 1, gt);
    // '>' may legally appear inside attribute values; extend until quotes balance.
    let end = gt;
    while ((tag.match(/"/g)?.length ?? 0) % 2 === 1 || (tag.match(/'/g)?.length ?? 0) % 2 === 1) {
      end = s.indexOf('>', end + 1);
      assert.ok(end !== -1, 'unterminated attribute');
      tag = s.slice(lt + 1, end);
    }
    i = end + 1;
    if (tag.startsWith('/')) {
      assert.equal(tag.slice(1).trim(), stack.pop(), 'mismatched end tag');
      continue;
    }
    const selfClosing = tag.endsWith('/');
    const body = selfClosing ? tag.slice(0, -1) : tag;
    const name = NAME.exec(body)?.[0];
    assert.ok(name, `bad tag <${tag}>`);
    const seen = new Set<string>();
    const attrs = body.slice(name.length);
    const rest = attrs.replace(/\s+([A-Za-z_:][\w.:-]*)\s*=\s*("[^"<]*"|'[^'<]*')/g, (_m, a: string, v: string) => {
      assert.ok(!seen.has(a), `duplicate attribute ${a}`);
      seen.add(a);
      checkText(v.slice(1, -1));
      return '';
    });
    assert.equal(rest.trim(), '', `malformed attributes in <${tag}>`);
    if (stack.length === 0) roots++;
    if (!selfClosing) stack.push(name);
  }
  assert.equal(stack.length, 0, 'unclosed elements');
  assert.equal(roots, 1, 'exactly one root element');
}

function assertParses(code: string, fileName: string): void {
  const out = ts.transpileModule(code, { fileName, reportDiagnostics: true, compilerOptions: { jsx: ts.JsxEmit.Preserve, target: ts.ScriptTarget.ES2022 } });
  assert.deepEqual(out.diagnostics?.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')), []);
}

async function importModule(js: string): Promise<Record<string, unknown>> {
  return import(`data:text/javascript;base64,${Buffer.from(js).toString('base64')}`);
}

describe('local provider: text', () => {
  it('json parses and carries the prompt', async () => {
    const out = await local.generateText(textReq('json'));
    const value = JSON.parse(out.text) as { prompt: string };
    assert.equal(value.prompt, TRICKY);
    assert.deepEqual(structuredOutput(out.text), value);
  });

  it('svg is well-formed with an svg root, also for svg-category models', async () => {
    for (const req of [textReq('svg'), textReq('tsx', { model: model({ category: 'svg' }) })]) {
      const out = await local.generateText(req);
      assert.match(out.text, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
      assertWellFormedXml(out.text);
      assert.ok(out.text.includes('&lt;b&gt;bold&lt;/b&gt; &amp;'));
      // The rendered output is a real picture.
      const meta = await sharp(Buffer.from(out.text)).metadata();
      assert.equal(meta.format, 'svg');
    }
  });

  it('screenHtml gives a full HTML document with the prompt escaped', async () => {
    const out = await local.generateText(textReq('tsx', { screenHtml: true }));
    assert.match(out.text, /^<!doctype html>\n<html lang="en">/);
    for (const part of ['<head>', '<meta charset="utf-8">', '<title>', '</title>', '<body>', '</body>', '</html>']) {
      assert.ok(out.text.includes(part), part);
    }
    assert.ok(!out.text.includes('<b>bold'));
    assert.ok(out.text.includes('&lt;b&gt;bold&lt;/b&gt;'));
    assert.ok(out.text.includes('Brief &lt;1&gt;'));
  });

  it('glsl passes the validator', async () => {
    for (const prompt of ['plasma', 'ocean waves', TRICKY, 'x']) {
      const out = await generateCode(local, textReq('glsl', { prompt }));
      const v = validateGlsl(out.text);
      assert.ok(v.ok, v.ok ? '' : v.error);
      assert.ok(v.uniforms.length >= 3 && v.uniforms.length <= 5);
      assert.ok(!/[^\x09\x0a\x20-\x7e]/.test(out.text), 'ASCII only');
    }
  });

  it('typescript and javascript parse and export the exact prompt', async () => {
    const jsOut = await local.generateText(textReq('javascript'));
    assertParses(jsOut.text, 'gen.js');
    assert.equal((await importModule(jsOut.text)).prompt, TRICKY);

    const tsOut = await local.generateText(textReq('typescript'));
    assertParses(tsOut.text, 'gen.ts');
    const js = ts.transpileModule(tsOut.text, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
    assert.equal((await importModule(js)).prompt, TRICKY);
  });

  it('tsx and jsx parse as React modules', async () => {
    for (const [lang, file] of [['tsx', 'gen.tsx'], ['jsx', 'gen.jsx']] as const) {
      const out = await local.generateText(textReq(lang));
      assertParses(out.text, file);
      assert.match(out.text, /export default function/);
      assert.ok(out.text.includes(JSON.stringify(TRICKY)));
    }
  });

  it('css keeps the prompt inside a single comment and balances braces', async () => {
    const out = await local.generateText(textReq('css'));
    const firstLine = out.text.split('\n')[0]!;
    assert.ok(firstLine.startsWith('/*') && firstLine.endsWith('*/'));
    assert.equal(firstLine.indexOf('*/'), firstLine.length - 2, 'prompt cannot close the comment');
    const body = out.text.replace(/\/\*[\s\S]*?\*\//g, '');
    assert.equal((body.match(/{/g) ?? []).length, (body.match(/}/g) ?? []).length);
    assert.match(body, /--kiln-accent: #[0-9a-f]{6};/);
  });

  it('markdown, mdx and text mention the prompt', async () => {
    const md = (await local.generateText(textReq('markdown'))).text;
    assert.match(md, /^# Pricing "card" \\<b\\>bold\\<\/b\\> \\& /);
    const mdx = (await local.generateText(textReq('mdx'))).text;
    assert.ok(mdx.startsWith(`export const meta = { prompt: ${JSON.stringify(TRICKY)}`));
    assert.ok(mdx.includes('\\{brace\\}'));
    const text = (await local.generateText(textReq('text'))).text;
    assert.ok(text.startsWith(TRICKY));
  });

  it('is deterministic and reports non-zero token usage', async () => {
    const a = await local.generateText(textReq('tsx'));
    const b = await local.generateText(textReq('tsx'));
    assert.deepEqual(a, b);
    assert.ok(a.usage.inputTokens > 0 && a.usage.outputTokens > 0);
    const c = await local.generateText(textReq('tsx', { prompt: 'something else' }));
    assert.notEqual(c.text, a.text);
    const capped = await local.generateText(textReq('tsx', { maxTokens: 3 }));
    assert.equal(capped.usage.outputTokens, 3);
  });
});

describe('local provider: images', () => {
  const imageModel = model({ id: 'local/sketch', category: 'image', output_modalities: ['image'] });
  const req = (prompt: string, aspectRatio: (typeof ASPECT_RATIOS)[number] = '1:1') => ({
    model: imageModel, prompt, aspectRatio, images: [], textInputs: [], signal: new AbortController().signal,
  });

  it('renders PNGs at every aspect ratio with a 1024 px long edge', async () => {
    for (const ratio of ASPECT_RATIOS) {
      const out = await local.generateImage(req('a lighthouse', ratio));
      const meta = await sharp(out.data).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['png', out.width, out.height]);
      assert.equal(out.mediaType, 'image/png');
      assert.equal(Math.max(out.width, out.height), 1024);
      const [w, h] = ratio.split(':').map(Number) as [number, number];
      assert.ok(Math.abs(out.width / out.height - w / h) < 0.01, ratio);
    }
  });

  it('is deterministic, and different prompts look different', async () => {
    const a = await local.generateImage(req('a lighthouse at dusk'));
    const again = await local.generateImage(req('a lighthouse at dusk'));
    assert.ok(a.data.equals(again.data));
    const raw = (b: Buffer) => sharp(b).resize(64, 64).removeAlpha().raw().toBuffer();
    const pa = await raw(a.data);
    for (const other of ['a bowl of fruit', 'a lighthouse at dawn', 'neon city']) {
      const pb = await raw((await local.generateImage(req(other))).data);
      let diff = 0;
      for (let i = 0; i < pa.length; i++) diff += Math.abs(pa[i]! - pb[i]!);
      assert.ok(diff / pa.length > 20, `"${other}" differs visibly (mean abs diff ${(diff / pa.length).toFixed(1)})`);
    }
  });

  it('honours upstream.delayMs and aborts during it', async () => {
    const slow = model({ upstream: { delayMs: 150 } as CatalogModel['upstream'] });
    const t0 = Date.now();
    await local.generateText(textReq('text', { model: slow }));
    assert.ok(Date.now() - t0 >= 140);

    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 20);
    const t1 = Date.now();
    await assert.rejects(
      local.generateImage({ ...req('x'), model: { ...slow, upstream: { delayMs: 5000 } as CatalogModel['upstream'] }, signal: ctl.signal }),
      (err: unknown) => err instanceof ProviderError && err.code === 'aborted' && err.retryable,
    );
    assert.ok(Date.now() - t1 < 1000);
  });

  it('rejects unknown adapters with a config error', () => {
    assert.throws(() => getProvider('nope'), (err: unknown) => err instanceof ProviderError && err.code === 'config');
  });
});
