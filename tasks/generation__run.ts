// Task generation__run: executes one generation. Start (respecting the account's parallel
// slots), call the provider under a deadline and the shutdown signal, store the image, then
// complete + settle in one idempotent SQL call. Transient failures retry with graphile-worker's
// backoff; permanent ones — and the last attempt — fail the generation and release its reservation.

import type { JobHelpers, Task } from 'graphile-worker';
import type { Context } from '../src/context.ts';
import { classifyFailure, executeRequest, type ExecutionOutput } from '../src/generations/execute.ts';
import type { StoredRequest } from '../src/generations/service.ts';
import { isUuid } from '../src/generations/service.ts';
import { errorFields } from '../src/log.ts';
import { MEDIA_TYPES, objectPath } from '../src/store.ts';
import type { Lease } from '../src/worker.ts';

interface Started {
  outcome: 'run';
  attempt: number;
  max_attempts: number;
  account_id: string;
  request: StoredRequest;
  reserved_micros: number | string;
}


const DEADLINE = Symbol('deadline');


async function complete(ctx: Context, id: string, started: Started, out: ExecutionOutput): Promise<void> {
  if (out.type === 'code') {
    const result = { type: 'code', code: out.code, structuredOutput: out.structuredOutput };
    await ctx.sql`select kiln.complete_generation(${id}::uuid, ${ctx.sql.json(result as any)}::jsonb, ${out.costMicros}::bigint, ${out.providerRequestId})`;
    return;
  }
  // The object path is derived from the generation id and written in the same transaction as
  // the completion, so a duplicate execution can neither store a second image nor charge twice.
  const path = objectPath(started.account_id, 'generations', out.format, id);
  const result = {
    type: 'image', path, mediaType: MEDIA_TYPES[out.format], aspectRatio: started.request.aspectRatio,
    width: out.image.width, height: out.image.height,
  };
  await ctx.sql.begin(async (tx) => {
    const [{ r }] = await tx`
      select kiln.complete_generation(${id}::uuid, ${tx.json(result as any)}::jsonb, ${out.costMicros}::bigint, ${out.providerRequestId}) as r`;
    if (!r.applied) return;
    await tx`
      select kiln.put_object(${path}, ${started.account_id}::uuid, ${out.image.data}, ${MEDIA_TYPES[out.format]}, ${out.format},
                             ${out.image.width}::int, ${out.image.height}::int, 'private')`;
  });
}

export default function generationRun(ctx: Context, lease: Lease): Task {
  return async (payload: unknown, helpers: JobHelpers) => {
    const id = (payload as { id?: unknown } | null)?.id;
    if (!isUuid(id)) {
      helpers.logger.error('generation__run: malformed payload; dropping the job');
      return;
    }
    const job = helpers.job;
    const workerId = lease.id;
    const [{ s }] = await ctx.sql`
      select kiln.start_generation(${id}::uuid, ${workerId}, ${job.id}::bigint, ${ctx.config.workerStaleSeconds}::int,
                                   ${ctx.config.slotRetryMs}::int, ${job.max_attempts}::int) as s`;
    if (s.outcome !== 'run') return; // wait (re-queued), busy (a live worker has it), done, missing
    const started = s as Started;

    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(DEADLINE), ctx.config.generationTimeoutMs);
    const shutdown = AbortSignal.any([ctx.shutdown, helpers.abortSignal, lease.signal]);
    const signal = AbortSignal.any([shutdown, deadline.signal]);
    try {
      const out = await executeRequest(ctx, started.request, { signal, reservedMicros: Number(started.reserved_micros) });
      await complete(ctx, id, started, out);
    } catch (err) {
      const verdict = classifyFailure(err, { deadline: deadline.signal, shutdown });
      if (verdict.message === 'internal error') ctx.log.error('generation failed unexpectedly', { generation: id, ...errorFields(err) });
      if (!verdict.retry || started.attempt >= started.max_attempts) {
        await ctx.sql`select kiln.fail_generation(${id}::uuid, ${verdict.message})`;
        return;
      }
      await ctx.sql`select kiln.defer_generation(${id}::uuid, ${workerId}, ${job.id}::bigint, ${verdict.message})`;
      throw err instanceof Error ? err : new Error(verdict.message); // graphile-worker retries with backoff
    } finally {
      clearTimeout(timer);
    }
  };
}
