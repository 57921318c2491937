// A real Replicate predictions-API server on loopback for adapter tests: create (official models
// by name, or by version), `Prefer: wait=N` held open, GET the prediction (starting → processing →
// succeeded | failed), cancel — `Authorization: Bearer …` checked, every request recorded, and
// scriptable failures (429, 5xx, malformed bodies, hangs) that pre-empt the protocol.

import { randomUUID } from 'node:crypto';
import { png, startLoopbackPeer, type LoopbackPeer, type PeerReply, type PeerRequest } from './_peer.ts';

export { png, type PeerReply, type PeerRequest } from './_peer.ts';

/** How one prediction behaves, decided from its create request. */
export interface ReplicatePlan {
  /** GETs answered `starting` after the create (which itself answers `starting`). Default 1. */
  starting?: number;
  /** Then GETs answered `processing`. Default 1. */
  processing?: number;
  /** Final state. Default succeeded with one PNG URL in an array. */
  final?: { status: 'succeeded'; output?: (p: Prediction, origin: string) => unknown | Promise<unknown>; /** null: no metrics. Default 1.25. */ predictTime?: number | null }
    | { status: 'failed'; error: string }
    | { status: 'canceled' | 'aborted' };
  /** With `Prefer: wait`: the prediction finishes while the create is held open, after this long. */
  syncMs?: number;
  /** Overrides merged into the create answer (e.g. urls elsewhere). */
  create?: Record<string, unknown>;
  /** The prediction's `logs` so far (by its polls); default empty. */
  logs?: (p: Prediction) => string;
}

export interface Prediction {
  id: string;
  /** The create path: /v1/models/{owner}/{name}/predictions or /v1/predictions. */
  createdVia: string;
  model: string;
  version: string;
  input: any;
  plan: ReplicatePlan;
  polls: number;
  /** Every status the peer answered (create included), in order. */
  statuses: string[];
  status: string;
  canceled: boolean;
  output: unknown;
  error: string | null;
  predictTime: number | null;
}

export interface ReplicatePeer extends LoopbackPeer {
  /** API base for a catalog entry's `upstream.baseUrl` (ends in /v1). */
  url: string;
  predictions: Map<string, Prediction>;
  plan(fn: ((create: PeerRequest) => ReplicatePlan | undefined) | null): void;
}

const RATIOS: Record<string, [number, number]> = {
  '1:1': [1024, 1024], '16:9': [1344, 768], '9:16': [768, 1344], '4:3': [1184, 880], '3:4': [880, 1184],
  '3:2': [1216, 832], '2:3': [832, 1216],
};

const problem = (status: number, title: string, detail: string): PeerReply => ({
  status,
  headers: { 'content-type': 'application/problem+json' },
  json: { type: `https://replicate.com/docs/errors/${status}`, title, detail, status },
});

export async function startReplicatePeer(opts: { token: string }): Promise<ReplicatePeer> {
  const predictions = new Map<string, Prediction>();
  let planner: ((create: PeerRequest) => ReplicatePlan | undefined) | null = null;
  let peer!: LoopbackPeer;

  function view(p: Prediction, origin: string) {
    const get = `${origin}/v1/predictions/${p.id}`;
    const done = ['succeeded', 'failed', 'canceled', 'aborted'].includes(p.status);
    return {
      id: p.id, model: p.model, version: p.version, input: p.input, logs: p.plan.logs?.(p) ?? '', data_removed: false, source: 'api',
      status: p.status, output: p.status === 'succeeded' ? p.output : null, error: p.status === 'failed' ? p.error : null,
      created_at: '2026-01-01T00:00:00.000Z',
      ...(p.status !== 'starting' ? { started_at: '2026-01-01T00:00:01.000Z' } : {}),
      ...(done ? { completed_at: '2026-01-01T00:00:03.000Z' } : {}),
      ...(p.status === 'succeeded' && p.predictTime !== null ? { metrics: { predict_time: p.predictTime, total_time: p.predictTime + 0.5 } } : {}),
      urls: { get, cancel: `${get}/cancel`, stream: `${origin}/v1/stream/${p.id}`, web: `https://replicate.com/p/${p.id}` },
    };
  }

  /** Moves a prediction to its planned final state (output made now). */
  async function finish(p: Prediction, origin: string): Promise<void> {
    const final = p.plan.final ?? { status: 'succeeded' as const };
    p.status = final.status;
    if (final.status === 'failed') p.error = final.error;
    if (final.status === 'succeeded') {
      p.predictTime = final.predictTime === undefined ? 1.25 : final.predictTime;
      if (final.output) {
        p.output = await final.output(p, origin);
      } else {
        const [w, h] = RATIOS[p.input.aspect_ratio] ?? [1024, 1024];
        p.output = [peer.file(`${p.id}.png`, await png(w, h, '#cc6633'), 'image/png')];
      }
    }
  }

  async function route(req: PeerRequest, origin: string): Promise<PeerReply> {
    if (req.headers.authorization !== `Bearer ${opts.token}`) return problem(401, 'Unauthenticated', 'You did not pass a valid authentication token');
    const parts = req.path.split('/').filter(Boolean);
    if (parts[0] !== 'v1') return problem(404, 'Not found', 'The requested resource could not be found.');
    const isCreate = req.method === 'POST' && (
      (parts.length === 2 && parts[1] === 'predictions') ||
      (parts.length === 5 && parts[1] === 'models' && parts[4] === 'predictions')
    );
    if (isCreate) {
      const body = req.json as { version?: unknown; input?: unknown } | null;
      if (!body || typeof body.input !== 'object' || body.input === null) return problem(422, 'Input validation failed', 'input is required');
      if (parts.length === 2 && typeof body.version !== 'string') return problem(422, 'Invalid version or not permitted', 'version is required');
      if (parts.length === 5 && body.version !== undefined) return problem(422, 'Input validation failed', 'version is not allowed here');
      const plan = planner?.(req) ?? {};
      const p: Prediction = {
        id: randomUUID().replace(/-/g, '').slice(0, 26), createdVia: req.path,
        model: parts.length === 5 ? `${parts[2]}/${parts[3]}` : 'owner/versioned',
        version: parts.length === 5 ? 'hidden' : (body.version as string), input: body.input, plan,
        polls: 0, statuses: [], status: 'starting', canceled: false, output: null, error: null, predictTime: null,
      };
      predictions.set(p.id, p);
      const wait = /^wait(?:=(\d+))?$/.exec(String(req.headers.prefer ?? ''));
      let delayMs = 0;
      if (wait && plan.syncMs !== undefined && plan.syncMs <= Number(wait[1] ?? 60) * 1000) {
        delayMs = plan.syncMs;
        await finish(p, origin);
      }
      p.statuses.push(p.status);
      return { status: 201, delayMs, headers: { location: `${origin}/v1/predictions/${p.id}` }, json: { ...view(p, origin), ...plan.create } };
    }
    if (parts[1] !== 'predictions' || !parts[2]) return problem(404, 'Not found', 'The requested resource could not be found.');
    const p = predictions.get(parts[2]);
    if (!p) return problem(404, 'Not found', 'The requested resource could not be found.');
    if (parts.length === 4 && parts[3] === 'cancel') {
      if (req.method !== 'POST') return problem(405, 'Method not allowed', 'Use POST');
      if (p.status === 'starting' || p.status === 'processing') {
        p.status = 'canceled';
        p.canceled = true;
      }
      return { json: view(p, origin) };
    }
    if (parts.length !== 3 || req.method !== 'GET') return problem(405, 'Method not allowed', 'Use GET');
    if (p.status === 'starting' || p.status === 'processing') {
      p.polls++;
      const starting = p.plan.starting ?? 1, processing = p.plan.processing ?? 1;
      if (p.polls <= starting) p.status = 'starting';
      else if (p.polls <= starting + processing) p.status = 'processing';
      else await finish(p, origin);
    }
    p.statuses.push(p.status);
    return { json: view(p, origin) };
  }

  peer = await startLoopbackPeer(route);
  return {
    ...peer,
    url: `${peer.origin}/v1`,
    predictions,
    plan(fn) {
      planner = fn;
    },
  };
}
