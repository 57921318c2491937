// Benchmark sections beyond the foundation, run in order by test/bench/run.ts.

import type { BenchContext } from './run.ts';
import { benchGenerations } from './generations.ts';
import { benchImages } from './images.ts';
import { benchWorkflows } from './workflows.ts';

export const benchModules: Array<(ctx: BenchContext) => Promise<void>> = [
  async (ctx) => ctx.report('generations', { ...(await benchGenerations(ctx)) }),
  async (ctx) => ctx.report('workflows', { ...(await benchWorkflows(ctx)) }),
  async (ctx) => ctx.report('images', { ...(await benchImages()) }),
];
