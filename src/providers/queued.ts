// The skeleton of a queued image API (fal's queue, Replicate's predictions): submit the request,
// poll its status until it ends, take its result and download the image, all under one deadline
// (http.ts runUpstreamJob); the upstream request is cancelled when the Kiln job is cancelled, times
// out or is abandoned. Each adapter brings its protocol: what the catalog entry names upstream,
// the request body, the submit call, what a status answer means and where the result is.

import type { CatalogModel } from '../billing/catalog.ts';
import { bestEffort, requestJson, runUpstreamJob, type UpstreamJob } from './http.ts';
import { toImageOutput } from './images.ts';
import { sleep } from './sleep.ts';
import type { ImageInputData, ImageOutput, ImageRequest, Provider, TextOutput } from './types.ts';
import { authHeaders, baseUrl, entryOptions, jobImage, misconfigured, pollInterval, withParams, type AdapterOptions } from './upstream.ts';

/** What a protocol's calls are made with: the base URL, its origin (the only one the key goes to), the key's header, the job. */
export interface QueuedCall {
  base: string;
  origin: string;
  auth: Record<string, string>;
  job: UpstreamJob;
  options: AdapterOptions;
}

/** The upstream's answer to the submit. URLs it returns are taken only on `origin` (http.ts onOrigin). */
export interface Submission {
  /** The upstream request's id (the output's providerRequestId). */
  id: string;
  /** Where its status is read (GET). */
  statusUrl: string;
  /** How it is cancelled while it runs upstream. */
  cancel: { method: 'PUT' | 'POST'; url: string };
  /** Where its result is fetched, when that is a call of its own (fal). */
  resultUrl?: string;
  /**
   * A status answer the submit itself gave (Replicate's prediction), checked before the first
   * sleep; without one the status is read at once (fal).
   */
  status?: { answer: unknown };
}

export interface QueuedProtocol<T> {
  /** The adapter's name, in the refusal of a text request. */
  name: string;
  defaultBaseUrl: string;
  /** The key's header and scheme. */
  auth: { header: string; scheme: 'Bearer' | 'Key' };
  /** What the entry's `upstream` names (a `misconfigured` error when it is malformed), before anything else. */
  target(model: CatalogModel): T;
  /** Kiln's body (the prompt, the size, the image inputs of a model that takes them), before `upstream.params`. */
  input(req: ImageRequest, images: ImageInputData[]): Record<string, unknown>;
  submit(call: QueuedCall, target: T, input: Record<string, unknown>): Promise<Submission>;
  /**
   * One status answer: false to poll again after the interval, true once the request has ended
   * well (the job is then completed: nothing to cancel, nothing retried by a new submit); a throw
   * when it ended otherwise or the answer is not understood.
   */
  ended(answer: unknown, job: UpstreamJob): boolean;
  /**
   * What a status answer tells a watching client (queue position, the last log line, a
   * percentage), or null for nothing. Only asked while the request streams to a sink.
   */
  progress?(answer: unknown): Progress | null;
  /** The status URL to poll while the request streams to a sink (fal asks for its logs there). */
  watchedStatusUrl?(statusUrl: string): string;
  /** The image URL of the ended request, and what else its output reports (billed run time). */
  result(call: QueuedCall, answer: unknown, submission: Submission): Promise<{ url: string; extra?: Pick<ImageOutput, 'billedSeconds'> }>;
}

/** A Provider of image models over a queued protocol. */
export function createQueuedProvider<T>(protocol: QueuedProtocol<T>, options: AdapterOptions): Provider {
  const authOf = authHeaders(options, protocol.auth.header, protocol.auth.scheme);

  return {
    async generateText(): Promise<TextOutput> {
      throw misconfigured(`model is not available (${protocol.name} serves image models only)`);
    },

    async generateImage(req: ImageRequest): Promise<ImageOutput> {
      const target = protocol.target(req.model);
      const base = baseUrl(req.model, protocol.defaultBaseUrl);
      const origin = new URL(base).origin;
      const auth = authOf(req.model);
      const images = req.model.supports_image_input ? req.images : [];
      // `upstream.params` merged last; a null value removes one of Kiln's defaults.
      const input = withParams(protocol.input(req, images), req.model.upstream?.params);
      const interval = pollInterval(req.model);

      const timeoutMs = entryOptions(options, req.model).timeoutMs ?? 120_000;
      return runUpstreamJob({ signal: req.signal, timeoutMs }, async (job) => {
        const call: QueuedCall = { base, origin, auth, job, options };
        const submission = await protocol.submit(call, target, input);
        const { method, url: cancelUrl } = submission.cancel;
        job.cancelWith(() => bestEffort({ method, url: cancelUrl, headers: { accept: 'application/json', ...auth } }));

        const sink = req.sink ?? null;
        const statusUrl = sink && protocol.watchedStatusUrl ? protocol.watchedStatusUrl(submission.statusUrl) : submission.statusUrl;
        const poll = async () => (await requestStatus(call, statusUrl)).json;
        let reported = '';
        const report = (answer: unknown) => {
          const p = sink && protocol.progress ? protocol.progress(answer) : null;
          const key = p ? JSON.stringify([p.percent, p.message]) : '';
          if (!p || key === reported) return;
          reported = key;
          sink!.progress(p.percent, p.message);
        };
        let answer = submission.status ? submission.status.answer : await poll();
        while (!protocol.ended(answer, job)) {
          report(answer);
          await sleep(interval, job.signal);
          answer = await poll();
        }
        job.completed();

        const { url, extra } = await protocol.result(call, answer, submission);
        const data = await jobImage(url, origin, options, job);
        return { ...(await toImageOutput(data, req.aspectRatio)), providerRequestId: submission.id, ...extra };
      });
    },
  };
}

/** One status read. */
function requestStatus(call: QueuedCall, url: string) {
  return requestJson({ method: 'GET', url, headers: { accept: 'application/json', ...call.auth }, signal: call.job.signal }, call.options);
}

/** Queue status for a client: a percentage (0–100) and/or a short message. */
export interface Progress {
  percent: number | null;
  message: string | null;
}

const MESSAGE_CHARS = 200;

/**
 * Upstream free text made fit for a client: control characters removed (a tqdm line's carriage
 * returns and colour codes' ESC included), whitespace collapsed, at most 200 characters; null
 * when nothing is left.
 */
export function progressMessage(text: unknown): string | null {
  if (typeof text !== 'string') return null;
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').replace(/\s+/g, ' ').trim();
  if (clean === '') return null;
  const chars = [...clean];
  return chars.length > MESSAGE_CHARS ? `${chars.slice(0, MESSAGE_CHARS - 1).join('')}…` : clean;
}

/** The last line of a log that holds something (lines end in LF, CRLF or a tqdm redraw's CR). */
export function lastLogLine(log: unknown): string | null {
  if (typeof log !== 'string') return null;
  const lines = log.split(/\r\n|\r|\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = progressMessage(lines[i]);
    if (m !== null) return m;
  }
  return null;
}

/** The last percentage in a text (`45%|███` as tqdm prints it, or `45%`), 0–100, else null. */
export function lastPercent(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  let found: number | null = null;
  for (const m of text.matchAll(/(?<![\d.])(\d{1,3}(?:\.\d+)?)\s?%/g)) {
    const n = Number(m[1]);
    if (n >= 0 && n <= 100) found = Math.round(n);
  }
  return found;
}
