// The `fal` adapter: fal's queue API for image apps (FLUX, SDXL, Recraft, … on fal.ai). Submit to
// the app, poll the request's status, fetch the result, download its first image; the upstream
// request is cancelled when the Kiln job is cancelled, times out or is abandoned (queued.ts runs
// those steps; this file is fal's side of each).

import type { CatalogModel } from '../billing/catalog.ts';
import { onOrigin, requestJson } from './http.ts';
import { imagePrompt } from './prompts.ts';
import { createQueuedProvider, lastLogLine, lastPercent, type Progress, type QueuedProtocol } from './queued.ts';
import { upstreamSetting, type AspectRatio, type Provider } from './types.ts';
import { badResponse, dataUrl, misconfigured, rejected, type AdapterOptions } from './upstream.ts';

const DEFAULT_BASE_URL = 'https://queue.fal.run';

/**
 * fal's `image_size`: its named presets where one matches the ratio, else an explicit size (both
 * edges multiples of 64, about a megapixel like the presets). Results are cropped to the exact ratio.
 */
const DEFAULT_SIZES: Record<AspectRatio, string | { width: number; height: number }> = {
  '1:1': 'square_hd',
  '16:9': 'landscape_16_9',
  '9:16': 'portrait_16_9',
  '4:3': 'landscape_4_3',
  '3:4': 'portrait_4_3',
  '3:2': { width: 1152, height: 768 },
  '2:3': { width: 768, height: 1152 },
};

/** fal's namespaced apps (`workflows/owner/app/…`): the namespace stays in the queue paths. */
const NAMESPACES = new Set(['workflows', 'comfy']);

/**
 * The app id split as fal's clients do: submit goes to the whole id (`fal-ai/flux/schnell`), while
 * status, result and cancel live under the app without its sub-path (`fal-ai/flux`).
 */
function parseApp(model: CatalogModel): { submitPath: string; queuePath: string } {
  const app = model.upstream?.app;
  const parts = typeof app === 'string' ? app.split('/') : [];
  if (parts.length < 2 || parts.some((p) => !/^[A-Za-z0-9._-]+$/.test(p) || p === '.' || p === '..')) {
    throw misconfigured('model is not available (upstream.app must look like owner/app[/path])');
  }
  const head = NAMESPACES.has(parts[0]!) ? 3 : 2;
  if (parts.length < head) throw misconfigured('model is not available (upstream.app must look like owner/app[/path])');
  return { submitPath: parts.join('/'), queuePath: parts.slice(0, head).join('/') };
}

function imageSize(model: CatalogModel, ratio: AspectRatio): string | { width: number; height: number } {
  const sizes = upstreamSetting(model, 'imageSizes') as Partial<Record<AspectRatio, unknown>> | undefined;
  const configured = sizes?.[ratio];
  if (typeof configured === 'string') {
    const m = /^(\d{2,5})x(\d{2,5})$/.exec(configured);
    return m ? { width: Number(m[1]), height: Number(m[2]) } : configured;
  }
  return DEFAULT_SIZES[ratio];
}

const REQUEST_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** fal's queue protocol (the skeleton, with polling and cancelling, is queued.ts). */
const fal: QueuedProtocol<{ submitPath: string; queuePath: string }> = {
  name: 'fal',
  defaultBaseUrl: DEFAULT_BASE_URL,
  auth: { header: 'authorization', scheme: 'Key' },
  target: parseApp,
  input: (req, images) => ({
    prompt: imagePrompt(req.prompt, req.textInputs),
    image_size: imageSize(req.model, req.aspectRatio),
    num_images: 1,
    ...(images.length === 1 ? { image_url: dataUrl(images[0]!) } : {}),
    ...(images.length > 1 ? { image_urls: images.map(dataUrl) } : {}),
  }),

  async submit({ base, origin, auth, job, options }, { submitPath, queuePath }, input) {
    const submitted = await requestJson(
      {
        method: 'POST',
        url: `${base}/${submitPath}`,
        headers: { 'content-type': 'application/json', accept: 'application/json', ...auth },
        body: JSON.stringify(input),
        signal: job.signal,
      },
      options,
    );
    const s = submitted.json as { request_id?: unknown; status_url?: unknown; response_url?: unknown; cancel_url?: unknown } | null;
    const id = s?.request_id;
    if (typeof id !== 'string' || !REQUEST_ID.test(id)) throw badResponse('upstream provider returned no request id');
    // The returned URLs are used only on the configured origin: the key never goes elsewhere.
    const root = `${base}/${queuePath}/requests/${id}`;
    return {
      id,
      statusUrl: onOrigin(s?.status_url, origin) ?? `${root}/status`,
      resultUrl: onOrigin(s?.response_url, origin) ?? root,
      cancel: { method: 'PUT', url: onOrigin(s?.cancel_url, origin) ?? `${root}/cancel` },
    };
  },

  ended(answer) {
    const status = (answer as { status?: unknown } | null)?.status;
    if (status === 'COMPLETED') return true;
    if (status !== 'IN_QUEUE' && status !== 'IN_PROGRESS') throw badResponse('upstream provider returned an unknown request status');
    return false;
  },

  // Logs come with a status only when asked for (`logs=1`).
  watchedStatusUrl(statusUrl) {
    const u = new URL(statusUrl);
    u.searchParams.set('logs', '1');
    return u.href;
  },

  progress(answer): Progress | null {
    const a = answer as { status?: unknown; queue_position?: unknown; logs?: unknown } | null;
    if (a?.status === 'IN_QUEUE') {
      const n = a.queue_position;
      return { percent: null, message: typeof n === 'number' && Number.isInteger(n) && n >= 0 ? `queued (position ${n})` : 'queued' };
    }
    if (a?.status !== 'IN_PROGRESS') return null;
    const lines = Array.isArray(a.logs) ? a.logs.map((l: { message?: unknown } | null) => (typeof l?.message === 'string' ? l.message : '')) : [];
    let percent: number | null = null;
    for (let i = lines.length - 1; i >= 0 && percent === null; i--) percent = lastPercent(lines[i]);
    let message: string | null = null;
    for (let i = lines.length - 1; i >= 0 && message === null; i--) message = lastLogLine(lines[i]);
    return { percent, message: message ?? 'in progress' };
  },

  // COMPLETED: the request has ended upstream, whatever its result, after fal's own retries (up
  // to 10, for server errors, timeouts and runner crashes). Its result answers with the app's
  // status: an error there is final — it fails the job at once, is neither fetched again nor
  // submitted again, and keeps fal's error_type. Only a network error on the fetch is retried,
  // by the fetch.
  async result({ auth, job, options }, _answer, { resultUrl }) {
    const { json } = await requestJson(
      { method: 'GET', url: resultUrl!, headers: { accept: 'application/json', ...auth }, signal: job.signal, outcome: true },
      options,
    );
    const out = json as { images?: Array<{ url?: unknown }>; image?: { url?: unknown }; has_nsfw_concepts?: unknown } | null;
    const url = Array.isArray(out?.images) ? out.images[0]?.url : out?.image?.url;
    if (typeof url !== 'string' || url === '') throw badResponse('upstream provider returned no image');
    if (Array.isArray(out?.has_nsfw_concepts) && out.has_nsfw_concepts[0] === true) {
      // The safety checker blanks the image: there is nothing to deliver (or to charge for).
      throw rejected('upstream model declined the request (safety checker)');
    }
    return { url };
  },
};

export function createFalProvider(options: AdapterOptions = {}): Provider {
  return createQueuedProvider(fal, options);
}
