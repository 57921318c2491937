// Task workflow__run_node: runs one output (prompt → output edge) of a workflow run through the same
// provider and charging path as a single generation — start (parallel slots, run window), reserve
// the worst case once, execute, then settle + record + enqueue dependents in one idempotent SQL
// call. Transient failures retry with backoff; permanent ones (and the last attempt) fail the output
// and with it the run. Payload {run, deadline: true} is the run-window check.

import { createHash } from 'node:crypto';
import type { JobHelpers, Task } from 'graphile-worker';
import type { Context } from '../src/context.ts';
import { classifyFailure, executeRequest, type ExecutionOutput } from '../src/generations/execute.ts';
import { isUuid } from '../src/generations/service.ts';
import { InputError } from '../src/inputs.ts';
import { errorFields } from '../src/log.ts';
import { MEDIA_TYPES, objectPath } from '../src/store.ts';
import type { UnitSpec } from '../src/workflows/plan.ts';
import type { Lease } from '../src/worker.ts';
import { buildRequest, reserveFor, type Upstream } from '../src/workflows/request.ts';

interface Started {
  outcome: 'run';
  attempt: number;
  max_attempts: number;
  account_id: string;
  spec: UnitSpec;
  charge_id: string | null;
  reserved_micros: number | string | null;
  upstream: Upstream;
}


const DUPLICATE = Symbol('duplicate');


/** Budget refusals (SQL KQ001 / KP001) as the output's client-facing failure message. */
function budgetMessage(e: any): string | null {
  if (e?.code === 'KQ001') return `insufficient_quota: ${e.message}`;
  if (e?.code === 'KP001') return `payment_required: ${e.message}`;
  return null;
}

async function complete(ctx: Context, run: string, output: string, started: Started, out: ExecutionOutput): Promise<void> {
  const sql = ctx.sql;
  if (out.type === 'code') {
    const result = { type: started.spec.type, code: out.code };
    await sql`select kiln.complete_workflow_output(${run}::uuid, ${output}, ${sql.json(result)}::jsonb, ${out.costMicros}::bigint, ${out.providerRequestId})`;
    return;
  }
  // The path is derived from run + output: a duplicate execution can never store a second image.
  const name = createHash('sha256').update(output).digest('hex').slice(0, 32);
  const path = objectPath(started.account_id, `workflows/${run}`, out.format, name);
  const result = { type: 'image', path, mediaType: MEDIA_TYPES[out.format], width: out.image.width, height: out.image.height };
  try {
    await sql.begin(async (tx) => {
      // Image first, completion last: the run row stays locked only for the short completion.
      await tx`
        select kiln.put_object(${path}, ${started.account_id}::uuid, ${out.image.data}, ${MEDIA_TYPES[out.format]}, ${out.format},
                               ${out.image.width}::int, ${out.image.height}::int, 'private')`;
      const [{ r }] = await tx`
        select kiln.complete_workflow_output(${run}::uuid, ${output}, ${tx.json(result)}::jsonb, ${out.costMicros}::bigint, ${out.providerRequestId}) as r`;
      if (!r.applied) throw DUPLICATE; // settled meanwhile: roll the image back
    });
  } catch (e: any) {
    if (e === DUPLICATE || e?.code === 'KC001') return; // another execution already recorded it
    throw e;
  }
}

async function runOutput(ctx: Context, run: string, output: string, started: Started, helpers: JobHelpers, lease: Lease): Promise<void> {
  const workerId = lease.id;
  const fail = (message: string) => ctx.sql`select kiln.fail_workflow_output(${run}::uuid, ${output}, ${message})`;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), ctx.config.generationTimeoutMs);
  const shutdown = AbortSignal.any([ctx.shutdown, helpers.abortSignal, lease.signal]);
  const signal = AbortSignal.any([shutdown, deadline.signal]);
  try {
    const req = await buildRequest(ctx, started.account_id, started.spec, started.upstream ?? {});
    let reserved = started.reserved_micros;
    if (started.charge_id == null) {
      let amount: number;
      try {
        amount = reserveFor(req);
      } catch {
        throw new InputError(`model "${req.model.id}" has no usable price`);
      }
      let r: any;
      try {
        [{ r }] = await ctx.sql`select kiln.reserve_workflow_output(${run}::uuid, ${output}, ${amount}::bigint) as r`;
      } catch (e) {
        const message = budgetMessage(e);
        if (!message) throw e;
        await fail(message);
        return;
      }
      if (!r.ok) return; // settled or abandoned meanwhile
      reserved = r.reserved_micros;
    }
    const out = await executeRequest(ctx, req, { signal, reservedMicros: Number(reserved) });
    await complete(ctx, run, output, started, out);
  } catch (err) {
    const verdict = classifyFailure(err, { deadline: deadline.signal, shutdown });
    if (verdict.message === 'internal error') ctx.log.error('workflow output failed unexpectedly', { run, output, ...errorFields(err) });
    if (!verdict.retry || started.attempt >= started.max_attempts) {
      await fail(verdict.retry && started.attempt > 1 ? `${verdict.message} (after ${started.attempt} attempts)` : verdict.message);
      return;
    }
    await ctx.sql`select kiln.defer_workflow_output(${run}::uuid, ${output}, ${workerId}, ${helpers.job.id}::bigint, ${verdict.message})`;
    throw err instanceof Error ? err : new Error(verdict.message); // graphile-worker retries with backoff
  } finally {
    clearTimeout(timer);
  }
}

export default function workflowRunNode(ctx: Context, lease: Lease): Task {
  return async (payload: unknown, helpers: JobHelpers) => {
    const p = payload as { run?: unknown; output?: unknown; deadline?: unknown } | null;
    if (!isUuid(p?.run) || (p!.deadline !== true && (typeof p!.output !== 'string' || p!.output === ''))) {
      helpers.logger.error('workflow__run_node: malformed payload; dropping the job');
      return;
    }
    const run = p!.run as string;
    if (p!.deadline === true) {
      await ctx.sql`select kiln.expire_workflow_run(${run}::uuid, ${ctx.config.workerStaleSeconds}::int)`;
      return;
    }
    const output = p!.output as string;
    const job = helpers.job;
    const workerId = lease.id;
    const [{ s }] = await ctx.sql`
      select kiln.start_workflow_output(${run}::uuid, ${output}, ${workerId}, ${job.id}::bigint,
                                        ${ctx.config.workerStaleSeconds}::int, ${ctx.config.slotRetryMs}::int) as s`;
    if (s.outcome !== 'run') return; // wait (re-queued), busy (a live worker has it), done, not_ready, missing
    await runOutput(ctx, run, output, s as Started, helpers, lease);
  };
}
