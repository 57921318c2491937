// The offline `local` adapter: deterministic procedural images (SVG rendered by sharp) and valid
// text in every output kind, so a fresh install works with no network and no API key.

import sharp from 'sharp';
import { aspectSize } from './aspect.ts';
import { localText } from './local-text.ts';
import { requestSeed, rng } from './seed.ts';
import { sleep, throwIfAborted } from './sleep.ts';
import {
  outputKind,
  upstreamSetting,
  type ImageOutput,
  type ImageRequest,
  type Provider,
  type TextOutput,
  type TextRequest,
} from './types.ts';
import type { CatalogModel } from '../billing/catalog.ts';
import { streams } from './upstream.ts';

const LONG_EDGE = 1024;
/** Nominal cost of one image input in the local token estimate. */
const LOCAL_IMAGE_TOKENS = 85;

/** Catalog knob `upstream.delayMs`: simulated latency so tests can observe in-flight jobs. */
function delayOf(model: CatalogModel): number {
  const delay = upstreamSetting(model, 'delayMs');
  return typeof delay === 'number' && Number.isFinite(delay) && delay > 0 ? delay : 0;
}

async function simulatedLatency(model: CatalogModel, signal: AbortSignal): Promise<void> {
  const delay = delayOf(model);
  if (delay > 0) await sleep(delay, signal);
  else throwIfAborted(signal);
}

/** How many pieces a streamed answer's delay is spread over (text chunks, progress steps). */
const STEPS = 20;

/**
 * The delay spread over STEPS steps, `step(i)` called after each (i from 1), so that a fresh
 * install shows streaming (docs/providers.md, "Streaming").
 */
async function paced(delay: number, signal: AbortSignal, step: (i: number) => void): Promise<void> {
  const start = Date.now();
  for (let i = 1; i <= STEPS; i++) {
    // Aimed at the schedule, not summed sleeps: the whole still takes about `delay`.
    await sleep(Math.max(0, start + (delay * i) / STEPS - Date.now()), signal);
    step(i);
  }
}

/** `text` cut into `n` pieces by code points (never inside a surrogate pair); they join back to it. */
export function pieces(text: string, n: number): string[] {
  const chars = Array.from(text);
  const size = Math.max(1, Math.ceil(chars.length / n));
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

function hsl(h: number, s: number, l: number): string {
  return `hsl(${Math.round(h) % 360},${Math.round(s)}%,${Math.round(l)}%)`;
}

function proceduralSvg(width: number, height: number, rand: () => number): string {
  const hue = rand() * 360;
  const shift = 60 + rand() * 180; // complementary-ish second hue keeps prompts visually apart
  const angle = Math.round(rand() * 360);
  const shapes: string[] = [];
  const count = 6 + Math.floor(rand() * 10);
  const scale = Math.max(width, height);
  for (let i = 0; i < count; i++) {
    const fill = hsl(hue + (rand() < 0.5 ? 0 : shift) + rand() * 40, 55 + rand() * 40, 35 + rand() * 40);
    const opacity = (0.35 + rand() * 0.55).toFixed(2);
    const x = rand() * width, y = rand() * height, size = scale * (0.05 + rand() * 0.3);
    const kind = rand();
    if (kind < 0.4) {
      shapes.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="${size.toFixed(1)}" fill="${fill}" fill-opacity="${opacity}"/>`);
    } else if (kind < 0.75) {
      const rot = Math.round(rand() * 360);
      shapes.push(
        `<rect x="${(x - size / 2).toFixed(1)}" y="${(y - size / 2).toFixed(1)}" width="${size.toFixed(1)}" height="${(size * (0.4 + rand())).toFixed(1)}" ` +
          `rx="${(size * 0.1).toFixed(1)}" transform="rotate(${rot} ${x.toFixed(1)} ${y.toFixed(1)})" fill="${fill}" fill-opacity="${opacity}"/>`,
      );
    } else {
      const pts = Array.from({ length: 3 }, () => `${(x + (rand() - 0.5) * size * 2).toFixed(1)},${(y + (rand() - 0.5) * size * 2).toFixed(1)}`);
      shapes.push(`<polygon points="${pts.join(' ')}" fill="${fill}" fill-opacity="${opacity}"/>`);
    }
  }
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<defs><linearGradient id="bg" gradientTransform="rotate(${angle} 0.5 0.5)">` +
    `<stop offset="0" stop-color="${hsl(hue, 70, 25 + rand() * 30)}"/>` +
    `<stop offset="1" stop-color="${hsl(hue + shift, 70, 45 + rand() * 30)}"/>` +
    `</linearGradient></defs>` +
    `<rect width="${width}" height="${height}" fill="url(#bg)"/>` +
    shapes.join('') +
    `</svg>`
  );
}

const estimateTokens = (chars: number) => Math.max(1, Math.ceil(chars / 4));

export const localProvider: Provider = {
  async generateImage(req: ImageRequest): Promise<ImageOutput> {
    const delay = delayOf(req.model);
    const sink = streams(req.model, req.sink);
    if (sink && delay > 0) await paced(delay, req.signal, (i) => sink.progress(Math.round((i * 100) / STEPS), null));
    else await simulatedLatency(req.model, req.signal);
    const seed = requestSeed({ kind: `image ${req.aspectRatio}`, prompt: req.prompt, textInputs: req.textInputs, images: req.images });
    const { width, height } = aspectSize(req.aspectRatio, LONG_EDGE);
    const svg = proceduralSvg(width, height, rng(seed));
    const data = await sharp(Buffer.from(svg)).png().toBuffer();
    throwIfAborted(req.signal);
    return { data, mediaType: 'image/png', width, height, providerRequestId: `local-${seed.subarray(0, 8).toString('hex')}` };
  },

  async generateText(req: TextRequest): Promise<TextOutput> {
    const kind = outputKind(req);
    const seed = requestSeed({ kind: `text ${kind}`, prompt: req.prompt, textInputs: req.textInputs, images: req.images });
    const text = localText(kind, req.prompt, req.textInputs, rng(seed));
    const delay = delayOf(req.model);
    const sink = streams(req.model, req.sink);
    if (sink && delay > 0) {
      const parts = pieces(text, STEPS);
      await paced(delay, req.signal, (i) => {
        const part = parts[i - 1];
        if (part !== undefined) sink.text(part);
      });
    } else {
      await simulatedLatency(req.model, req.signal);
    }
    const inputChars = req.prompt.length + req.textInputs.reduce((n, t) => n + t.content.length, 0);
    return {
      text,
      usage: {
        // Like a real text-only model, one without image input does not read (or bill) images.
        inputTokens: estimateTokens(inputChars) + (req.model.supports_image_input ? req.images.length * LOCAL_IMAGE_TOKENS : 0),
        outputTokens: Math.min(Math.max(1, req.maxTokens), estimateTokens(text.length)),
      },
      providerRequestId: `local-${seed.subarray(0, 8).toString('hex')}`,
    };
  },
};
