// Output while it is written (docs/console.md, "Streaming output"; docs/api.md, "Waiting and live events"): the
// event streams of a generation and of a run with their `delta`, `preview`, `progress` and `reset`
// events, which kiln/client's `watch` skips. Read with fetch, as the client reads them (an API key
// cannot go in an EventSource), through the client's own request layer (its key or session, its
// retries), and resumed with Last-Event-ID after a dropped connection. Also what one output shows
// while it is written, and a state whose renders wait for the next animation frame.

import { useEffect, useRef, useState } from 'preact/hooks';
import { follow, type SseMessage, type WatchOptions } from '../../client/events.ts';
import { retryOptions } from '../../client/retry.ts';
import { KilnError, type Generation, type KilnClient } from './api.ts';

type Run = Awaited<ReturnType<KilnClient['runs']['get']>>;
type RunResult = Run['results'][number];

export interface Delta { text: string; offset: number }
export interface Preview { index: number; url: string; mediaType: string }
export interface OutputProgress { percent: number | null; message: string | null }
export interface Reset { attempt: number }
export interface OutputIds { promptNodeId: string; outputNodeId: string }

/** What a stream says about the output being written (of a generation, or of one output of a run). */
export type WritingEvent =
  | { event: 'delta'; data: Delta }
  | { event: 'preview'; data: Preview }
  | { event: 'progress'; data: OutputProgress }
  | { event: 'reset'; data: Reset };

export type GenerationStreamEvent =
  | { id: string; event: 'status'; data: Generation; terminal: boolean }
  | (WritingEvent & { id: string; terminal: false });

/**
 * An event of a run's stream. `progress` is the run's `{ total, completed }`; an output's provider
 * progress (with its node ids) is the wire's `output.progress`, `output-progress` here.
 */
export type RunStreamEvent =
  | { id: string; event: 'status'; data: Run; terminal: boolean }
  | { id: string; event: 'output'; data: RunResult; terminal: false }
  | { id: string; event: 'progress'; data: Run['progress']; terminal: false }
  | { id: string; event: 'delta'; data: Delta & OutputIds; terminal: false }
  | { id: string; event: 'preview'; data: Preview & OutputIds; terminal: false }
  | { id: string; event: 'output-progress'; data: OutputProgress & OutputIds; terminal: false }
  | { id: string; event: 'reset'; data: Reset & OutputIds; terminal: false };

const SETTLED = new Set(['completed', 'failed']);
/** As the console's client (api.ts): three drops in a row with no event between them end the watch. */
const RETRY = retryOptions({ maxAttempts: 3 });
const HEADERS = { accept: 'text/event-stream' };

async function body(call: Promise<{ data?: unknown; error?: unknown; response: Response }>): Promise<ReadableStream<Uint8Array>> {
  const { data, error, response } = await call;
  if (!response.ok) throw KilnError.from(response, error);
  if (!(data instanceof ReadableStream)) throw new KilnError({ status: response.status, type: 'server_error', message: 'The event stream answer had no body.', requestId: response.headers.get('x-request-id') });
  return data as ReadableStream<Uint8Array>;
}

const resume = (last: string | null) => (last === null ? {} : { 'Last-Event-ID': last });

/** GET /generations/{id}/events, every event: statuses (the terminal one last) and the output as it is written. */
export function watchGeneration(client: KilnClient, id: string, opts: WatchOptions = {}): AsyncGenerator<GenerationStreamEvent, void, undefined> {
  return follow<GenerationStreamEvent>({
    retry: RETRY,
    options: opts,
    open: (last, signal) => body(client.raw.GET('/generations/{id}/events', {
      params: { path: { id }, header: resume(last) }, headers: HEADERS, parseAs: 'stream', signal,
    })),
    toEvent(m: SseMessage): GenerationStreamEvent | null {
      if (m.id === null) return null;
      const data = JSON.parse(m.data);
      switch (m.event) {
        case 'status': return { id: m.id, event: 'status', data, terminal: SETTLED.has((data as Generation).status) };
        case 'delta': case 'preview': case 'progress': case 'reset': return { id: m.id, event: m.event, data, terminal: false } as GenerationStreamEvent;
        default: return null;
      }
    },
  });
}

/** GET /workflows/{id}/runs/{runId}/events, every event: the run's, and each output in flight's as it is written. */
export function watchRun(client: KilnClient, workflowId: string, runId: string, opts: WatchOptions = {}): AsyncGenerator<RunStreamEvent, void, undefined> {
  return follow<RunStreamEvent>({
    retry: RETRY,
    options: opts,
    open: (last, signal) => body(client.raw.GET('/workflows/{id}/runs/{runId}/events', {
      params: { path: { id: workflowId, runId }, header: resume(last) }, headers: HEADERS, parseAs: 'stream', signal,
    })),
    toEvent(m: SseMessage): RunStreamEvent | null {
      if (m.id === null) return null;
      const data = JSON.parse(m.data);
      switch (m.event) {
        case 'status': return { id: m.id, event: 'status', data, terminal: SETTLED.has((data as Run).status) };
        case 'progress': return { id: m.id, event: 'progress', data, terminal: false };
        case 'output.progress': return { id: m.id, event: 'output-progress', data, terminal: false };
        case 'output': case 'delta': case 'preview': case 'reset': return { id: m.id, event: m.event, data, terminal: false } as RunStreamEvent;
        default: return null;
      }
    },
  });
}

/** What one output shows while it is written. */
export interface Writing {
  /** This execution's text so far, exactly as written (code fences included). */
  text: string;
  /** Its length in Unicode code points, as offsets count. */
  chars: number;
  /** The execution writing it: 1, or the attempt a `reset` announced. */
  attempt: number;
  /** Text has been written (in this execution or one a reset dropped): the output is code, shown as code even while empty. */
  code: boolean;
  /** The newest partial image. */
  preview: Preview | null;
  progress: OutputProgress | null;
}

export const NOTHING_YET: Writing = { text: '', chars: 0, attempt: 1, code: false, preview: null, progress: null };

/** `text` up to its `n`th code point. */
function firstChars(text: string, n: number): string {
  let i = 0;
  for (let k = 0; k < n && i < text.length; k++) {
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < text.length ? 2 : 1;
  }
  return text.slice(0, i);
}

const codePoints = (text: string) => {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!(c >= 0xdc00 && c <= 0xdfff && i > 0 && text.charCodeAt(i - 1) >= 0xd800 && text.charCodeAt(i - 1) <= 0xdbff)) n++;
  }
  return n;
};

/**
 * The output after one event. A delta goes at its offset (the server sends none twice and leaves
 * no gap, but one that overlaps replaces the overlap rather than repeating it); a reset drops
 * everything shown (but not that the output is code), the following deltas starting again at offset 0.
 */
export function writing(w: Writing, e: WritingEvent): Writing {
  switch (e.event) {
    case 'delta': {
      const { text, offset } = e.data;
      const kept = offset >= w.chars ? w.text : firstChars(w.text, offset);
      const keptChars = Math.min(offset, w.chars);
      return { ...w, text: kept + text, chars: keptChars + codePoints(text), code: w.code || text !== '' };
    }
    case 'preview':
      return w.preview && w.preview.index > e.data.index ? w : { ...w, preview: e.data };
    case 'progress':
      return { ...w, progress: e.data };
    case 'reset':
      // What kind of output it is stays known: code starts over as an empty code view.
      return { ...NOTHING_YET, attempt: e.data.attempt, code: w.code };
  }
}

/**
 * Streamed code as the code view shows it: without the opening fence line a model may write
 * (```tsx) and, once written, its closing fence, which the final result does not have either.
 */
export function shownCode(text: string): string {
  return text.replace(/^\s*(?:`{3,}|~{3,})[^\n`]*\n/, '').replace(/\n\s*(?:`{3,}|~{3,})\s*$/, '\n');
}

/**
 * State whose updates render at most once per animation frame: a burst of events (a resumed
 * stream, a fast model) costs one render and one highlighting pass, not one each. `update` sees
 * the latest value at once; `set` renders now.
 */
export function useFrameState<T>(initial: T): [T, (f: (prev: T) => T) => void, (value: T) => void] {
  const [value, setValue] = useState(initial);
  const latest = useRef(initial);
  const frame = useRef(0);
  useEffect(() => () => cancelAnimationFrame(frame.current), []);
  const update = (f: (prev: T) => T) => {
    latest.current = f(latest.current);
    if (frame.current) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      setValue(latest.current);
    });
  };
  const set = (v: T) => {
    cancelAnimationFrame(frame.current);
    frame.current = 0;
    latest.current = v;
    setValue(v);
  };
  return [value, update, set];
}
