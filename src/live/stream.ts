// Server-sent event streams of a job or run: the state is read again whenever the status hub says
// it may have changed, and `step` turns it into the events the client has not seen yet. Event ids
// are derived from stored state, so a reconnect with Last-Event-ID resumes exactly. At most
// KILN_MAX_STREAMS streams per account are open in one API process.

import { createEventStream, type EventStreamMessage, type H3Event } from 'h3';
import type { Context } from '../context.ts';
import { ApiError } from '../errors.ts';
import { errorFields } from '../log.ts';
import { hubOf, type Notice } from './hub.ts';
import { onShutdown } from './wait.ts';
import { rootOf } from '../root.ts';

/** A comment line this often keeps proxies from closing an idle stream. */
export const HEARTBEAT_MS = 15_000;

export interface Feed<S, C> {
  /** The hub key watched (hub.ts keyOf). */
  key: string;
  /** Where the client left off (from Last-Event-ID), or the start. */
  cursor: C;
  /** The state now (no authorization: the stream was authorized once, when it opened). */
  read(): Promise<S>;
  /** The state a notice carries, when it carries all of it: then no read is needed. */
  carried?(notice: Notice): S | undefined;
  /** The events a state holds beyond `cursor`, the cursor after them, and whether nothing can follow. */
  step(state: S, cursor: C): Promise<{ events: EventStreamMessage[]; cursor: C; done: boolean }>;
  /** After a step: read again in this many ms even without a notice (null: wait for one). */
  again?(): number | null;
  /**
   * A stream flush (a notice with `x`) as events beyond `cursor`, in the order the flushes were
   * written; null when it cannot be applied to the cursor (a gap): the state is read instead.
   * Without it, flushes are ignored.
   */
  take?(notice: Notice, cursor: C): Promise<{ events: EventStreamMessage[]; cursor: C } | null>;
}

/** Notices kept for one stream before they are replaced by one read of the state. */
const MAX_QUEUED = 256;

/** What a client over the stream limit is told to wait (a stream's end cannot be predicted). */
const STREAM_RETRY_SECONDS = 5;

const open = new WeakMap<Context, Map<string, number>>();

/** Streams open now per account in this process (tests and the benchmark). */
export function openStreams(ctx: Context, accountId: string): number {
  return open.get(rootOf(ctx))?.get(accountId) ?? 0;
}

/**
 * Opens a stream for an authorized account, or throws 429 rate_limited when the account already
 * has KILN_MAX_STREAMS open here. The stream ends after the event `step` calls final, when the
 * client goes away, or when the server shuts down (the client then reconnects with Last-Event-ID).
 */
export function openEventStream<S, C>(ctx: Context, event: H3Event, accountId: string, feed: Feed<S, C>) {
  let counts = open.get(rootOf(ctx));
  if (!counts) open.set(rootOf(ctx), (counts = new Map()));
  const n = counts.get(accountId) ?? 0;
  if (n >= ctx.config.maxStreams) {
    throw new ApiError('rate_limited', `Too many open event streams for this account (at most ${ctx.config.maxStreams} per server). Close one, or retry after ${STREAM_RETRY_SECONDS} seconds.`, {
      headers: { 'retry-after': String(STREAM_RETRY_SECONDS) },
    });
  }
  counts.set(accountId, n + 1);
  const stream = createEventStream(event);
  void run(ctx, stream, feed).finally(() => {
    const left = (counts!.get(accountId) ?? 1) - 1;
    if (left > 0) counts!.set(accountId, left);
    else counts!.delete(accountId);
  });
  return stream;
}

async function run<S, C>(ctx: Context, stream: ReturnType<typeof createEventStream>, feed: Feed<S, C>): Promise<void> {
  const hub = hubOf(ctx);
  // Notices in the order they came (null: read the state). Flushes must each be applied; of the
  // rest only the newest matters, but they keep their place after the flushes before them.
  const queue: Array<Notice | null> = [null];
  let closed = false;
  let wake: (() => void) | null = null;
  // Registered before the first read: nothing that happens after it can be missed.
  const off = hub.watch(feed.key, (n) => {
    if (n?.x && !feed.take) return;
    // A client that reads slower than notices come: one read of the state replaces them (events
    // are cut from the state by the cursor, so nothing is lost or repeated).
    if (queue.length >= MAX_QUEUED) queue.splice(0, queue.length, null);
    else queue.push(n);
    wake?.();
  });
  const end = () => {
    closed = true;
    wake?.();
  };
  stream.onClosed(end);
  const offShutdown = onShutdown(ctx.shutdown, end);
  const heartbeat = setInterval(() => void stream.pushComment('keep-alive'), HEARTBEAT_MS);
  let cursor = feed.cursor;
  let poll: NodeJS.Timeout | undefined;
  try {
    while (!closed && !ctx.shutdown.aborted) {
      const n = queue.shift();
      if (n === undefined) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        continue;
      }
      if (n?.x) {
        const taken = await feed.take!(n, cursor);
        if (taken) {
          cursor = taken.cursor;
          if (taken.events.length) await stream.push(taken.events);
          continue;
        }
      } else if (queue.length && !queue[0]?.x) {
        // A newer state notice (or a read) is next: it decides.
        continue;
      }
      const carried = n && !n.x && feed.carried ? feed.carried(n) : undefined;
      const state = carried !== undefined ? carried : await feed.read();
      const { events, cursor: next, done } = await feed.step(state, cursor);
      cursor = next;
      if (events.length) await stream.push(events);
      if (done) break;
      const ms = feed.again?.() ?? null;
      if (ms !== null) {
        if (ms <= 0) queue.push(null);
        else {
          clearTimeout(poll);
          poll = setTimeout(() => {
            queue.push(null);
            wake?.();
          }, ms);
        }
      }
    }
  } catch (e) {
    // The client reconnects with Last-Event-ID and resumes where this stream stopped.
    ctx.log.warn('event stream: reading the state failed; closing the stream', errorFields(e));
  } finally {
    off();
    clearTimeout(poll);
    clearInterval(heartbeat);
    offShutdown();
    await stream.close();
  }
}

/** A Last-Event-ID header as a non-negative integer, or null when absent or not one (then the stream starts over). */
export function lastEventId(event: H3Event): number | null {
  const raw = event.req.headers.get('last-event-id')?.trim();
  return raw && /^\d{1,9}$/.test(raw) ? Number(raw) : null;
}
