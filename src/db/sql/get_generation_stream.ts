// kiln.get_generation_stream: what a running generation of the account has written so far.

import type { Queryable } from '../pool.ts';

export interface GenerationStreamRow {
  session: number;
  cut: boolean;
  text: string;
  chars: number;
  preview_index: number | null;
  preview_path: string | null;
  preview_type: string | null;
  progress_seq: number;
  progress_percent: number | null;
  progress_message: string | null;
}

export function getGenerationStream(sql: Queryable, accountId: string, id: string) {
  return sql<GenerationStreamRow[]>`select * from kiln.get_generation_stream(${accountId}::uuid, ${id}::uuid)`;
}

/** kiln.get_run_streams: the streams of a run's outputs in flight. */
export interface RunStreamRow extends GenerationStreamRow {
  generation_id: string;
  ordinal: number;
  prompt_node_id: string;
  output_node_id: string;
}

export function getRunStreams(sql: Queryable, accountId: string, runId: string) {
  return sql<RunStreamRow[]>`select * from kiln.get_run_streams(${accountId}::uuid, ${runId}::uuid)`;
}
