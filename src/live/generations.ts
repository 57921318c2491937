// Waiting on and streaming one generation: `Prefer: wait` on POST and GET /generations/{id},
// MCP's `waitSeconds`, and GET /generations/{id}/events.

import type { EventStreamMessage } from 'h3';
import type { Caller } from '../auth/access.ts';
import type { Context } from '../context.ts';
import type { GenerationBody } from '../db/sql/get_generations.ts';
import { readGeneration, renderGeneration } from '../generations/service.ts';
import { getGenerationStream, type GenerationStreamRow } from '../db/sql/get_generation_stream.ts';
import { signedUrl } from '../storage/store.ts';
import { hubOf, keyOf, type Notice, type StreamNotice } from './hub.ts';
import { afterChars, charCount } from './text.ts';
import type { Feed } from './stream.ts';
import { isTerminal, waitUntil } from './wait.ts';

/**
 * Waits up to `seconds` for a generation the caller was authorized for to complete or fail.
 * `first` is the state read after `mark` was taken (a stand-in `pending` row right after creating
 * it). Returns the last state read and whether it is terminal.
 */
export function waitForGeneration(
  ctx: Context,
  caller: Caller,
  id: string,
  opts: { mark: number; first: GenerationBody | null; seconds: number; signal?: AbortSignal },
): Promise<{ state: GenerationBody | null; done: boolean }> {
  return waitUntil(ctx, {
    key: keyOf('generation', id.toLowerCase()),
    mark: opts.mark,
    first: opts.first,
    read: () => readGeneration(ctx, caller, id),
    done: (row) => !row || isTerminal(row.status),
    // The notice carries the new status: `processing` is not worth a read.
    relevant: (n) => !n.s || isTerminal(n.s),
    carried: carriedBody,
    ms: opts.seconds * 1000,
    signal: opts.signal,
  });
}

/**
 * The body a generation's status notice carries (kiln_private.tg_generations__notify), so its
 * waiters and streams answer without reading it again; undefined when the notice has none.
 */
export function carriedBody(n: Notice): GenerationBody | undefined {
  const b = n.b as GenerationBody | undefined;
  return b && typeof b === 'object' && b.id === n.id && b.status === n.s ? b : undefined;
}

/** A freshly created generation as its waiter first sees it (nothing has been read yet). */
export function pendingRow(id: string, type: 'image' | 'code'): GenerationBody {
  return { id, status: 'pending', type, result: null, error: null, cost_micros: null };
}

/** Event ids of a generation: its status ordinal. A retry's move back to `pending` is not an event (docs/api.md, "Waiting and live events": one event per status reached). */
const ORDINAL: Record<GenerationBody['status'], number> = { pending: 1, processing: 2, completed: 3, failed: 3 };
export const GENERATION_LAST_EVENT_ID = 3;

/**
 * Where a client of a generation's stream stands: the last status ordinal sent and, while it
 * processes, the session (execution) shown, its characters, its newest preview (index + 1) and
 * progress report. An event's id is this cursor (docs/api.md, "Streaming").
 */
export interface GenerationCursor {
  ord: number;
  session: number;
  chars: number;
  preview: number;
  progress: number;
}

const START: GenerationCursor = { ord: 0, session: 0, chars: 0, preview: 0, progress: 0 };

/** `1`, `2`, `3` for statuses; `2.S.C.P.G` while a session streams. */
export function cursorId(c: GenerationCursor): string {
  return c.ord === 2 && c.session > 0 ? `2.${c.session}.${c.chars}.${c.preview}.${c.progress}` : String(c.ord);
}

/** A Last-Event-ID of a generation's stream; the start for anything else (the stream then starts over). */
export function parseCursor(raw: string | null | undefined): GenerationCursor {
  const m = raw ? /^([0-3])(?:\.(\d{1,9})\.(\d{1,9})\.(\d{1,9})\.(\d{1,9}))?$/.exec(raw.trim()) : null;
  if (!m) {
    // Whole numbers above 3 were never ids; as before, they mean "everything seen".
    return raw && /^\d{1,9}$/.test(raw.trim()) ? { ...START, ord: GENERATION_LAST_EVENT_ID } : START;
  }
  const ord = Number(m[1]);
  if (m[2] === undefined || ord !== 2) return { ...START, ord };
  return { ord, session: Number(m[2]), chars: Number(m[3]), preview: Number(m[4]), progress: Number(m[5]) };
}

/** A generation as its stream reads it: the row, and while it runs, what it has written. */
export interface GenerationState {
  row: GenerationBody | null;
  stream: GenerationStreamRow | null;
}

/** What a running generation has written, as the cursor's session sees it (a cut session is the next one, empty). */
function sessionOf(s: GenerationStreamRow): { session: number; text: string } {
  return s.cut ? { session: s.session + 1, text: '' } : { session: s.session, text: s.text };
}

type Emit = (event: string, data: unknown) => void;

export interface StreamEventOptions {
  /** Added to every event's data (a run's output: its node ids). */
  extra?: Record<string, unknown>;
  /** The event id for the cursor after the event (default: a generation stream's). */
  idOf?: (c: GenerationCursor) => string;
}

/** `c` moved to the start of `session`, and whether the client showed an earlier one (it is then told `reset`). */
function enter(c: GenerationCursor, session: number): [GenerationCursor, boolean] {
  return [{ ...c, session, chars: 0, preview: 0, progress: 0 }, c.session > 0];
}

async function previewEvent(ctx: Context, v: { i: number; path: string; type: string }) {
  return { index: v.i, url: await signedUrl(ctx, v.path), mediaType: v.type };
}

/**
 * The events of a stream state beyond `c` (the row's status first, then the session's text,
 * preview and progress), sent through `emit` with the cursor after each as its id.
 */
export async function streamEvents(ctx: Context, state: GenerationState, c: GenerationCursor, push: (e: EventStreamMessage) => void, opts: StreamEventOptions = {}): Promise<GenerationCursor> {
  let cur = c;
  const { extra, idOf = cursorId } = opts;
  const emit: Emit = (event, data) => push({ id: idOf(cur), event, data: JSON.stringify(extra ? { ...(data as object), ...extra } : data) });
  const s = state.stream;
  if (!s || state.row?.status === 'completed' || state.row?.status === 'failed') return cur;
  const { session, text } = sessionOf(s);
  if (session > cur.session) {
    let reset: boolean;
    [cur, reset] = enter(cur, session);
    if (reset) emit('reset', { attempt: session });
  } else if (session < cur.session) {
    // The text was lost and begun again (a restarted primary): drop what the client shows.
    cur = { ...cur, session, chars: 0, preview: 0, progress: 0 };
    emit('reset', { attempt: session });
  }
  const chars = s.cut ? 0 : s.chars;
  if (chars > cur.chars) {
    const offset = cur.chars;
    cur = { ...cur, chars };
    emit('delta', { text: afterChars(text, offset), offset });
  }
  if (!s.cut && s.preview_index !== null && s.preview_path && s.preview_index + 1 > cur.preview) {
    cur = { ...cur, preview: s.preview_index + 1 };
    emit('preview', await previewEvent(ctx, { i: s.preview_index, path: s.preview_path, type: s.preview_type ?? 'image/png' }));
  }
  if (!s.cut && s.progress_seq > cur.progress) {
    cur = { ...cur, progress: s.progress_seq };
    emit('progress', { percent: s.progress_percent, message: s.progress_message });
  }
  return cur;
}

/**
 * A stream flush as events beyond `c`, or null when it does not follow on from `c` (something was
 * missed: read the state instead).
 */
export async function flushEvents(ctx: Context, x: StreamNotice, c: GenerationCursor, push: (e: EventStreamMessage) => void, opts: StreamEventOptions = {}): Promise<GenerationCursor | null> {
  if (c.ord < 2) return null;
  let cur = c;
  const { extra, idOf = cursorId } = opts;
  const emit: Emit = (event, data) => push({ id: idOf(cur), event, data: JSON.stringify(extra ? { ...(data as object), ...extra } : data) });
  if (x.c) {
    // Cut off: the next session starts empty.
    if (x.e + 1 > cur.session) {
      let reset: boolean;
      [cur, reset] = enter(cur, x.e + 1);
      if (reset) emit('reset', { attempt: x.e + 1 });
    }
    return cur;
  }
  if (x.e < cur.session) return cur; // an older session's last words
  if (x.e > cur.session) {
    // Only a session's first flush (offset 0) can be followed on from.
    if ((x.o ?? 0) !== 0) return null;
    let reset: boolean;
    [cur, reset] = enter(cur, x.e);
    if (reset) emit('reset', { attempt: x.e });
  }
  if (x.t !== undefined && x.o !== undefined) {
    const len = charCount(x.t);
    if (x.o > cur.chars) return null;
    if (x.o + len > cur.chars) {
      const offset = cur.chars;
      cur = { ...cur, chars: x.o + len };
      emit('delta', { text: afterChars(x.t, offset - x.o), offset });
    }
  }
  if (x.v && x.v.i + 1 > cur.preview) {
    cur = { ...cur, preview: x.v.i + 1 };
    emit('preview', await previewEvent(ctx, x.v));
  }
  if (x.g && x.g.n > cur.progress) {
    cur = { ...cur, progress: x.g.n };
    emit('progress', { percent: x.g.p, message: x.g.m });
  }
  return cur;
}

/** A running generation's stream row, when it is running (else nothing to read). */
export async function readStream(ctx: Context, accountId: string, row: GenerationBody | null): Promise<GenerationStreamRow | null> {
  if (!row || (row.status !== 'processing' && row.status !== 'pending')) return null;
  const [s] = await getGenerationStream(ctx.sql, accountId, row.id);
  return s ?? null;
}

/**
 * GET /generations/{id}/events: one `status` event per status the generation reaches (data = the
 * GET body), and while it processes, `delta`, `preview`, `progress` and `reset` events of what it
 * writes (docs/api.md, "Streaming"); the terminal `status` is last. `after` is the client's
 * Last-Event-ID: the stream resumes right after it.
 */
export function generationFeed(ctx: Context, caller: Caller, id: string, after: string | null): Feed<GenerationState, GenerationCursor> {
  return {
    key: keyOf('generation', id),
    cursor: parseCursor(after),
    async read() {
      const row = await readGeneration(ctx, caller, id);
      return { row, stream: await readStream(ctx, caller.accountId, row) };
    },
    // A status notice comes before the flushes of its status (they need it): nothing to read for it.
    carried: (n) => {
      const row = carriedBody(n);
      return row ? { row, stream: null } : undefined;
    },
    async step({ row, stream }, cursor) {
      if (!row) return { events: [], cursor, done: true };
      const events: EventStreamMessage[] = [];
      let cur = cursor;
      const ord = ORDINAL[row.status];
      if (ord > cur.ord) {
        cur = { ...cur, ord };
        events.push({ id: cursorId(cur), event: 'status', data: JSON.stringify(await renderGeneration(ctx, row)) });
      }
      if (cur.ord === 2) cur = await streamEvents(ctx, { row, stream }, cur, (e) => events.push(e));
      return { events, cursor: cur, done: cur.ord === GENERATION_LAST_EVENT_ID };
    },
    async take(n, cursor) {
      const events: EventStreamMessage[] = [];
      const cur = await flushEvents(ctx, n.x!, cursor, (e) => events.push(e));
      return cur ? { events, cursor: cur } : null;
    },
  };
}

/** `partial` of a processing generation's GET body: what it has written so far, if anything. */
export async function partialOf(ctx: Context, accountId: string, row: GenerationBody): Promise<{ text?: string; previewUrl?: string } | undefined> {
  if (row.status !== 'processing') return undefined;
  const s = await readStream(ctx, accountId, row);
  if (!s || s.cut) return undefined;
  if (s.preview_path) return { previewUrl: await signedUrl(ctx, s.preview_path) };
  return s.chars > 0 ? { text: s.text } : undefined;
}

/** The longest `message` of an MCP progress notification: the tail of the latest text. */
const PROGRESS_MESSAGE_CHARS = 2_000;

/**
 * While an MCP tool call waits on a generation or a run (`key`), reports each flush of what it
 * writes as progress (docs/mcp.md, "Progress"): `progress` counts the characters written so far
 * (previews count one each; it keeps growing across a `reset`), `message` is the latest text (or
 * the provider's progress message). Returns the stop.
 */
export function reportProgress(ctx: Context, key: string, report: (progress: number, message?: string) => void): () => void {
  let total = 0;
  return hubOf(ctx).watch(key, (n) => {
    const x = n?.x;
    if (!x) return;
    let message: string | undefined;
    if (x.t) {
      total += charCount(x.t);
      message = x.t.length > PROGRESS_MESSAGE_CHARS ? x.t.slice(-PROGRESS_MESSAGE_CHARS) : x.t;
    } else if (x.v) {
      total += 1;
      message = `preview ${x.v.i + 1}`;
    } else if (x.g) {
      total += 1;
      message = x.g.m ?? (x.g.p !== null ? `${x.g.p}%` : undefined);
    } else if (x.c) {
      total += 1;
      message = 'the model started over';
    } else {
      return;
    }
    report(total, message);
  });
}
