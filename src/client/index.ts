// The typed Kiln client (`import { createKilnClient } from 'kiln/client'`): every endpoint as a
// typed call over openapi-fetch, with the retries users expect and never a double charge. Runs in
// Node ≥ 20 and in browsers: nothing in src/client/ imports from `node:` (a test checks).

import createClient from 'openapi-fetch';
import { KilnError } from './errors.ts';
import { follow, type SseMessage, type WatchOptions } from './events.ts';
import { jsonlBody, readJsonLines } from './jsonl.ts';
import { retryingFetch, retryOptions, type RetryOptions } from './retry.ts';
import type { components, operations, paths } from './schema.ts';

export { KilnError } from './errors.ts';
export type { RetryOptions } from './retry.ts';
export type { WatchOptions } from './events.ts';
export type { components, operations, paths } from './schema.ts';

type Schemas = components['schemas'];
export type GenerationRequest = Schemas['GenerationRequest'];
export type GenerationAccepted = Schemas['GenerationAccepted'];
export type Generation = Schemas['GenerationStatus'];
export type Model = Schemas['Model'];
export type Usage = Schemas['Usage'];
export type Me = Schemas['Me'];
export type DailyUsage = Schemas['DailyUsage'];
export type DailyUsageDay = Schemas['DailyUsageDay'];
export type GenerationList = Schemas['GenerationList'];
export type ImageTransformRequest = Schemas['ImageTransformRequest'];
export type ImageTransformResult = Schemas['ImageTransformResult'];
export type WorkflowSummary = Schemas['WorkflowSummary'];
export type Workflow = Schemas['Workflow'];
export type WorkflowGraph = Schemas['WorkflowGraph'];
export type WorkflowNode = Schemas['WorkflowNode'];
export type WorkflowEdge = Schemas['WorkflowEdge'];
export type SaveWorkflowRequest = Schemas['SaveWorkflowRequest'];
/** One problem of a refused save (`KilnError.details`): a JSON pointer into the body and what is wrong there. */
export type EndUserBudget = Schemas['EndUserBudget'];
export type SetEndUserBudgetRequest = Schemas['SetEndUserBudgetRequest'];
export type ErrorDetail = NonNullable<Schemas['Error']['error']['details']>[number];
export type RunAccepted = Schemas['RunAccepted'];
export type WorkflowRun = Schemas['WorkflowRun'];
export type WorkflowRunSummary = Schemas['WorkflowRunSummary'];
export type WorkflowRunResult = Schemas['WorkflowRunResult'];
export type RunProgress = WorkflowRun['progress'];
export type WorkflowRunGraph = Schemas['WorkflowRunGraph'];
/** `data` of a `delta` event: the next piece of output text and the characters (code points) before it. */
export type StreamDelta = Schemas['StreamDelta'];
/** `data` of a `preview` event: a partial image's signed URL. */
export type StreamPreview = Schemas['StreamPreview'];
/** `data` of a generation's `progress` event: the provider's percentage and message, each or both null. */
export type StreamProgress = Schemas['StreamProgress'];
/** `data` of a `reset` event: the execution that starts over (drop the text shown). */
export type StreamReset = Schemas['StreamReset'];
export type OutputDelta = Schemas['OutputDelta'];
export type OutputPreview = Schemas['OutputPreview'];
export type OutputProgress = Schemas['OutputProgress'];
export type OutputReset = Schemas['OutputReset'];
export type ListQuery = NonNullable<operations['listWorkflows']['parameters']['query']>;
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
export type WebhookEndpointWithSecret = Schemas['WebhookEndpointWithSecret'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type EventMessage = Schemas['EventMessage'];
export type CreateWebhookRequest = NonNullable<operations['createWebhook']['requestBody']>['content']['application/json'];
export type UpdateWebhookRequest = NonNullable<operations['updateWebhook']['requestBody']>['content']['application/json'];
export type DeliveryListQuery = NonNullable<operations['listWebhookDeliveries']['parameters']['query']>;
export type RunListQuery = NonNullable<operations['listWorkflowRuns']['parameters']['query']>;
export type RunRequest = components['schemas']['RunRequest'];
export type GenerationListQuery = NonNullable<operations['listGenerations']['parameters']['query']>;
export type DailyUsageQuery = NonNullable<operations['getDailyUsage']['parameters']['query']>;
export type DailyUsageGroup = Schemas['DailyUsageGroup'];
export type EndUser = Schemas['EndUser'];
export type EndUserList = Schemas['EndUserList'];
export type EndUserListQuery = NonNullable<operations['listEndUsers']['parameters']['query']>;
export type Key = Schemas['Key'];
export type KeyWithSecret = Schemas['KeyWithSecret'];
export type CreateKeyRequest = NonNullable<operations['createKey']['requestBody']>['content']['application/json'];
export type AuditEntry = Schemas['AuditEntry'];
/**
 * A list query whose `limit` the document types as an integer; the client still takes the numeric
 * string it was typed with before (`'25'`): both are sent as the same query string.
 */
type WithLimit<Q> = Omit<Q, 'limit'> & { limit?: number | `${number}` };
export type AuditQuery = WithLimit<NonNullable<operations['listAudit']['parameters']['query']>>;
export type AdminAccount = Schemas['AdminAccount'];
export type AdminAccountDetail = Schemas['AdminAccountDetail'];
export type AdminWorkspace = Schemas['AdminWorkspace'];
export type AdminWorkspaceDetail = Schemas['AdminWorkspaceDetail'];
export type AdminModel = Schemas['AdminModel'];
export type AdminHealth = Schemas['AdminHealth'];
export type AdminPageQuery = WithLimit<NonNullable<operations['adminListAccounts']['parameters']['query']>>;
export type AdminUpdateAccountRequest = NonNullable<operations['adminUpdateAccount']['requestBody']>['content']['application/json'];
/** A batch (`POST /batches`): its status, `requestCounts`, times and what its completed lines were charged. */
export type Batch = Schemas['Batch'];
export type BatchList = Schemas['BatchList'];
/** One line of a batch's input (OpenAI's batch input format, with a `POST /generations` body). */
export type BatchInputLine = Schemas['BatchInputLine'];
/** One line of `GET /batches/{id}/results`: `response` for a completed line, `error` for the rest. */
export type BatchResultLine = Schemas['BatchResultLine'];
export type BatchListQuery = NonNullable<operations['listBatches']['parameters']['query']>;

export interface KilnClientOptions {
  /** The service's URL, e.g. `http://127.0.0.1:8787`; a trailing `/api/v1` is accepted too. */
  baseUrl: string;
  /** An API key (`kiln_live_…`), sent as `Authorization: Bearer`. */
  apiKey?: string;
  /**
   * Instead of a key: the console's SSO session cookie, which a browser page served by Kiln sends
   * by itself (same origin); no Authorization header is sent. Not for programs: they use keys.
   */
  session?: boolean;
  /** A fetch implementation (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
  retry?: Partial<RetryOptions>;
}

export interface CallOptions {
  signal?: AbortSignal;
}
export interface WaitOptions extends CallOptions {
  /** `Prefer: wait=N` (1–60): the server answers as soon as the job settles, or after N seconds. */
  wait?: number;
}
export interface CreateOptions extends WaitOptions {
  /** Defaults to a fresh UUID per call, the same across that call's retries. */
  idempotencyKey?: string;
}
export interface SaveOptions extends CallOptions {
  /** Save (or delete) only over this version (`If-Match: "<version>"`); another one → KilnError 412 `precondition_failed`. Omitted: the last write wins. */
  version?: number;
}
export interface RunOptions extends CallOptions {
  /** Called with every status the client sees, the first (`pending`) included. */
  onStatus?: (generation: Generation | GenerationAccepted) => void;
  idempotencyKey?: string;
  /** Seconds each request waits on the server (default 30). */
  wait?: number;
}

/**
 * An event of `generations.watch`: one `status` event per status the generation reaches (`data`
 * = the GET body); the one with `terminal: true` (completed or failed) is the last.
 */
export interface GenerationEvent {
  /** The event id (what `lastEventId` resumes after). */
  id: string;
  event: 'status';
  data: Generation;
  terminal: boolean;
}

/**
 * An event of `generations.stream`: an item of the OpenAPI document's `GenerationStreamItem`
 * (`status` with the GET body; while processing, `delta`, `preview`, `progress` and `reset`),
 * narrowed by `event`, plus `terminal` — true on the completed or failed `status`, the last event.
 */
export type GenerationStreamEvent = Schemas['GenerationStreamItem'] & { terminal: boolean };

/**
 * What `generations.streamText` yields: the text of the current execution so far (`text`) and the
 * piece just added (`delta`). `reset: true` means the execution started over: replace what was
 * shown with `text` (then empty) instead of appending.
 */
export interface TextUpdate {
  delta: string;
  text: string;
  reset: boolean;
  /** The execution the text belongs to: 1, then 2, … after each reset (as the `reset` event says). */
  attempt: number;
}

/**
 * An event of `runs.stream`: an item of `WorkflowRunStreamItem` plus `terminal`. Besides
 * `runs.watch`'s events, each output in flight sends `delta`, `preview`, `reset` and
 * `output.progress` events whose `data` names its `promptNodeId` and `outputNodeId` (`progress`
 * stays the run's `{ total, completed }`).
 */
export type RunStreamEvent = Schemas['WorkflowRunStreamItem'] & { terminal: boolean };

/**
 * An event of `runs.watch`: `status` while the run is pending or running (`data` = the GET
 * body); per settled output, `output` (its `results` entry) then `progress`; last, `status` with
 * the completed or failed run and `terminal: true`.
 */
export type RunEvent =
  | { id: string; event: 'status'; data: WorkflowRun; terminal: boolean }
  | { id: string; event: 'output'; data: WorkflowRunResult; terminal: false }
  | { id: string; event: 'progress'; data: RunProgress; terminal: false };

/**
 * An event of `batches.watch`: `progress` (`data` = the batch) when the stream opens and as lines
 * end; last, `status` with the batch once it has ended (`completed`, `canceled` or `expired`) and
 * `terminal: true`. Event ids count the lines ended (the terminal one's is total + 1).
 */
export type BatchEvent =
  | { id: string; event: 'progress'; data: Batch; terminal: false }
  | { id: string; event: 'status'; data: Batch; terminal: true };

/**
 * What `batches.create` takes: line objects (sent as JSON Lines, one per line), or a JSON Lines
 * file as it is — text, a Blob (a `File` from an `<input>`) or bytes.
 */
export type BatchInput = readonly BatchInputLine[] | string | Blob | Uint8Array | ArrayBuffer;

export interface BatchCreateOptions extends CallOptions {
  /** Defaults to a fresh UUID per call, the same across that call's retries (the same file replays the same batch). */
  idempotencyKey?: string;
  /** The body's media type: `application/jsonl` (default) or `application/x-ndjson`. */
  contentType?: 'application/jsonl' | 'application/x-ndjson';
}

/**
 * An event of `events.watch`: `event` is its type, `data` the message a webhook receives
 * (`{ type, timestamp, data }`), `id` what `lastEventId` resumes after. The watch never ends by
 * itself.
 */
export interface ScopeEvent {
  id: string;
  event: EventMessage['type'];
  data: EventMessage;
  /** Always false: the account's stream has no last event. */
  terminal: false;
}

const API_PREFIX = '/api/v1';
const BATCH_ENDED = new Set(['completed', 'canceled', 'expired']);
const SETTLED = new Set(['completed', 'failed']);
const GENERATION_STREAM_EVENTS = new Set(['status', 'delta', 'preview', 'progress', 'reset']);
const RUN_STREAM_EVENTS = new Set(['status', 'output', 'progress', 'output.progress', 'delta', 'preview', 'reset']);
/** Counts Unicode code points, as the stream's offsets do (docs/api.md, "Waiting and live events"). */
const codePoints = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/** The API root for a service URL given with or without `/api/v1` and trailing slashes. */
export function apiRoot(baseUrl: string): string {
  let url = baseUrl.trim().replace(/\/+$/, '');
  if (url.endsWith(API_PREFIX)) url = url.slice(0, -API_PREFIX.length);
  return url + API_PREFIX;
}

/**
 * A v4 UUID. `crypto.randomUUID` exists only in secure contexts (https, localhost): a page served
 * over plain http on a LAN has `getRandomValues` alone, so the UUID is built from it there.
 */
function newKey(): string {
  const c = globalThis.crypto;
  if (typeof c.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40; // version 4
  b[8] = (b[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function createKilnClient(options: KilnClientOptions) {
  if (!options.baseUrl) throw new TypeError('createKilnClient: baseUrl is required');
  if (!options.apiKey && !options.session) throw new TypeError('createKilnClient: apiKey is required');
  const retry = retryOptions(options.retry);
  const raw = createClient<paths>({
    baseUrl: apiRoot(options.baseUrl),
    headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
    fetch: retryingFetch(options.fetch ?? ((r) => globalThis.fetch(r)), retry),
  });

  /** The body of a successful answer, or a KilnError built from the error answer. */
  async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await call;
    if (!response.ok) throw KilnError.from(response, error);
    return data as T;
  }
  const prefer = (wait?: number) => (wait ? { Prefer: `wait=${Math.round(wait)}` } : {});
  const ifMatch = (version?: number) => (version === undefined ? {} : { 'If-Match': `"${version}"` });
  /** The body of a streamed answer (events, JSON Lines), or a KilnError built from the error answer. */
  async function stream(call: Promise<{ data?: ReadableStream<Uint8Array> | unknown; error?: unknown; response: Response }>, what = 'event stream') {
    const { data, error, response } = await call;
    if (!response.ok) throw KilnError.from(response, error);
    if (!(data instanceof ReadableStream)) throw new KilnError({ status: response.status, type: 'server_error', message: `The ${what} answer had no body.`, requestId: response.headers.get('x-request-id') });
    return data;
  }
  const resume = (lastEventId: string | null) => (lastEventId === null ? {} : { 'Last-Event-ID': lastEventId });
  const eventStreamHeaders = { accept: 'text/event-stream' };

  const generations = {
    /** POST /generations: the 202 body — or, with `wait`, the settled generation when it settled in time. */
    create(body: GenerationRequest, opts: CreateOptions = {}) {
      return unwrap(raw.POST('/generations', {
        body,
        params: { header: { 'Idempotency-Key': opts.idempotencyKey ?? newKey(), ...prefer(opts.wait) } },
        signal: opts.signal,
      }));
    },
    get(id: string, opts: WaitOptions = {}) {
      return unwrap(raw.GET('/generations/{id}', { params: { path: { id }, header: prefer(opts.wait) }, signal: opts.signal }));
    },
    cancel(id: string, opts: CallOptions = {}) {
      return unwrap(raw.POST('/generations/{id}/cancel', { params: { path: { id } }, signal: opts.signal }));
    },
    /** GET /generations: one page, newest first (`nextCursor` → the next one). */
    list(query: GenerationListQuery = {}, opts: CallOptions = {}) {
      return unwrap(raw.GET('/generations', { params: { query }, signal: opts.signal }));
    },
    /** Every generation matching `query`, newest first, reading page after page as the loop asks. */
    async *all(query: Omit<GenerationListQuery, 'cursor'> = {}, opts: CallOptions = {}): AsyncGenerator<Generation, void, undefined> {
      let cursor: string | null | undefined;
      do {
        const page: GenerationList = await generations.list({ ...query, ...(cursor ? { cursor } : {}) }, opts);
        yield* page.data;
        cursor = page.nextCursor;
      } while (cursor);
    },
    /**
     * Creates a generation and resolves with it settled (`completed` or `failed`). Each request
     * waits on the server (`Prefer: wait`), so this is a few long requests, not a polling loop.
     * Aborting stops waiting; it does not cancel the job (call `cancel` for that).
     */
    async run(body: GenerationRequest, opts: RunOptions = {}): Promise<Generation> {
      const wait = opts.wait ?? 30;
      const first = await generations.create(body, { wait, signal: opts.signal, idempotencyKey: opts.idempotencyKey });
      opts.onStatus?.(first);
      let current: Generation | GenerationAccepted = first;
      let seen: string = first.status;
      while (!SETTLED.has(current.status)) {
        current = await generations.get(first.id, { wait, signal: opts.signal });
        if (current.status !== seen) {
          seen = current.status;
          opts.onStatus?.(current);
        }
      }
      return current as Generation;
    },
    /**
     * The generation's events (GET /generations/{id}/events) as an async iterator: each status it
     * reaches, the terminal one last, then the iterator ends. A dropped connection is reopened
     * with Last-Event-ID (no repeat, no gap). Breaking out of the loop or aborting `signal`
     * closes the stream; neither cancels the job.
     */
    watch(id: string, opts: WatchOptions = {}): AsyncGenerator<GenerationEvent, void, undefined> {
      return follow<GenerationEvent>({
        retry,
        options: opts,
        open: (last, signal) => stream(raw.GET('/generations/{id}/events', {
          params: { path: { id }, header: resume(last) }, headers: eventStreamHeaders, parseAs: 'stream', signal,
        })),
        toEvent(m: SseMessage) {
          if (m.event !== 'status' || m.id === null) return null;
          const data = JSON.parse(m.data) as Generation;
          return { id: m.id, event: 'status', data, terminal: SETTLED.has(data.status) };
        },
      });
    },
    /**
     * Every event of GET /generations/{id}/events as an async iterator: each `status` the
     * generation reaches and, while it processes, its output as it is written — `delta` (`{ text,
     * offset }`), `preview`, `progress` and `reset` (drop what was shown: the next deltas start at
     * offset 0). It ends after the terminal `status` (`terminal: true`). A dropped connection is
     * reopened with Last-Event-ID after the client's backoff: the stream resumes right after the
     * last event delivered, with no gap and no repeat (a delta's text included). Breaking out of
     * the loop or aborting `signal` closes the stream; neither cancels the job.
     */
    stream(id: string, opts: WatchOptions = {}): AsyncGenerator<GenerationStreamEvent, void, undefined> {
      return follow<GenerationStreamEvent>({
        retry,
        options: opts,
        open: (last, signal) => stream(raw.GET('/generations/{id}/events', {
          params: { path: { id }, header: resume(last) }, headers: eventStreamHeaders, parseAs: 'stream', signal,
        })),
        toEvent(m: SseMessage): GenerationStreamEvent | null {
          if (m.id === null || !GENERATION_STREAM_EVENTS.has(m.event)) return null;
          const data = JSON.parse(m.data);
          return { id: m.id, event: m.event, data, terminal: m.event === 'status' && SETTLED.has(data.status) } as GenerationStreamEvent;
        },
      });
    },
    /**
     * The generation's output text as it is written (from `stream`): one `TextUpdate` per delta,
     * and one with `reset: true` when the execution starts over. Resolves (`return`) with the
     * settled generation, whose `result.code` is the record (code fences the model wrote are
     * stripped there, so it may differ from the streamed text).
     */
    async *streamText(id: string, opts: WatchOptions = {}): AsyncGenerator<TextUpdate, Generation, undefined> {
      let text = '';
      let chars = 0;
      let attempt = 1;
      for await (const e of generations.stream(id, opts)) {
        if (e.event === 'reset') {
          text = '';
          chars = 0;
          attempt = e.data.attempt;
          yield { delta: '', text, reset: true, attempt };
        } else if (e.event === 'delta') {
          let piece = e.data.text;
          if (e.data.offset > chars) {
            throw new KilnError({ status: 200, type: 'server_error', message: `delta ${e.id} starts at character ${e.data.offset}, after the ${chars} received` });
          }
          // Overlapping text (never sent on a resume, but cheap to guard against): keep only what is new.
          if (e.data.offset < chars) piece = Array.from(piece).slice(chars - e.data.offset).join('');
          if (!piece) continue;
          text += piece;
          chars += codePoints(piece);
          yield { delta: piece, text, reset: false, attempt };
        } else if (e.terminal) {
          return e.data as Generation;
        }
      }
      throw new KilnError({ status: 0, type: 'network_error', message: 'the event stream ended before the generation settled' });
    },
  };

  const runs = {
    /**
     * POST /workflows/{id}/runs with an automatic Idempotency-Key: the 202 body. `endUser` and
     * `metadata` attribute the run and its outputs (sent as the body only when given).
     */
    start(workflowId: string, opts: CallOptions & { idempotencyKey?: string } & RunRequest = {}) {
      const body: RunRequest = {
        ...(opts.endUser !== undefined ? { endUser: opts.endUser } : {}),
        ...(opts.metadata !== undefined ? { metadata: opts.metadata } : {}),
      };
      return unwrap(raw.POST('/workflows/{id}/runs', {
        params: { path: { id: workflowId }, header: { 'Idempotency-Key': opts.idempotencyKey ?? newKey() } },
        ...(Object.keys(body).length ? { body } : {}),
        signal: opts.signal,
      }));
    },
    get(workflowId: string, runId: string, opts: WaitOptions = {}) {
      return unwrap(raw.GET('/workflows/{id}/runs/{runId}', {
        params: { path: { id: workflowId, runId }, header: prefer(opts.wait) },
        signal: opts.signal,
      }));
    },
    list(workflowId: string, query: RunListQuery = {}, opts: CallOptions = {}) {
      return unwrap(raw.GET('/workflows/{id}/runs', { params: { path: { id: workflowId }, query }, signal: opts.signal }));
    },
    cancel(workflowId: string, runId: string, opts: CallOptions = {}) {
      return unwrap(raw.POST('/workflows/{id}/runs/{runId}/cancel', { params: { path: { id: workflowId, runId } }, signal: opts.signal }));
    },
    /**
     * The run's events (GET /workflows/{id}/runs/{runId}/events) as an async iterator — status,
     * each output as it settles with the progress after it, and last the terminal status — that
     * ends after the terminal event. A dropped connection is reopened with Last-Event-ID, so no
     * event is missed or repeated. Breaking out of the loop or aborting `signal` closes the
     * stream; neither cancels the run.
     */
    watch(workflowId: string, runId: string, opts: WatchOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
      return follow<RunEvent>({
        retry,
        options: opts,
        open: (last, signal) => stream(raw.GET('/workflows/{id}/runs/{runId}/events', {
          params: { path: { id: workflowId, runId }, header: resume(last) }, headers: eventStreamHeaders, parseAs: 'stream', signal,
        })),
        toEvent(m: SseMessage): RunEvent | null {
          if (m.id === null) return null;
          const data = JSON.parse(m.data);
          switch (m.event) {
            case 'status': return { id: m.id, event: 'status', data, terminal: SETTLED.has((data as WorkflowRun).status) };
            case 'output': return { id: m.id, event: 'output', data, terminal: false };
            case 'progress': return { id: m.id, event: 'progress', data, terminal: false };
            default: return null;
          }
        },
      });
    },
    /**
     * Every event of the run's stream as an async iterator: `watch`'s events, plus each output in
     * flight's `delta`, `preview`, `output.progress` and `reset` events (their `data` names the output's
     * `promptNodeId` and `outputNodeId`; see `RunStreamEvent`). Ends after the terminal `status`;
     * reconnects and resumes with Last-Event-ID as `watch` does; breaking out or aborting `signal`
     * closes the stream without canceling the run.
     */
    stream(workflowId: string, runId: string, opts: WatchOptions = {}): AsyncGenerator<RunStreamEvent, void, undefined> {
      return follow<RunStreamEvent>({
        retry,
        options: opts,
        open: (last, signal) => stream(raw.GET('/workflows/{id}/runs/{runId}/events', {
          params: { path: { id: workflowId, runId }, header: resume(last) }, headers: eventStreamHeaders, parseAs: 'stream', signal,
        })),
        toEvent(m: SseMessage): RunStreamEvent | null {
          if (m.id === null || !RUN_STREAM_EVENTS.has(m.event)) return null;
          const data = JSON.parse(m.data);
          return { id: m.id, event: m.event, data, terminal: m.event === 'status' && SETTLED.has(data.status) } as RunStreamEvent;
        },
      });
    },
    /** GET /workflows/{id}/runs/{runId}/graph: the nodes and edges of the run's snapshot (immutable). */
    graph(workflowId: string, runId: string, opts: CallOptions = {}) {
      return unwrap(raw.GET('/workflows/{id}/runs/{runId}/graph', { params: { path: { id: workflowId, runId } }, signal: opts.signal }));
    },
    /** A new run of a failed run's snapshot (no Idempotency-Key on this endpoint: retried on 503 only). */
    retry(workflowId: string, runId: string, opts: CallOptions = {}) {
      return unwrap(raw.POST('/workflows/{id}/runs/{runId}/retry', { params: { path: { id: workflowId, runId } }, signal: opts.signal }));
    },
  };

  const batches = {
    /**
     * POST /batches: line objects (sent as JSON Lines, the Nth element as line N of the error
     * pointers), or a JSON Lines file as it is (a string, a Blob, bytes). Resolves with the
     * accepted batch; a refused one is a KilnError 400 whose `details` hold every problem
     * (`/lines/N/…`). Carries an automatic Idempotency-Key, so a retry never makes a second batch.
     */
    create(input: BatchInput, opts: BatchCreateOptions = {}): Promise<Batch> {
      return unwrap(raw.POST('/batches', {
        // The body is JSON Lines already: openapi-fetch must send it as it is.
        body: jsonlBody(input) as never,
        bodySerializer: (body: unknown) => body as never,
        headers: { 'content-type': opts.contentType ?? 'application/jsonl' },
        params: { header: { 'Idempotency-Key': opts.idempotencyKey ?? newKey() } },
        signal: opts.signal,
      }));
    },
    /** GET /batches: one page, newest first (`nextCursor` → the next one). */
    list(query: BatchListQuery = {}, opts: CallOptions = {}): Promise<BatchList> {
      return unwrap(raw.GET('/batches', { params: { query }, signal: opts.signal }));
    },
    /** Every batch of the account, newest first, reading page after page as the loop asks. */
    async *all(query: Omit<BatchListQuery, 'cursor'> = {}, opts: CallOptions = {}): AsyncGenerator<Batch, void, undefined> {
      let cursor: string | null | undefined;
      do {
        const page: BatchList = await batches.list({ ...query, ...(cursor ? { cursor } : {}) }, opts);
        yield* page.data;
        cursor = page.nextCursor;
      } while (cursor);
    },
    get(id: string, opts: CallOptions = {}): Promise<Batch> {
      return unwrap(raw.GET('/batches/{id}', { params: { path: { id } }, signal: opts.signal }));
    },
    /** POST /batches/{id}/cancel: the batch, `canceling` (or `canceled`); KilnError 409 once it has ended. */
    cancel(id: string, opts: CallOptions = {}): Promise<Batch> {
      return unwrap(raw.POST('/batches/{id}/cancel', { params: { path: { id } }, signal: opts.signal }));
    },
    /**
     * GET /batches/{id}/results as an async iterator of parsed lines (`BatchResultLine`), each
     * yielded as soon as it arrives: the body is read as it streams, never held whole. While the
     * batch runs it holds the lines ended so far; once it has ended, every line. Breaking out of
     * the loop or aborting `signal` closes the connection.
     */
    async *results(id: string, opts: CallOptions = {}): AsyncGenerator<BatchResultLine, void, undefined> {
      const body = await stream(raw.GET('/batches/{id}/results', {
        params: { path: { id } }, headers: { accept: 'application/jsonl' }, parseAs: 'stream', signal: opts.signal,
      }), 'results');
      yield* readJsonLines<BatchResultLine>(body, { what: `the results of batch ${id}`, signal: opts.signal });
    },
    /**
     * The batch's events (GET /batches/{id}/events) as an async iterator: `progress` with the
     * batch when the stream opens and as lines end, then the terminal `status` (`terminal: true`),
     * after which the iterator ends. A dropped connection is reopened with Last-Event-ID (no
     * repeat, no gap). Breaking out of the loop or aborting `signal` closes the stream; neither
     * cancels the batch.
     */
    watch(id: string, opts: WatchOptions = {}): AsyncGenerator<BatchEvent, void, undefined> {
      return follow<BatchEvent>({
        retry,
        options: opts,
        open: (last, signal) => stream(raw.GET('/batches/{id}/events', {
          params: { path: { id }, header: resume(last) }, headers: eventStreamHeaders, parseAs: 'stream', signal,
        })),
        toEvent(m: SseMessage): BatchEvent | null {
          if (m.id === null) return null;
          if (m.event === 'progress') return { id: m.id, event: 'progress', data: JSON.parse(m.data) as Batch, terminal: false };
          if (m.event !== 'status') return null;
          const data = JSON.parse(m.data) as Batch;
          if (!BATCH_ENDED.has(data.status)) throw new Error(`a status event with a batch ${data.status}`);
          return { id: m.id, event: 'status', data, terminal: true };
        },
      });
    },
  };

  const webhooks = {
    /** POST /webhooks: the endpoint with its `secret` (shown only here and by rotateSecret). */
    create: (body: CreateWebhookRequest, opts: CallOptions = {}) => unwrap(raw.POST('/webhooks', { body, signal: opts.signal })),
    list: (opts: CallOptions = {}) => unwrap(raw.GET('/webhooks', { signal: opts.signal })),
    get: (id: string, opts: CallOptions = {}) => unwrap(raw.GET('/webhooks/{id}', { params: { path: { id } }, signal: opts.signal })),
    update: (id: string, body: UpdateWebhookRequest, opts: CallOptions = {}) =>
      unwrap(raw.PATCH('/webhooks/{id}', { params: { path: { id } }, body, signal: opts.signal })),
    async delete(id: string, opts: CallOptions = {}): Promise<void> {
      await unwrap(raw.DELETE('/webhooks/{id}', { params: { path: { id } }, signal: opts.signal }));
    },
    rotateSecret: (id: string, opts: CallOptions = {}) => unwrap(raw.POST('/webhooks/{id}/rotate-secret', { params: { path: { id } }, signal: opts.signal })),
    /** One page of the delivery log, newest first; pass `nextCursor` as `cursor` for the next. */
    deliveries: (id: string, query: DeliveryListQuery = {}, opts: CallOptions = {}) =>
      unwrap(raw.GET('/webhooks/{id}/deliveries', { params: { path: { id }, query }, signal: opts.signal })),
    redeliver: (id: string, deliveryId: string, opts: CallOptions = {}) =>
      unwrap(raw.POST('/webhooks/{id}/deliveries/{deliveryId}/redeliver', { params: { path: { id, deliveryId } }, signal: opts.signal })),
    /** Sends again every message that failed since `since` (a Date or an ISO 8601 string). */
    recover: (id: string, since: Date | string, opts: CallOptions = {}) =>
      unwrap(raw.POST('/webhooks/{id}/recover', { params: { path: { id } }, body: { since: typeof since === 'string' ? since : since.toISOString() }, signal: opts.signal })),
    test: (id: string, opts: CallOptions = {}) => unwrap(raw.POST('/webhooks/{id}/test', { params: { path: { id } }, signal: opts.signal })),
  };

  const keys = {
    /** GET /keys: the keys of the caller's billing scope (needs the `keys` scope). */
    list: (opts: CallOptions = {}) => unwrap(raw.GET('/keys', { signal: opts.signal })),
    /** POST /keys: the key's entry plus `key`, its secret, shown only here (no Idempotency-Key: retried on 503 only). */
    create: (body: CreateKeyRequest, opts: CallOptions = {}) => unwrap(raw.POST('/keys', { body, signal: opts.signal })),
    /** GET /keys/{id}: one key with `liveSecrets` and `graceEndsAt` (403 `forbidden` for a key with a scope the caller lacks). */
    get: (id: string, opts: CallOptions = {}) => unwrap(raw.GET('/keys/{id}', { params: { path: { id } }, signal: opts.signal })),
    /** A new secret under the same id; the previous one keeps working for `graceSeconds` (default a day, at most 7 days), older ones end at once. */
    rotate: (id: string, body: { graceSeconds?: number } = {}, opts: CallOptions = {}) =>
      unwrap(raw.POST('/keys/{id}/rotate', { params: { path: { id } }, body, signal: opts.signal })),
    /** Revokes every secret of the key at once; answers the key with `revokedAt`. */
    revoke: (id: string, opts: CallOptions = {}) => unwrap(raw.DELETE('/keys/{id}', { params: { path: { id } }, signal: opts.signal })),
  };

  /** Budgets per end user: your own users, as requests name them with `endUser`. */
  const endUsers = {
    /** GET /end-users/{endUser}: the cap (null = none) and what the end user used this period (this calendar month without a cap). */
    get: (endUser: string, opts: CallOptions = {}) =>
      unwrap(raw.GET('/end-users/{endUser}', { params: { path: { endUser } }, signal: opts.signal })),
    /** PUT /end-users/{endUser}: caps the end user per UTC day or calendar month, optionally with an rpm (needs the `keys` scope). */
    set: (endUser: string, body: SetEndUserBudgetRequest, opts: CallOptions = {}) =>
      unwrap(raw.PUT('/end-users/{endUser}', { params: { path: { endUser } }, body, signal: opts.signal })),
    /** DELETE /end-users/{endUser}: removes the cap (KilnError 404 when there is none; needs the `keys` scope). */
    async remove(endUser: string, opts: CallOptions = {}): Promise<void> {
      await unwrap(raw.DELETE('/end-users/{endUser}', { params: { path: { endUser } }, signal: opts.signal }));
    },
  };

  const audit = {
    /** One page of the scope's audit log, newest first; pass `nextCursor` as `cursor` for the next. */
    list: (query: AuditQuery = {}, opts: CallOptions = {}) => unwrap(raw.GET('/audit', { params: { query: query as { limit?: number } }, signal: opts.signal })),
  };

  /** The operator's view (admins only: anyone else gets KilnError 403 `insufficient_scope`). */
  const admin = {
    accounts: {
      /** A page of accounts, most spent this period first; `q` searches emails; pass `nextCursor` as `cursor`. */
      list: (query: AdminPageQuery = {}, opts: CallOptions = {}) => unwrap(raw.GET('/admin/accounts', { params: { query: query as { limit?: number } }, signal: opts.signal })),
      get: (id: string, opts: CallOptions = {}) => unwrap(raw.GET('/admin/accounts/{id}', { params: { path: { id } }, signal: opts.signal })),
      /** Tier and/or budget (`budgetMicros: null` = unlimited). */
      update: (id: string, body: AdminUpdateAccountRequest, opts: CallOptions = {}) =>
        unwrap(raw.PATCH('/admin/accounts/{id}', { params: { path: { id } }, body, signal: opts.signal })),
      revokeKeys: (id: string, opts: CallOptions = {}) =>
        unwrap(raw.POST('/admin/accounts/{id}/revoke-keys', { params: { path: { id } }, signal: opts.signal })),
    },
    workspaces: {
      list: (query: AdminPageQuery = {}, opts: CallOptions = {}) => unwrap(raw.GET('/admin/workspaces', { params: { query: query as { limit?: number } }, signal: opts.signal })),
      get: (id: string, opts: CallOptions = {}) => unwrap(raw.GET('/admin/workspaces/{id}', { params: { path: { id } }, signal: opts.signal })),
    },
    models: {
      /** The whole catalog, disabled entries included, with upstream cost and billed price. */
      list: (opts: CallOptions = {}) => unwrap(raw.GET('/admin/models', { signal: opts.signal })),
      update: (id: string, body: { enabled: boolean }, opts: CallOptions = {}) =>
        unwrap(raw.PATCH('/admin/models/{id}', { params: { path: { id } }, body, signal: opts.signal })),
    },
    health: (opts: CallOptions = {}) => unwrap(raw.GET('/admin/health', { signal: opts.signal })),
  };

  const events = {
    /**
     * Every event of the key's scope (GET /events) as an async iterator that does not end by
     * itself: a dropped connection is reopened with Last-Event-ID (no gap, no repeat, within
     * 24 h). Break out of the loop or abort `signal` to stop.
     */
    watch(opts: WatchOptions = {}): AsyncGenerator<ScopeEvent, void, undefined> {
      return follow<ScopeEvent>({
        retry,
        options: opts,
        open: (last, signal) => stream(raw.GET('/events', { params: { header: resume(last) }, headers: eventStreamHeaders, parseAs: 'stream', signal })),
        toEvent(m: SseMessage): ScopeEvent | null {
          if (m.id === null || !m.event) return null;
          return { id: m.id, event: m.event as ScopeEvent['event'], data: JSON.parse(m.data) as EventMessage, terminal: false };
        },
      });
    },
  };

  return {
    generations,
    runs,
    batches,
    webhooks,
    keys,
    endUsers,
    audit,
    admin,
    events,
    /** GET /me: the account, scopes, workspace and admin flag of this client's key or session. */
    me: (opts: CallOptions = {}) => unwrap(raw.GET('/me', { signal: opts.signal })),
    usage: {
      get: (opts: CallOptions = {}) => unwrap(raw.GET('/usage', { signal: opts.signal })),
      /** GET /usage/daily: per UTC day and model (default: the current period). */
      daily: (query: DailyUsageQuery = {}, opts: CallOptions = {}) => unwrap(raw.GET('/usage/daily', { params: { query }, signal: opts.signal })),
      /** Every group of GET /usage/daily?groupBy= (`endUser` or `metadata.<key>`), by day then spend, reading page after page as the loop asks. */
      async *groups(query: Omit<DailyUsageQuery, 'cursor'> & { groupBy: string }, opts: CallOptions = {}): AsyncGenerator<DailyUsageGroup, void, undefined> {
        let cursor: string | null | undefined;
        do {
          const page: DailyUsage = await unwrap(raw.GET('/usage/daily', { params: { query: { ...query, ...(cursor ? { cursor } : {}) } }, signal: opts.signal }));
          yield* page.groups ?? [];
          cursor = page.next_cursor;
        } while (cursor);
      },
      /** GET /end-users: one page of the billing scope's end users by spend (default: this calendar month). */
      endUsers: (query: EndUserListQuery = {}, opts: CallOptions = {}) => unwrap(raw.GET('/end-users', { params: { query }, signal: opts.signal })),
      /** Every end user over the range, by spend, reading page after page as the loop asks. */
      async *allEndUsers(query: Omit<EndUserListQuery, 'cursor'> = {}, opts: CallOptions = {}): AsyncGenerator<EndUser, void, undefined> {
        let cursor: string | null | undefined;
        do {
          const page: EndUserList = await unwrap(raw.GET('/end-users', { params: { query: { ...query, ...(cursor ? { cursor } : {}) } }, signal: opts.signal }));
          yield* page.data;
          cursor = page.nextCursor;
        } while (cursor);
      },
    },
    models: { list: (opts: CallOptions = {}) => unwrap(raw.GET('/models', { signal: opts.signal })) },
    transforms: {
      create: (body: ImageTransformRequest, opts: CallOptions = {}) => unwrap(raw.POST('/images/transforms', { body, signal: opts.signal })),
    },
    workflows: {
      list: (query: ListQuery = {}, opts: CallOptions = {}) => unwrap(raw.GET('/workflows', { params: { query }, signal: opts.signal })),
      /** POST /workflows with an automatic Idempotency-Key (a retry never saves twice): the workflow, version 1. */
      create(body: SaveWorkflowRequest, opts: CallOptions & { idempotencyKey?: string } = {}): Promise<Workflow> {
        return unwrap(raw.POST('/workflows', {
          body, params: { header: { 'Idempotency-Key': opts.idempotencyKey ?? newKey() } }, signal: opts.signal,
        }));
      },
      /** GET /workflows/{id}: the graph with the results runs wrote back, and its `version`. */
      get: (id: string, opts: CallOptions = {}): Promise<Workflow> => unwrap(raw.GET('/workflows/{id}', { params: { path: { id } }, signal: opts.signal })),
      /** PUT /workflows/{id}: replaces name and graph; with `version`, only over that version. Resolves with the new version. */
      update(id: string, body: SaveWorkflowRequest, opts: SaveOptions = {}): Promise<Workflow> {
        return unwrap(raw.PUT('/workflows/{id}', { params: { path: { id }, header: ifMatch(opts.version) }, body, signal: opts.signal }));
      },
      /** DELETE /workflows/{id}; with `version`, only when that is still the version. Its runs stay readable. */
      async delete(id: string, opts: SaveOptions = {}): Promise<void> {
        await unwrap(raw.DELETE('/workflows/{id}', { params: { path: { id }, header: ifMatch(opts.version) }, signal: opts.signal }));
      },
    },
    /** The openapi-fetch client underneath (same retries), for anything not wrapped above. */
    raw,
  };
}

export type KilnClient = ReturnType<typeof createKilnClient>;
