// The `fal` adapter: fal's queue API for image apps (FLUX, SDXL, Recraft, … on fal.ai). Submit to
// the app, poll the request's status, fetch the result, download its first image; the upstream
// request is cancelled when the Kiln job is cancelled, times out or is abandoned.

import type { CatalogModel } from '../billing/catalog.ts';
import { bestEffort, onOrigin, requestJson, runUpstreamJob } from './http.ts';
import { toImageOutput } from './images.ts';
import { imagePrompt } from './prompts.ts';
import { sleep } from './sleep.ts';
import { upstreamSetting, type AspectRatio, type ImageOutput, type ImageRequest, type Provider, type TextOutput } from './types.ts';
import { authHeaders, badResponse, baseUrl, dataUrl, jobImage, misconfigured, pollInterval, rejected, withParams, type AdapterOptions } from './upstream.ts';

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

export function createFalProvider(options: AdapterOptions = {}): Provider {
  const authOf = authHeaders(options, 'authorization', 'Key');
  const timeoutMs = options.timeoutMs ?? 120_000;

  return {
    async generateText(): Promise<TextOutput> {
      throw misconfigured('model is not available (fal serves image models only)');
    },

    async generateImage(req: ImageRequest): Promise<ImageOutput> {
      const { submitPath, queuePath } = parseApp(req.model);
      const base = baseUrl(req.model, DEFAULT_BASE_URL);
      const origin = new URL(base).origin;
      const auth = authOf(req.model);
      const images = req.model.supports_image_input ? req.images : [];
      // `upstream.params` merged last; a null value removes one of Kiln's defaults.
      const input = withParams(
        {
          prompt: imagePrompt(req.prompt, req.textInputs),
          image_size: imageSize(req.model, req.aspectRatio),
          num_images: 1,
          ...(images.length === 1 ? { image_url: dataUrl(images[0]!) } : {}),
          ...(images.length > 1 ? { image_urls: images.map(dataUrl) } : {}),
        },
        req.model.upstream?.params,
      );
      const interval = pollInterval(req.model);

      return runUpstreamJob({ signal: req.signal, timeoutMs }, async (job) => {
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
        const statusUrl = onOrigin(s?.status_url, origin) ?? `${root}/status`;
        const responseUrl = onOrigin(s?.response_url, origin) ?? root;
        const cancelUrl = onOrigin(s?.cancel_url, origin) ?? `${root}/cancel`;
        job.cancelWith(() => bestEffort({ method: 'PUT', url: cancelUrl, headers: { accept: 'application/json', ...auth } }));

        for (;;) {
          const { json } = await requestJson({ method: 'GET', url: statusUrl, headers: { accept: 'application/json', ...auth }, signal: job.signal }, options);
          const status = (json as { status?: unknown } | null)?.status;
          if (status === 'COMPLETED') break;
          if (status !== 'IN_QUEUE' && status !== 'IN_PROGRESS') throw badResponse('upstream provider returned an unknown request status');
          await sleep(interval, job.signal);
        }
        // COMPLETED: the request has ended upstream, whatever its result, after fal's own retries
        // (up to 10, for server errors, timeouts and runner crashes). Its result answers with the
        // app's status: an error there is final — it fails the job at once, is neither fetched
        // again nor submitted again, and keeps fal's error_type. Only a network error on the
        // fetch is retried, by the fetch.
        job.completed();
        const { json } = await requestJson(
          { method: 'GET', url: responseUrl, headers: { accept: 'application/json', ...auth }, signal: job.signal, outcome: true },
          options,
        );
        const out = json as { images?: Array<{ url?: unknown }>; image?: { url?: unknown }; has_nsfw_concepts?: unknown } | null;
        const url = Array.isArray(out?.images) ? out.images[0]?.url : out?.image?.url;
        if (typeof url !== 'string' || url === '') throw badResponse('upstream provider returned no image');
        if (Array.isArray(out?.has_nsfw_concepts) && out.has_nsfw_concepts[0] === true) {
          // The safety checker blanks the image: there is nothing to deliver (or to charge for).
          throw rejected('upstream model declined the request (safety checker)');
        }
        const data = await jobImage(url, origin, options, job);
        return { ...(await toImageOutput(data, req.aspectRatio)), providerRequestId: id };
      });
    },
  };
}
