// Offline text output for the local provider: a small, valid document in each output kind that
// quotes the prompt with the escaping that kind needs.

import type { OutputKind, TextInput } from './types.ts';

interface Ctx {
  prompt: string;
  /** One-line prompt, at most 120 code points, for titles. */
  title: string;
  inputs: readonly TextInput[];
  rand: () => number;
}

const pick = <T>(rand: () => number, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
const hex = (rand: () => number) =>
  '#' + Math.floor(rand() * 0xffffff).toString(16).padStart(6, '0');
const fixed = (n: number) => n.toFixed(2);

const xml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!)
    // XML 1.0 forbids most C0 controls even as references.
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '');
const js = (s: string) => JSON.stringify(s);
const cssComment = (s: string) => s.replace(/\*\//g, '* /');
const markdown = (s: string) => s.replace(/[\\`*_{}[\]()#+\-.!|<>~&]/g, '\\$&');
/** `//` comments: printable ASCII only (strict GLSL ES compilers) and no `\` line splices. */
const glslComment = (s: string) => s.replace(/[^\x20-\x7e]|\\/g, '?');

const WORDS = ['Aurora', 'Basalt', 'Cinder', 'Delta', 'Ember', 'Fjord', 'Garnet', 'Harbor', 'Indigo', 'Juniper', 'Kelp', 'Lumen'];

function labels(inputs: readonly TextInput[]): string[] {
  return inputs.map((t, i) => t.label?.trim() || `Input ${i + 1}`);
}

function items(c: Ctx, n: number): Array<{ id: number; name: string; score: number }> {
  return Array.from({ length: n }, (_, i) => ({ id: i + 1, name: pick(c.rand, WORDS), score: Math.round(c.rand() * 100) }));
}

const generators: Record<OutputKind, (c: Ctx) => string> = {
  text: (c) =>
    `${c.prompt}\n\n` +
    `This is deterministic placeholder text from Kiln's local development model. ` +
    `It was produced without calling any AI service.` +
    (c.inputs.length ? `\n\nInputs considered: ${labels(c.inputs).join(', ')}.` : '') +
    `\n`,

  markdown: (c) =>
    `# ${markdown(c.title)}\n\n` +
    `> Generated offline by the local development model.\n\n` +
    items(c, 3).map((it) => `- **${it.name}**: ${it.score}`).join('\n') +
    (c.inputs.length ? `\n\n## Inputs\n\n${labels(c.inputs).map((l) => `- ${markdown(l)}`).join('\n')}` : '') +
    `\n`,

  mdx: (c) =>
    `export const meta = { prompt: ${js(c.prompt)}, items: ${JSON.stringify(items(c, 3))} }\n\n` +
    `# ${markdown(c.title)}\n\n` +
    `Generated offline for: {meta.prompt}\n\n` +
    `<ul>{meta.items.map((it) => <li key={it.id}>{it.name}: {it.score}</li>)}</ul>\n`,

  tsx: (c) => reactModule(c, true),
  jsx: (c) => reactModule(c, false),

  typescript: (c) =>
    `// Generated offline by the local development model.\n` +
    `export interface Item {\n  id: number;\n  name: string;\n  score: number;\n}\n\n` +
    `export const prompt: string = ${js(c.prompt)};\n\n` +
    `export const items: Item[] = ${JSON.stringify(items(c, 4), null, 2)};\n\n` +
    `export function topItem(list: readonly Item[] = items): Item | undefined {\n` +
    `  return [...list].sort((a, b) => b.score - a.score)[0];\n}\n`,

  javascript: (c) =>
    `// Generated offline by the local development model.\n` +
    `export const prompt = ${js(c.prompt)};\n\n` +
    `export const items = ${JSON.stringify(items(c, 4), null, 2)};\n\n` +
    `export function topItem(list = items) {\n` +
    `  return [...list].sort((a, b) => b.score - a.score)[0];\n}\n`,

  css: (c) =>
    `/* Generated offline for: ${cssComment(c.title)} */\n` +
    `:root {\n  --kiln-accent: ${hex(c.rand)};\n  --kiln-surface: ${hex(c.rand)};\n  --kiln-radius: ${4 + Math.floor(c.rand() * 12)}px;\n}\n\n` +
    `.kiln-card {\n  background: var(--kiln-surface);\n  border: 2px solid var(--kiln-accent);\n` +
    `  border-radius: var(--kiln-radius);\n  padding: 1.5rem;\n  font-family: system-ui, sans-serif;\n}\n\n` +
    `.kiln-card h1 {\n  color: var(--kiln-accent);\n  margin: 0 0 0.5rem;\n}\n`,

  json: (c) =>
    JSON.stringify(
      { prompt: c.prompt, title: c.title, inputs: labels(c.inputs), items: items(c, 3), palette: [hex(c.rand), hex(c.rand)] },
      null,
      2,
    ) + '\n',

  svg: (c) => {
    const shapes = Array.from({ length: 4 + Math.floor(c.rand() * 4) }, () =>
      c.rand() < 0.5
        ? `  <circle cx="${Math.round(c.rand() * 512)}" cy="${Math.round(c.rand() * 512)}" r="${20 + Math.round(c.rand() * 120)}" fill="${hex(c.rand)}" fill-opacity="0.8"/>`
        : `  <rect x="${Math.round(c.rand() * 400)}" y="${Math.round(c.rand() * 400)}" width="${30 + Math.round(c.rand() * 150)}" height="${30 + Math.round(c.rand() * 150)}" rx="8" fill="${hex(c.rand)}" fill-opacity="0.8"/>`,
    );
    return (
      `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 512 512" width="512" height="512" role="img" aria-label="${xml(c.title)}">\n` +
      `  <title>${xml(c.prompt)}</title>\n` +
      `  <rect width="512" height="512" fill="${hex(c.rand)}"/>\n` +
      shapes.join('\n') + '\n' +
      `  <text x="256" y="488" text-anchor="middle" font-family="sans-serif" font-size="18" fill="#ffffff">${xml(c.title)}</text>\n` +
      `</svg>\n`
    );
  },

  html: (c) =>
    `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">\n` +
    `<title>${xml(c.title)}</title>\n<style>\n` +
    `  body { margin: 0; min-height: 100vh; display: grid; place-items: center; font-family: system-ui, sans-serif; background: ${hex(c.rand)}; }\n` +
    `  main { background: #fff; border-radius: 16px; padding: 2rem; max-width: 40rem; box-shadow: 0 8px 32px rgba(0,0,0,.2); }\n` +
    `  h1 { color: ${hex(c.rand)}; }\n</style>\n</head>\n<body>\n<main>\n` +
    `  <h1>${xml(c.title)}</h1>\n  <p>${xml(c.prompt)}</p>\n` +
    `  <ul>\n${items(c, 3).map((it) => `    <li>${it.name}: ${it.score}</li>`).join('\n')}\n  </ul>\n` +
    (c.inputs.length ? `  <p>Inputs: ${labels(c.inputs).map(xml).join(', ')}</p>\n` : '') +
    `</main>\n</body>\n</html>\n`,

  glsl: (c) => {
    const all = [
      `uniform float uSpeed; // @range 0.0 4.0 @default ${fixed(0.5 + c.rand() * 2)} @label Speed`,
      `uniform float uScale; // @range 0.5 8.0 @default ${fixed(1 + c.rand() * 4)} @label Scale`,
      `uniform float uHue; // @range 0.0 1.0 @default ${fixed(c.rand())} @label Hue`,
      `uniform float uWarp; // @range 0.0 2.0 @default ${fixed(c.rand() * 2)} @label Warp`,
      `uniform int uBands; // @range 1 12 @default ${1 + Math.floor(c.rand() * 12)} @label Bands`,
    ];
    const n = 3 + Math.floor(c.rand() * 3);
    const has = (name: string) => all.slice(0, n).some((l) => l.includes(` ${name};`));
    return (
      `// Generated offline for: ${glslComment(c.title)}\n` +
      all.slice(0, n).join('\n') + '\n\n' +
      `vec3 palette(float t) {\n  return 0.5 + 0.5 * cos(6.28318 * (vec3(t) + vec3(0.0, 0.33, 0.67)));\n}\n\n` +
      `void mainImage(out vec4 fragColor, in vec2 fragCoord) {\n` +
      `  vec2 uv = (fragCoord - 0.5 * iResolution.xy) / iResolution.y;\n` +
      `  float t = iTime * uSpeed;\n` +
      `  uv *= uScale;\n` +
      `  float hue = ${has('uHue') ? 'uHue' : fixed(c.rand())};\n` +
      `  float warp = ${has('uWarp') ? 'uWarp' : '1.0'};\n` +
      `  float bands = ${has('uBands') ? 'float(uBands)' : '6.0'};\n` +
      `  float d = length(uv + warp * vec2(sin(t + uv.y), cos(t + uv.x)) * 0.3);\n` +
      `  vec3 col = palette(hue + d * 0.25 + 0.1 * sin(d * bands - t));\n` +
      `  fragColor = vec4(col, 1.0);\n}\n`
    );
  },
};

function reactModule(c: Ctx, typed: boolean): string {
  const list = items(c, 3);
  return (
    `// Generated offline by the local development model.\n` +
    `const prompt${typed ? ': string' : ''} = ${js(c.prompt)};\n` +
    `const items = ${JSON.stringify(list)};\n\n` +
    `export default function Generated() {\n` +
    `  return (\n` +
    `    <section style={{ padding: 24, borderRadius: 12, background: ${js(hex(c.rand))} }}>\n` +
    `      <h1>{prompt}</h1>\n` +
    `      <ul>\n` +
    `        {items.map((item) => (\n` +
    `          <li key={item.id}>{item.name}: {item.score}</li>\n` +
    `        ))}\n` +
    `      </ul>\n` +
    `    </section>\n` +
    `  );\n}\n`
  );
}

export function localText(kind: OutputKind, prompt: string, inputs: readonly TextInput[], rand: () => number): string {
  const title = Array.from(prompt.replace(/\s+/g, ' ').trim()).slice(0, 120).join('');
  return generators[kind]({ prompt, title, inputs, rand });
}
