// Benchmark sections beyond the foundation, run in order by test/bench/run.ts.

import type { BenchContext } from './run.ts';
import { benchGenerations } from './generations.ts';

export const benchModules: Array<(ctx: BenchContext) => Promise<void>> = [
  async (ctx) => ctx.report('generations', { ...(await benchGenerations(ctx)) }),
];
