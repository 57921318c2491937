// Benchmark sections beyond the foundation, run in order by test/bench/run.ts.

import type { BenchContext } from './run.ts';
import { benchAdmin } from './admin.ts';
import { benchBatches } from './batches.ts';
import { benchEndUserPost } from './endusers-post.ts';
import { benchEndUsers } from './endusers.ts';
import { benchGenerations } from './generations.ts';
import { benchImages } from './images.ts';
import { benchScale } from './scale.ts';
import { benchSoak } from './soak.ts';
import { benchStreaming } from './streaming.ts';
import { benchTelemetry } from './telemetry.ts';
import { benchWait } from './wait.ts';
import { benchWebhooks } from './webhooks.ts';
import { benchWorkflows } from './workflows.ts';

export const benchModules: Record<string, (ctx: BenchContext) => Promise<void>> = {
  generations: async (ctx) => ctx.report('generations', { ...(await benchGenerations(ctx)) }),
  workflows: async (ctx) => ctx.report('workflows', { ...(await benchWorkflows(ctx)) }),
  images: async (ctx) => ctx.report('images', { ...(await benchImages()) }),
  wait: async (ctx) => ctx.report('wait', { ...(await benchWait(ctx)) }),
  webhooks: async (ctx) => ctx.report('webhooks', { ...(await benchWebhooks(ctx)) }),
  scale: async (ctx) => ctx.report('scale', { ...(await benchScale(ctx)) }),
  admin: async (ctx) => ctx.report('admin', { ...(await benchAdmin(ctx)) }),
  telemetry: async (ctx) => ctx.report('telemetry', { ...(await benchTelemetry(ctx)) }),
  streaming: async (ctx) => ctx.report('streaming', { ...(await benchStreaming(ctx)) }),
  batches: async (ctx) => ctx.report('batches', { ...(await benchBatches(ctx)) }),
  'enduser-post': async (ctx) => ctx.report('enduser-post', { ...(await benchEndUserPost(ctx)) }),
  endusers: async (ctx) => ctx.report('endusers', { ...(await benchEndUsers(ctx)) }),
  // Not in a full run unless named: 2 × KILN_SOAK_SECONDS (5 min each by default).
  ...(process.env.KILN_BENCH_ONLY?.split(',').map((x) => x.trim()).includes('soak')
    ? { soak: async (ctx: BenchContext) => ctx.report('soak', { ...(await benchSoak(ctx)) }) }
    : {}),
};
