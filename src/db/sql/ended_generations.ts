// kiln.take_ended_generations: the generations a statement ended (failed or canceled), which the
// wrappers of the calls that can end them (fail, start, sweep, expire, retry) read in the same
// statement, after the call, for the process's kiln_generations_total.

/** One generation a statement ended. */
export interface EndedGeneration {
  type: string;
  model_id: string | null;
  status: 'failed' | 'canceled';
}
