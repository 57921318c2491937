// kiln.stream_generation: one coalesced flush of a running generation (text, a preview, progress),
// NOTIFYed to the API processes; kiln.cut_generation_stream: its execution was cut off.

import type { Queryable } from '../pool.ts';

export interface StreamFlush {
  id: string;
  workerId: string;
  /** The session this worker writes, or 0 / -N to begin one (after session N). */
  session: number;
  /** Characters (code points) already written in the session. */
  offset: number;
  text: string;
  preview: { i: number; path: string; type: string } | null;
  progress: { p: number | null; m: string | null } | null;
}

/** The session written (> 0), 0 when the worker may not stream this generation, -1 to begin again. */
export function streamGeneration(sql: Queryable, f: StreamFlush) {
  return sql<Array<{ session: number }>>`
    select kiln.stream_generation(${f.id}::uuid, ${f.workerId}, ${f.session}::int, ${f.offset}::int, ${f.text},
      ${f.preview ? JSON.stringify(f.preview) : null}::text::jsonb, ${f.progress ? JSON.stringify(f.progress) : null}::text::jsonb) as session`;
}

export function cutGenerationStream(sql: Queryable, id: string, workerId: string) {
  return sql`select kiln.cut_generation_stream(${id}::uuid, ${workerId})`;
}

/** kiln.stream_generations: the text and progress flushes of many generations in one call; each one's session, in order. */
export function streamGenerations(sql: Queryable, workerId: string, flushes: StreamFlush[]) {
  return sql<Array<{ sessions: number[] }>>`
    select kiln.stream_generations(${flushes.map((f) => f.id)}::uuid[], ${workerId}, ${flushes.map((f) => f.session)}::int[],
      ${flushes.map((f) => f.offset)}::int[], ${flushes.map((f) => f.text)}::text[],
      ${flushes.map((f) => (f.progress ? JSON.stringify(f.progress) : null))}::text[]::jsonb[]) as sessions`;
}
