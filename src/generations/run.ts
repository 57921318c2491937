// One generation__run job's execution of a generation, whatever made it (REST, MCP, a workflow
// run); the task (tasks/generation__run.ts) only checks the payload. Start (respecting the
// account's parallel slots and, for a run output, its run), price and reserve a run output once
// its inputs are known, call the provider under a deadline and the worker's lease, then
// complete + settle in one idempotent SQL call — which, for a run output, also records it on the
// run and queues its ready dependents. Transient failures retry as a new job with
// graphile-worker's backoff; permanent ones — and the last attempt — fail the generation (and its
// run) and release its reservation. Only executions that ran to an end are attempts: waiting for
// a slot, a takeover from a dead worker (a crash, counted apart; see KILN_GENERATION_MAX_CRASHES)
// and a worker's shutdown are not. A canceled generation (kiln:cancel, see ./cancel.ts) has its
// call aborted through the registry (./running.ts) and ends quietly: the cancel already failed it
// and released its reservation. An image the object store cannot take is held in Postgres with
// its cost (kiln.hold_generation_output) and only the store is retried, with backoff, never the
// provider; past KILN_STORE_OUTAGE_GRACE the generation fails uncharged (docs/storage.md, "When
// the store is down").

import type { Context } from '../context.ts';
import { classifyFailure, executeRequest, type ExecutionOutput } from './execute.ts';
import type { Lease } from './lease.ts';
import { track } from './running.ts';
import { StreamWriter } from './stream-writer.ts';
import { priceRequest } from './prepare.ts';
import type { StoredRequest } from '../providers/index.ts';
import { InputError } from '../providers/inputs.ts';
import { errorFields } from '../log.ts';
import { commitObject, MEDIA_TYPES, objectPath, stageObject, type ImageFormat } from '../storage/store.ts';
import { isStoreError, type StoreError } from '../storage/health.ts';
import { getHeldOutput } from '../db/sql/get_held_output.ts';
import { holdGenerationOutput } from '../db/sql/hold_generation_output.ts';
import type { UnitSpec } from '../workflows/plan.ts';
import { buildRequest, type Upstream } from '../workflows/request.ts';
import { completeGeneration } from '../db/sql/complete_generation.ts';
import { completeBatchLines, startBatchLines, type BatchClaim, type CompletedBatchLine, type StartedBatchLine } from '../db/sql/batches.ts';
import type { EndedGeneration } from '../db/sql/ended_generations.ts';
import { deferGeneration } from '../db/sql/defer_generation.ts';
import { failGeneration } from '../db/sql/fail_generation.ts';
import { reserveGeneration } from '../db/sql/reserve_generation.ts';
import { startGeneration } from '../db/sql/start_generation.ts';
import { countEnded, countGeneration, countSpend, observeQueue, observeRun } from '../telemetry/metrics.ts';
import { contextFrom, failSpan, SpanKind, withSpan } from '../telemetry/tracing.ts';
import { underSpan } from '../telemetry/scope.ts';

/** The graphile-worker job a run belongs to: its id, its cap on attempts, and its abort signal. */
export interface GenerationJob {
  id: string;
  maxAttempts: number;
  /** graphile-worker's signal for the job (the runner is stopping). */
  signal: AbortSignal;
  /** When the job was enqueued (kiln_generation_queue_seconds). */
  createdAt?: Date;
}

interface Started {
  outcome: 'run';
  attempt: number;
  max_attempts: number;
  account_id: string;
  /** The validated request (API and MCP), or the run output's spec (a workflow run). */
  request: StoredRequest | UnitSpec;
  /** Whether a reservation exists (always for API and MCP; a run output's is made here). */
  reserved: boolean;
  reserved_micros: number | string;
  run_id: string | null;
  /** A batch line: it reserves when it starts (docs/api.md, "Batches"). */
  batch_id?: string | null;
  output_node_id: string | null;
  upstream: Upstream | null;
  /** An output held while the object store was down: store it, do not call the provider. */
  held?: boolean;
}

/** An image to store and complete with: the provider's output, priced, and the result it becomes. */
interface ImageToStore {
  result: Record<string, unknown> & { path: string; width: number; height: number; mediaType: string };
  data: Buffer;
  format: ImageFormat;
  costMicros: number;
  providerRequestId: string | null;
  modelId: string;
}

/** What an execution settles with: code, or an image (fresh from the provider, or held). */
type Settle = { type: 'code'; out: Extract<ExecutionOutput, { type: 'code' }> } | { type: 'image'; image: ImageToStore; held: boolean };

/** The object store did not take the image: hold it (or keep holding it) and retry the store. */
class StoreHold extends Error {
  constructor(readonly image: ImageToStore, readonly held: boolean, readonly storeError: StoreError) {
    super(storeError.message);
  }
}

/** Budget refusals (SQL KQ001 / KP001) as a run output's client-facing failure message. */
function budgetMessage(e: unknown): string | null {
  const err = e as { code?: string; message?: string } | null;
  if (err?.code === 'KQ001') return `insufficient_quota: ${err.message}`;
  if (err?.code === 'KP001') return `payment_required: ${err.message}`;
  return null;
}

/** The image an output becomes: its object path is derived from the generation id (see complete). */
function imageToStore(id: string, started: Started, req: StoredRequest, out: Extract<ExecutionOutput, { type: 'image' }>): ImageToStore {
  const kind = started.run_id ? `workflows/${started.run_id}` : 'generations';
  const path = objectPath(started.account_id, kind, out.format, id);
  return {
    result: {
      type: 'image', path, mediaType: MEDIA_TYPES[out.format], aspectRatio: req.aspectRatio,
      width: out.image.width, height: out.image.height, model: out.modelId,
    },
    data: out.image.data, format: out.format, costMicros: out.costMicros, providerRequestId: out.providerRequestId, modelId: out.modelId,
  };
}

/** A code output as the generation's result. */
function codeResult(out: Extract<ExecutionOutput, { type: 'code' }>): Record<string, unknown> {
  return { type: 'code', code: out.code, structuredOutput: out.structuredOutput, model: out.modelId };
}

/** Completes and settles the generation; false when it was already settled (a duplicate execution). Throws StoreHold when the store fails the image. */
async function complete(ctx: Context, id: string, started: Started, s: Settle): Promise<boolean> {
  if (s.type === 'code') {
    const out = s.out;
    const [{ r }] = await completeGeneration(ctx.sql, id, codeResult(out), out.costMicros, out.providerRequestId, out.modelId);
    return r.applied;
  }
  // The object path is derived from the generation id and its row is written in the same
  // transaction as the completion, so a duplicate execution can neither store a second image
  // nor charge twice. The bytes are written first (into the bucket on s3, under a key of their
  // own): a crash or a losing duplicate leaves bytes without a row, which the sweep removes.
  const img = s.image;
  let staged;
  try {
    staged = await stageObject(ctx, {
      path: img.result.path, owner: started.account_id, data: img.data, contentType: img.result.mediaType, format: img.format,
      width: img.result.width, height: img.result.height, visibility: 'private',
    });
  } catch (e) {
    if (isStoreError(e)) throw new StoreHold(img, s.held, e);
    throw e;
  }
  return ctx.sql.begin(async (tx) => {
    const [{ r }] = await completeGeneration(tx, id, img.result, img.costMicros, img.providerRequestId, img.modelId);
    if (!r.applied) return false;
    await commitObject(tx, staged);
    return true;
  });
}

/** "10 minutes", "3 seconds": the grace as the failure message says it. */
function graceText(seconds: number): string {
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (seconds % 86_400 === 0) return unit(seconds / 86_400, 'day');
  if (seconds % 3600 === 0) return unit(seconds / 3600, 'hour');
  if (seconds % 60 === 0) return unit(seconds / 60, 'minute');
  return unit(seconds, 'second');
}

/**
 * The store failed the image: hold the provider's output (the first time) and retry the store
 * after a backoff; past the grace, fail the generation uncharged with a message naming the store.
 * True when the generation failed here.
 */
async function hold(ctx: Context, lease: Lease, job: GenerationJob, id: string, h: StoreHold): Promise<boolean> {
  const grace = ctx.config.store.outageGraceSeconds;
  const img = h.image;
  const [{ h: outcome }] = await holdGenerationOutput(ctx.sql, {
    id, workerId: lease.id, jobId: job.id,
    data: h.held ? null : img.data, result: h.held ? null : img.result, format: img.format, costMicros: img.costMicros,
    providerRequestId: img.providerRequestId, modelId: img.modelId,
    error: `the image store is unavailable (${h.storeError.message}); the image is held and the store retried`, graceSeconds: grace,
  });
  if (outcome.outcome === 'expired') {
    ctx.log.error('the image store stayed unavailable past KILN_STORE_OUTAGE_GRACE; the generation fails uncharged', { generation: id, failures: outcome.failures, since: outcome.since, error: h.storeError.message });
    await fail(ctx, id, `The image store was ${h.storeError.down ? 'unreachable' : 'refusing writes'} for ${graceText(grace)}; nothing was charged.`);
    return true;
  }
  if (outcome.outcome === 'held') {
    ctx.log.warn('the image store is unavailable; the image is held and the store retried', { generation: id, failures: outcome.failures, retryInSeconds: outcome.retry_seconds, error: h.storeError.message });
  }
  return false;
}

/** The output a generation holds, as an image to store; null when none is held (any more). */
async function heldImage(ctx: Context, id: string): Promise<ImageToStore | null> {
  const [h] = await getHeldOutput(ctx.sql, id);
  if (!h) return null;
  return {
    result: h.result as ImageToStore['result'], data: h.data, format: h.format as ImageFormat, costMicros: Number(h.cost_micros),
    providerRequestId: h.provider_request_id, modelId: h.model_id,
  };
}

/** Fails the generation for good, counting what the call ended: it (unless it had ended), and a run's outputs it abandoned. */
async function fail(ctx: Context, id: string, message: string): Promise<void> {
  const [row] = await failGeneration(ctx.sql, id, message);
  countEnded(row?.ended);
}

/**
 * The request to execute and its reservation. A run output's request is built from its spec and
 * its upstream results; it and a batch line are priced with the same function as a POST and
 * reserved once, when they start; null when it ended meanwhile (the budget refused it: it failed
 * `insufficient_quota`, uncharged, and a run output's run with it).
 */
async function prepare(ctx: Context, id: string, s: Started): Promise<{ req: StoredRequest; reservedMicros: number } | null> {
  // API and MCP generations reserved at creation; a run output and a batch line reserve here, once.
  if (!s.run_id && (s.reserved || !s.batch_id)) return { req: s.request as StoredRequest, reservedMicros: Number(s.reserved_micros) };
  const req = s.run_id ? await buildRequest(ctx, s.account_id, s.request as UnitSpec, s.upstream ?? {}) : s.request as StoredRequest;
  if (s.reserved) return { req, reservedMicros: Number(s.reserved_micros) };
  let amount: number;
  try {
    amount = priceRequest(req);
  } catch {
    throw new InputError(`model "${req.model.id}" has no usable price`);
  }
  let r: { ok: boolean; reserved_micros?: number | string };
  try {
    [{ r }] = await reserveGeneration(ctx.sql, id, amount);
  } catch (e) {
    const message = budgetMessage(e);
    if (!message) throw e;
    await fail(ctx, id, message);
    return null;
  }
  return r.ok ? { req, reservedMicros: Number(r.reserved_micros) } : null;
}

/** One execution of generation `id` for this job; `canceled` aborts it when the generation is canceled. */
async function execute(ctx: Context, lease: Lease, job: GenerationJob, id: string, canceled: AbortSignal): Promise<void> {
  const t0 = Date.now();
  const [{ s, ended }] = await startGeneration(ctx.sql, {
    id, workerId: lease.id, jobId: job.id, staleSeconds: ctx.config.workerStaleSeconds,
    waitMs: ctx.config.slotRetryMs, jobMaxAttempts: job.maxAttempts, maxCrashes: ctx.config.generationMaxCrashes,
  });
  // Ended by this call (crashes in a row, a blocked account, an output of a run that ended or
  // expired, and what that abandoned): settled here, so counted here.
  countEnded(ended);
  // wait (re-queued), busy (a live worker has it), superseded (a newer job has it), done, not_ready, missing
  if (s.outcome !== 'run') return;
  await runStarted(ctx, lease, job, id, s as Started, canceled, t0, 'generation__run', null);
}

/**
 * Runs a started generation to its end: the provider call, then its completion (with a batch
 * group's, when `group` is set, for code), a failure or a retry.
 */
async function runStarted(
  ctx: Context, lease: Lease, job: GenerationJob, id: string, started: Started, canceled: AbortSignal, t0: number,
  task: string, group: GroupLine | null,
): Promise<void> {
  const type = started.request.type === 'image' ? 'image' : 'code';
  const requested = started.request.model?.id;
  if (job.createdAt) observeQueue(type, (t0 - job.createdAt.getTime()) / 1000);
  const runStart = performance.now();

  // The job's span joins the trace of the request that created the generation (or started its run).
  await withSpan('generation__run', {
    kind: SpanKind.CONSUMER,
    parent: contextFrom(started.request.traceparent),
    startTime: t0,
    attributes: { 'kiln.job.task': task, 'kiln.generation.id': id, 'kiln.generation.type': type, 'kiln.generation.attempt': started.attempt, 'kiln.model': requested ?? 'unknown' },
  }, async (span) => {
    // What the execution does is traced under the job's span, and logs with its trace ids.
    const jctx = underSpan(ctx, span);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), jctx.config.generationTimeoutMs);
    const shutdown = AbortSignal.any([jctx.shutdown, job.signal, lease.signal]);
    const signal = AbortSignal.any([shutdown, deadline.signal, canceled]);
    // What the provider writes while it runs, for clients watching (docs/api.md, "Streaming").
    const sink = new StreamWriter(jctx, { id, accountId: started.account_id, runId: started.run_id, workerId: lease.id });
    try {
      // An output held while the store was down is stored as it is: the provider is not called again.
      const held = started.held ? await heldImage(jctx, id) : null;
      let settle: Settle;
      if (held) {
        span?.setAttribute('kiln.generation.held', true);
        settle = { type: 'image', image: held, held: true };
      } else {
        const prepared = await prepare(jctx, id, started);
        if (!prepared) {
          // The budget refused a run output (failed, and counted, in prepare) or it ended meanwhile.
          span?.setAttribute('kiln.outcome', 'ended');
          return;
        }
        const out = await executeRequest(jctx, prepared.req, { signal, reservedMicros: prepared.reservedMicros, sink });
        // The last delta goes before the terminal status.
        await sink.close();
        settle = out.type === 'code' ? { type: 'code', out } : { type: 'image', image: imageToStore(id, started, prepared.req, out), held: false };
      }
      const settled = settle.type === 'code' ? settle.out : settle.image;
      const applied = group && settle.type === 'code'
        ? await group.complete({ id, result: codeResult(settle.out), costMicros: settle.out.costMicros, providerRequestId: settle.out.providerRequestId, modelId: settle.out.modelId })
        : await complete(jctx, id, started, settle);
      if (applied) {
        countGeneration(type, settled.modelId, 'completed');
        countSpend(settled.modelId, settled.costMicros);
        observeRun(type, settled.modelId, (performance.now() - runStart) / 1000);
      }
      span?.setAttribute('kiln.outcome', 'completed');
    } catch (err) {
      // Canceled: the generation already ended failed 'canceled' with its reservation released;
      // neither fail it again nor let graphile-worker retry the job.
      if (canceled.aborted) {
        span?.setAttribute('kiln.outcome', 'canceled');
        return;
      }
      if (err instanceof StoreHold) {
        failSpan(span, err.storeError);
        const failed = await hold(jctx, lease, job, id, err);
        if (failed) observeRun(type, requested ?? 'unknown', (performance.now() - runStart) / 1000);
        span?.setAttribute('kiln.outcome', failed ? 'failed' : 'held');
        return;
      }
      const verdict = classifyFailure(err, { deadline: deadline.signal, shutdown });
      failSpan(span, err);
      if (verdict.message === 'internal error') jctx.log.error('generation failed unexpectedly', { generation: id, ...errorFields(err) });
      if (!verdict.retry || (verdict.counted && started.attempt >= started.max_attempts)) {
        const message = verdict.retry && started.attempt > 1 ? `${verdict.message} (after ${started.attempt} attempts)` : verdict.message;
        await fail(jctx, id, message);
        observeRun(type, requested ?? 'unknown', (performance.now() - runStart) / 1000);
        span?.setAttribute('kiln.outcome', 'failed');
        return;
      }
      // Clients drop the text of this execution now, not when the next one writes.
      await sink.cut();
      // Back to pending with a new job for the retry, after graphile-worker's backoff when the
      // attempt counted. This job ends (it lost the generation's key), so job attempts never add
      // up across retries: Kiln counts attempts and crashes on the generation.
      await deferGeneration(jctx.sql, id, lease.id, job.id, verdict.message, verdict.counted);
      span?.setAttribute('kiln.outcome', 'retry');
    } finally {
      clearTimeout(timer);
      sink.dispose();
      group?.release();
    }
  });
}

/**
 * Runs generation `id` as job `job` under the worker's lease: one execution (see above), tracked
 * in ./running.ts so that a cancel aborts it.
 */
export async function runGeneration(ctx: Context, lease: Lease, job: GenerationJob, id: string): Promise<void> {
  // Tracked before it starts, so a cancel landing between the start and the provider call
  // still finds it.
  const cancel = new AbortController();
  const untrack = track(id.toLowerCase(), cancel);
  try {
    await execute(ctx, lease, job, id, cancel.signal);
  } finally {
    untrack();
  }
}

// ------------------------------------------------------------------ batch lines, a group per job

/** One line of a batch__run job's group: it completes with the group, or lets the group go on without it. */
interface GroupLine {
  /** Completes the line with the group's one call (once every line of the group has an outcome); whether it applied. */
  complete(line: CompletedBatchLine): Promise<boolean>;
  /** The line ended another way (failed, retried, canceled, held): the group no longer waits for it. Idempotent. */
  release(): void;
}

/** How long a batch__run job goes on starting its batch's next groups before it ends (its batch's next group is queued then). */
export const BATCH_RUN_MS = 5000;

/**
 * The completions of a group's code lines, sent in one call (kiln.complete_batch_lines) once every
 * line of the group completed or was released: one settle and one count of the batch per group.
 * While the job goes on (`claim` says so), the same call starts the batch's next group for it
 * (`next`: none when it ends).
 */
class GroupCompletion {
  private open: number;
  private readonly waiting: Array<{ line: CompletedBatchLine; resolve: (applied: boolean) => void; reject: (e: unknown) => void }> = [];
  private resolveNext!: (next: { lines: StartedBatchLine[]; ended: EndedGeneration[] | null }) => void;
  private rejectNext!: (e: unknown) => void;
  /** The lines the completion call started for the job next (an empty list when it ends). */
  readonly next: Promise<{ lines: StartedBatchLine[]; ended: EndedGeneration[] | null }>;

  constructor(private readonly ctx: Context, private readonly batchId: string, lines: number, private readonly claim: () => BatchClaim | null) {
    this.open = lines;
    this.next = new Promise((resolve, reject) => { this.resolveNext = resolve; this.rejectNext = reject; });
    // Awaited once every line settled (runBatchLines); a failure before then is not unhandled.
    this.next.catch(() => {});
  }

  line(): GroupLine {
    let done = false;
    return {
      complete: (line) => {
        if (done) throw new Error('a batch line completes once');
        done = true;
        const p = new Promise<boolean>((resolve, reject) => this.waiting.push({ line, resolve, reject }));
        this.settled();
        return p;
      },
      release: () => {
        if (done) return;
        done = true;
        this.settled();
      },
    };
  }

  private settled(): void {
    if (--this.open > 0) return;
    const batch = this.waiting.splice(0);
    const claim = this.claim();
    if (!batch.length && !claim) {
      this.resolveNext({ lines: [], ended: null });
      return;
    }
    completeBatchLines(this.ctx.sql, this.batchId, batch.map((w) => w.line), claim).then(
      ([{ r, ended }]) => {
        batch.forEach((w, i) => w.resolve(r.applied[i] === true));
        this.resolveNext({ lines: r.lines ?? [], ended });
      },
      (e) => {
        batch.forEach((w) => w.reject(e));
        this.rejectNext(e);
      },
    );
  }
}

/**
 * Runs a batch's lines as one batch__run job (docs/api.md, "Batches"): its group (batch_line
 * `from` to `to`), started and reserved in one call (kiln.start_batch_lines), run at once, then
 * completed and settled in one call (kiln.complete_batch_lines) which, for up to BATCH_RUN_MS,
 * also starts the next group of the batch whose turn it is for this job, so lines keep flowing
 * without a queued job per group. Each line keeps a generation's semantics: leased to this job (a
 * crash is taken over when the job runs again, never run twice), its own attempts, retries as a
 * job of its own, failures and cancels line by line.
 */
export async function runBatchLines(ctx: Context, lease: Lease, job: GenerationJob, batchId: string, from: number, to: number): Promise<void> {
  const began = Date.now();
  const [{ s, ended }] = await startBatchLines(ctx.sql, {
    batchId, from, to, workerId: lease.id, jobId: job.id, staleSeconds: ctx.config.workerStaleSeconds,
    waitMs: ctx.config.slotRetryMs, maxCrashes: ctx.config.generationMaxCrashes, takeover: true,
  });
  countEnded(ended);
  // The job goes on while it has time left and nothing stops it.
  const claim = (): BatchClaim | null =>
    Date.now() - began < BATCH_RUN_MS && !job.signal.aborted && !lease.signal.aborted && !ctx.shutdown.aborted
      ? { workerId: lease.id, jobId: job.id, staleSeconds: ctx.config.workerStaleSeconds, waitMs: ctx.config.slotRetryMs, maxCrashes: ctx.config.generationMaxCrashes }
      : null;
  let lines = s.lines ?? [];
  // Lines of later groups were not queued as this job: no queue time of theirs to observe.
  let lineJob = job;
  while (lines.length) {
    const t0 = Date.now();
    const group = new GroupCompletion(ctx, batchId, lines.length, claim);
    await Promise.all(lines.map(async (l) => {
      const started: Started = {
        outcome: 'run', attempt: l.attempt, max_attempts: l.max_attempts, account_id: l.account_id, request: l.request,
        reserved: true, reserved_micros: l.reserved_micros, run_id: null, batch_id: batchId, output_node_id: null, upstream: null, held: false,
      };
      const line = group.line();
      // Tracked before it runs, so that a cancel finds it (./running.ts).
      const cancel = new AbortController();
      const untrack = track(l.id.toLowerCase(), cancel);
      try {
        await runStarted(ctx, lease, lineJob, l.id, started, cancel.signal, t0, 'batch__run', line);
      } catch (e) {
        ctx.log.error('a batch line failed unexpectedly', { generation: l.id, ...errorFields(e) });
      } finally {
        line.release();
        untrack();
      }
    }));
    const next = await group.next;
    countEnded(next.ended);
    lines = next.lines;
    lineJob = { ...job, createdAt: undefined };
  }
}
