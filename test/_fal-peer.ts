// A real fal queue-API server on loopback for adapter tests: submit to an app, poll the request's
// status (IN_QUEUE with queue_position → IN_PROGRESS → COMPLETED), fetch the result, cancel — with
// fal's URL rules (status/result/cancel drop the app's sub-path), `Authorization: Key …` checked,
// every request recorded, and scriptable failures (429, 5xx, malformed bodies, hangs) that pre-empt
// the protocol.

import { randomUUID } from 'node:crypto';
import { png, startLoopbackPeer, type LoopbackPeer, type PeerReply, type PeerRequest } from './_peer.ts';

export { png, type PeerReply, type PeerRequest } from './_peer.ts';

/** How one submitted request behaves, decided from its submit. */
export interface FalPlan {
  /** Status polls answered IN_QUEUE (queue_position counting down to 0). Default 1. */
  queued?: number;
  /** Then polls answered IN_PROGRESS. Default 1. */
  running?: number;
  /** Instead of counting polls: the request completes this many ms after its submit (IN_PROGRESS until then). */
  runMs?: number;
  /** The result's reply; default: `images[0].url` → a PNG of the requested image_size served by the peer. */
  result?: (job: FalJob) => PeerReply | Promise<PeerReply>;
  /** Overrides merged into the submit answer (e.g. a status_url elsewhere). */
  submit?: Record<string, unknown>;
  /** The logs an IN_PROGRESS status carries when asked for (`logs=1`), by poll; default none. */
  logs?: (job: FalJob) => Array<{ message: string; level?: string }>;
}

export interface FalJob {
  id: string;
  /** The whole app id submitted to, e.g. fal-ai/flux/schnell. */
  app: string;
  /** owner/app (namespace kept): where status, result and cancel live. */
  queuePath: string;
  input: any;
  plan: FalPlan;
  polls: number;
  /** Every status the peer answered, in order. */
  statuses: string[];
  canceled: boolean;
  resultFetched: boolean;
  submittedAt: number;
  /** When the request completed upstream (Date.now()); null while it runs. */
  completedAt: number | null;
}

export interface FalPeer extends LoopbackPeer {
  /** The queue base to put in a catalog entry's `upstream.baseUrl`. */
  url: string;
  jobs: Map<string, FalJob>;
  plan(fn: ((submit: PeerRequest) => FalPlan | undefined) | null): void;
}

const PRESETS: Record<string, [number, number]> = {
  square_hd: [1024, 1024], square: [512, 512],
  landscape_16_9: [1024, 576], portrait_16_9: [576, 1024],
  landscape_4_3: [1024, 768], portrait_4_3: [768, 1024],
};

function sizeOf(imageSize: unknown): [number, number] {
  if (typeof imageSize === 'string' && PRESETS[imageSize]) return PRESETS[imageSize]!;
  const s = imageSize as { width?: unknown; height?: unknown } | null;
  if (s && typeof s.width === 'number' && typeof s.height === 'number') return [s.width, s.height];
  return [1024, 768]; // fal's default for FLUX apps: landscape_4_3
}

const NAMESPACES = new Set(['workflows', 'comfy']);

/** Starts a fal queue peer; requests must carry `Authorization: Key {key}`. */
export async function startFalPeer(opts: { key: string }): Promise<FalPeer> {
  const jobs = new Map<string, FalJob>();
  let planner: ((submit: PeerRequest) => FalPlan | undefined) | null = null;
  let peer!: LoopbackPeer;
  const notFound: PeerReply = { status: 404, json: { detail: 'Not Found' } };

  const urls = (origin: string, job: FalJob) => {
    const root = `${origin}/${job.queuePath}/requests/${job.id}`;
    return { request_id: job.id, response_url: root, status_url: `${root}/status`, cancel_url: `${root}/cancel` };
  };

  async function route(req: PeerRequest, origin: string): Promise<PeerReply> {
    if (req.headers.authorization !== `Key ${opts.key}`) return { status: 401, json: { detail: 'Unauthorized' } };
    const parts = req.path.split('/').filter(Boolean);
    const at = parts.indexOf('requests');
    if (at === -1) {
      // Submit: POST {base}/{owner}/{app}[/{path}]
      if (req.method !== 'POST') return { status: 405, json: { detail: 'Method Not Allowed' } };
      const head = NAMESPACES.has(parts[0] ?? '') ? 3 : 2;
      if (parts.length < head) return notFound;
      if (req.json === null || typeof req.json !== 'object') return { status: 422, json: { detail: [{ loc: ['body'], msg: 'Input should be an object', type: 'model_attributes_type' }] } };
      const plan = planner?.(req) ?? {};
      const job: FalJob = {
        id: randomUUID(), app: parts.join('/'), queuePath: parts.slice(0, head).join('/'), input: req.json, plan,
        polls: 0, statuses: [], canceled: false, resultFetched: false, submittedAt: Date.now(), completedAt: null,
      };
      jobs.set(job.id, job);
      return { json: { status: 'IN_QUEUE', queue_position: plan.queued ?? 1, ...urls(origin, job), ...plan.submit } };
    }
    // Status, result and cancel live under owner/app only: a sub-path here is not found.
    const job = jobs.get(parts[at + 1] ?? '');
    if (!job || parts.slice(0, at).join('/') !== job.queuePath) return notFound;
    const tail = parts.slice(at + 2).join('/');
    const queued = job.plan.queued ?? 1, running = job.plan.running ?? 1;
    const runMs = job.plan.runMs;
    const completed = () => {
      if (job.completedAt !== null) return true;
      if (runMs !== undefined ? Date.now() < job.submittedAt + runMs : job.polls <= queued + running) return false;
      job.completedAt = runMs !== undefined ? job.submittedAt + runMs : Date.now();
      return true;
    };
    if (tail === 'status') {
      if (req.method !== 'GET') return { status: 405, json: { detail: 'Method Not Allowed' } };
      job.polls++;
      const status = job.canceled || completed() ? 'COMPLETED' : runMs === undefined && job.polls <= queued ? 'IN_QUEUE' : 'IN_PROGRESS';
      job.statuses.push(status);
      const base = { status, ...urls(origin, job) };
      if (status === 'IN_QUEUE') return { status: 202, json: { ...base, queue_position: queued - job.polls } };
      if (status === 'IN_PROGRESS') {
        const logs = req.query.get('logs') === '1'
          ? (job.plan.logs?.(job) ?? []).map((l, i) => ({ message: l.message, level: l.level ?? 'INFO', source: 'user', timestamp: new Date(job.submittedAt + i).toISOString() }))
          : null;
        return { status: 202, json: { ...base, logs } };
      }
      return { status: 200, json: { ...base, logs: null, metrics: { inference_time: 0.42 } } };
    }
    if (tail === 'cancel') {
      if (req.method !== 'PUT') return { status: 405, json: { detail: 'Method Not Allowed' } };
      if (completed()) return { status: 400, json: { status: 'ALREADY_COMPLETED' } };
      job.canceled = true;
      return { status: 202, json: { status: 'CANCELLATION_REQUESTED' } };
    }
    if (tail === '') {
      if (req.method !== 'GET') return { status: 405, json: { detail: 'Method Not Allowed' } };
      if (job.canceled) return { status: 400, json: { detail: 'Request was cancelled', error_type: 'request_cancelled' } };
      if (!completed()) return { status: 400, json: { detail: 'Request is still in progress' } };
      job.resultFetched = true;
      if (job.plan.result) return job.plan.result(job);
      const [w, h] = sizeOf(job.input.image_size);
      const url = peer.file(`${job.id}.png`, await png(w, h), 'image/png');
      return {
        headers: { 'x-fal-request-id': job.id },
        json: {
          images: [{ url, width: w, height: h, content_type: 'image/png' }],
          timings: { inference: 0.42 }, seed: 42, has_nsfw_concepts: [false], prompt: job.input.prompt,
        },
      };
    }
    return notFound;
  }

  peer = await startLoopbackPeer(route);
  return {
    ...peer,
    url: peer.origin,
    jobs,
    plan(fn) {
      planner = fn;
    },
  };
}
