// Schemas of the wait and event-stream additions (request headers, the event-stream body and its
// events), for the OpenAPI document and MCP tool arguments.

import * as v from 'valibot';
import { GenerationStatus } from '../generations/schemas.ts';
import { registerSchemas } from '../schemas.ts';
import { Progress, WorkflowRun, WorkflowRunResult } from '../workflows/schemas.ts';
import { MAX_WAIT_SECONDS } from './wait.ts';

/** MCP tools wait at most this long, so one call stays inside a client's usual 60 s timeout. */
export const MAX_TOOL_WAIT_SECONDS = 50;

export const PreferWait = v.pipe(
  v.string(),
  v.description(
    `\`wait=N\` (RFC 7240), 1 ≤ N ≤ ${MAX_WAIT_SECONDS}: wait up to N seconds for the job or run to settle before answering. ` +
      'Other preferences are ignored, and so is a `wait` outside 1–60 (the request is answered as without it). ' +
      'When honoured, the response carries `preference-applied: wait=N`.',
  ),
);

export const LastEventId = v.pipe(
  v.string(),
  v.description('The `id` of the last event received, to resume a stream after a disconnect: events up to it are not sent again. Not a whole number: the stream starts over.'),
);

export const EventStreamText = v.pipe(v.string(), v.description('Server-sent events (`text/event-stream`).'));

const streamId = v.pipe(v.string(), v.description('The event\'s `id`: send it as `Last-Event-ID` to resume after it.'));

const streamingId = v.pipe(
  v.string(),
  v.description('`2.S.C.P.G` (session, characters, previews and progress reports seen): send it as `Last-Event-ID` to resume right after this event.'),
);

export const StreamDelta = v.pipe(
  v.object({
    text: v.pipe(v.string(), v.description('The next piece of output text, exactly as the provider wrote it (code fences included).')),
    offset: v.pipe(v.number(), v.integer(), v.minValue(0), v.description('Characters (Unicode code points) of output text before this piece, in this execution.')),
  }),
  v.description('Output text as it is written. The deltas after a `reset` (or from the start) concatenate to the text the provider wrote.'),
);
export const StreamPreview = v.pipe(
  v.object({
    index: v.pipe(v.number(), v.integer(), v.minValue(0), v.description('Which partial image, from 0.')),
    url: v.pipe(v.string(), v.description('A signed URL to the partial image, as result URLs are.')),
    mediaType: v.string(),
  }),
  v.description('A partial image, for models whose catalog entry asks for them.'),
);
export const StreamProgress = v.pipe(
  v.object({
    percent: v.pipe(v.nullable(v.pipe(v.number(), v.minValue(0), v.maxValue(100))), v.description('0–100 when the provider says, else null.')),
    message: v.pipe(v.nullable(v.string()), v.description('The provider\'s latest status or log line, when it gives one.')),
  }),
  v.description('Queue status or progress from the provider.'),
);
export const StreamReset = v.pipe(
  v.object({ attempt: v.pipe(v.number(), v.integer(), v.minValue(1), v.description('The execution that follows (1, 2, …).')) }),
  v.description('The execution was cut off (a crash, a retry, a fallback model) and the output starts again: drop what was shown; offsets start at 0.'),
);

export const GenerationStreamItem = v.pipe(
  v.variant('event', [
    v.pipe(
      v.object({
        event: v.literal('status'),
        id: v.pipe(v.picklist(['1', '2', '3']), v.description('1 pending, 2 processing, 3 completed or failed (the last event).')),
        data: GenerationStatus,
      }),
      v.description('A status the generation reached: the `GET /generations/{id}` body.'),
    ),
    v.object({ event: v.literal('delta'), id: streamingId, data: StreamDelta }),
    v.object({ event: v.literal('preview'), id: streamingId, data: StreamPreview }),
    v.object({ event: v.literal('progress'), id: streamingId, data: StreamProgress }),
    v.object({ event: v.literal('reset'), id: streamingId, data: StreamReset }),
  ]),
  v.description('One event of `GET /generations/{id}/events`, its `data` line parsed as JSON.'),
);

const outputNodes = {
  promptNodeId: v.pipe(v.string(), v.description('The prompt node writing the output.')),
  outputNodeId: v.pipe(v.string(), v.description('The output node it fills.')),
};
export const OutputDelta = v.pipe(v.object({ ...StreamDelta.entries, ...outputNodes }), v.description('An output in flight: its text as it is written (see `StreamDelta`).'));
export const OutputPreview = v.pipe(v.object({ ...StreamPreview.entries, ...outputNodes }), v.description('An output in flight: a partial image.'));
export const OutputProgress = v.pipe(v.object({ ...StreamProgress.entries, ...outputNodes }), v.description('An output in flight: the provider\'s progress.'));
export const OutputReset = v.pipe(v.object({ ...StreamReset.entries, ...outputNodes }), v.description('An output in flight starts over: drop its text.'));

export const WorkflowRunStreamItem = v.pipe(
  v.variant('event', [
    v.pipe(
      v.object({ event: v.literal('status'), id: streamId, data: WorkflowRun }),
      v.description('The run while pending or running, and last, once completed or failed: the `GET /workflows/{id}/runs/{runId}` body.'),
    ),
    v.pipe(v.object({ event: v.literal('output'), id: streamId, data: WorkflowRunResult }), v.description('An output as it settles: its entry of `results`.')),
    v.pipe(v.object({ event: v.literal('progress'), id: streamId, data: Progress }), v.description('The progress after each settled output.')),
    v.pipe(
      v.object({ event: v.literal('output.progress'), id: streamId, data: OutputProgress }),
      v.description('An output in flight: its provider\'s progress (a generation stream\'s `progress` event, with the node ids).'),
    ),
    v.object({ event: v.literal('delta'), id: streamId, data: OutputDelta }),
    v.object({ event: v.literal('preview'), id: streamId, data: OutputPreview }),
    v.object({ event: v.literal('reset'), id: streamId, data: OutputReset }),
  ]),
  v.description('One event of `GET /workflows/{id}/runs/{runId}/events`, its `data` line parsed as JSON.'),
);

registerSchemas({ GenerationStreamItem, WorkflowRunStreamItem, StreamDelta, StreamPreview, StreamProgress, StreamReset, OutputDelta, OutputPreview, OutputProgress, OutputReset });

export const WaitSeconds = v.pipe(
  v.number(),
  v.integer(),
  v.minValue(0),
  v.maxValue(MAX_TOOL_WAIT_SECONDS),
  v.description(`Wait up to this many seconds (0–${MAX_TOOL_WAIT_SECONDS}, default 0) for the job or run to complete or fail before answering; the answer is its state then.`),
);

export const PREFERENCE_APPLIED = 'When `Prefer: wait=N` was honoured: `wait=N`.';
