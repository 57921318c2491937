// What a running generation writes while its provider call streams (docs/api.md, "Streaming"):
// the adapter's text, partial images and progress, coalesced into at most one write per slot of
// a FLUSH_MS grid (kiln.stream_generation: one UPDATE of an unlogged row and its NOTIFYs),
// whatever the provider's chunk rate; the writes of every stream of the process due in one slot
// leave as one call. The first chunk after a quiet spell goes at once; the rest wait for the
// next slot. Writes are serialized, so offsets arrive in order. Nothing here is the record:
// a failed write is retried with the next one, and never fails the generation.

import sharp from 'sharp';
import type { Context } from '../context.ts';
import { perOwner } from '../db/batch.ts';
import { cutGenerationStream, streamGeneration, streamGenerations, type StreamFlush } from '../db/sql/stream_generation.ts';
import { charCount } from '../live/text.ts';
import { errorFields } from '../log.ts';
import type { OutputSink } from '../providers/types.ts';
import { commitObject, isValidPath, stageObject, type ImageFormat } from '../storage/store.ts';
import { countStreamFlush } from '../telemetry/metrics.ts';

/**
 * At most one write per generation per slot of this grid: fewer than ten a second (the first
 * write after a quiet spell and the last one count too, so the slot is a little over 100 ms).
 */
export const FLUSH_MS = 110;
/** A failed write waits this long before the next try. */
const RETRY_MS = 1_000;
/** Progress messages are upstream free text: kept short. */
const MAX_MESSAGE = 200;

/**
 * The flushes of every generation this process streams go out together: writers flush on a
 * shared FLUSH_MS grid, and the flushes that fall due at one tick leave as one
 * kiln.stream_generations call (one round trip whatever the number of streams; BENCH.md,
 * "Streaming"). Previews go one by one (each with its object, in a transaction).
 */
const flusher = perOwner<Context, StreamFlush, number>(1000, (ctx) => async (items) => {
  const byWorker = new Map<string, number[]>();
  items.forEach((f, i) => byWorker.set(f.workerId, [...(byWorker.get(f.workerId) ?? []), i]));
  const out = new Array<{ ok: number }>(items.length);
  for (const [workerId, idx] of byWorker) {
    const [{ sessions }] = await streamGenerations(ctx.sql, workerId, idx.map((i) => items[i]!));
    idx.forEach((i, k) => (out[i] = { ok: sessions[k]! }));
  }
  return out;
}, { maxInFlight: 1 });

const FORMATS: Record<string, ImageFormat> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/webp': 'webp' };

export interface StreamTarget {
  id: string;
  accountId: string;
  runId: string | null;
  workerId: string;
}

export class StreamWriter implements OutputSink {
  /** The session written (0: none begun in this call; the next write begins one). */
  private session = 0;
  /** The highest session this writer has had: a lost row begins again after it. */
  private floor = 0;
  /** Everything written in this session, and what is not written yet. */
  private written = '';
  private chars = 0;
  private pending = '';
  private image: { i: number; data: Buffer; type: string } | null = null;
  private progressed: { p: number | null; m: string | null } | null = null;
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private last = 0;
  /** The worker may not stream this generation (it is not processing under it any more). */
  private off = false;
  private closed = false;

  constructor(private readonly ctx: Context, private readonly target: StreamTarget, private readonly flushMs = FLUSH_MS) {}

  text(chunk: string): void {
    if (!chunk || this.off || this.closed) return;
    this.pending += chunk;
    this.schedule();
  }

  preview(index: number, data: Buffer, mediaType: string): void {
    if (this.off || this.closed || !FORMATS[mediaType]) return;
    this.image = { i: index, data, type: mediaType };
    this.schedule();
  }

  progress(percent: number | null, message: string | null): void {
    if (this.off || this.closed) return;
    const p = percent === null || !Number.isFinite(percent) ? null : Math.max(0, Math.min(100, Math.round(percent)));
    // eslint-disable-next-line no-control-regex
    const m = message === null ? null : message.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim().slice(0, MAX_MESSAGE) || null;
    this.progressed = { p, m };
    this.schedule();
  }

  restart(): void {
    if (this.session === 0 && !this.pending && !this.written) return;
    // The next write begins a new session; clients drop this one then.
    this.session = 0;
    this.written = '';
    this.chars = 0;
    this.pending = '';
    this.image = null;
    this.progressed = null;
    this.restarted = true;
  }

  /** A restart with nothing written since: the next write begins a session even when empty. */
  private restarted = false;

  /** Writes what is left (before the generation completes: its terminal status follows the last delta). */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.writing) await this.writing;
    if (!this.off && this.dirty()) await this.write();
    this.closed = true;
  }

  /** Nothing more is written (the execution ended, whatever way). */
  dispose(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** The execution failed and the generation runs again: clients drop what they showed now. */
  async cut(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.writing) await this.writing;
    if (this.floor === 0 || this.off) return;
    await cutGenerationStream(this.ctx.sql, this.target.id, this.target.workerId).catch((e) => {
      this.ctx.log.warn('could not mark a generation\'s stream cut off', { generation: this.target.id, ...errorFields(e) });
    });
  }

  /** Something waits to be written. */
  private dirty(): boolean {
    return !!(this.pending || this.image || this.progressed || (this.restarted && this.session === 0));
  }

  /** Whether anything was written (tests). */
  get sessions(): number {
    return this.floor;
  }

  private schedule(): void {
    if (this.timer || this.writing || this.closed) return;
    const now = Date.now();
    // After a quiet spell: at once. Otherwise at the first tick of the shared grid at least
    // flushMs after the last write, with every other stream due then (one call for them all).
    const due = this.last + this.flushMs;
    const slot = due <= now ? null : Math.ceil(due / this.flushMs) * this.flushMs;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.write(slot);
    }, slot === null ? 0 : slot - now);
  }

  /** `slot`: the grid tick it was scheduled for (a timer may fire a millisecond before it). */
  private write(slot: number | null = null): Promise<void> {
    // The grid slot this write belongs to: the next one goes at the next slot (at most one a slot).
    this.last = slot ?? Math.floor(Date.now() / this.flushMs) * this.flushMs;
    const w = this.writeOnce().finally(() => {
      this.writing = null;
      if (!this.closed && this.dirty()) this.schedule();
    });
    this.writing = w;
    return w;
  }

  private async writeOnce(): Promise<void> {
    let text = this.pending;
    // Never split a character: a high surrogate waits for its other half.
    const lastCode = text.charCodeAt(text.length - 1);
    if (lastCode >= 0xd800 && lastCode <= 0xdbff && !this.closed) text = text.slice(0, -1);
    const preview = this.image;
    const progress = this.progressed;
    if (!text && !preview && !progress && !(this.restarted && this.session === 0)) return;
    this.pending = this.pending.slice(text.length);
    this.image = null;
    this.progressed = null;
    try {
      const stored = preview ? await this.storePreview(preview) : null;
      const begin = this.session === 0;
      // A session begins with everything it has so far (after a lost row: the whole text again).
      const flush: StreamFlush = {
        id: this.target.id, workerId: this.target.workerId,
        session: begin ? -this.floor : this.session,
        offset: begin ? 0 : this.chars,
        text: begin ? this.written + text : text,
        preview: stored?.preview ?? null, progress,
      };
      const session = stored
        ? (await this.ctx.sql.begin(async (tx) => {
          await commitObject(tx, stored.staged);
          return streamGeneration(tx, flush);
        }))[0]!.session
        : await flusher(this.ctx).add(flush);
      countStreamFlush();
      if (session === 0) {
        // Not processing under this worker any more: nothing more is written.
        this.off = true;
        return;
      }
      this.written += text;
      if (session === -1) {
        // The row was lost or taken over: begin again (a takeover then refuses the begin).
        this.session = 0;
        this.restarted = true;
        return;
      }
      this.restarted = false;
      this.session = session;
      this.floor = Math.max(this.floor, session);
      this.chars = begin ? charCount(this.written) : this.chars + charCount(text);
    } catch (e) {
      // Put it back: the next write carries it.
      this.pending = text + this.pending;
      this.image ??= preview;
      this.progressed ??= progress;
      this.last = Date.now() + RETRY_MS - this.flushMs;
      this.ctx.log.warn('could not write a generation\'s streamed output; trying again', { generation: this.target.id, ...errorFields(e) });
    }
  }

  /** A partial image, stored under the generation's path as a private object. */
  private async storePreview(p: { i: number; data: Buffer; type: string }) {
    const format = FORMATS[p.type]!;
    const meta = await sharp(p.data, { limitInputPixels: 100_000_000 }).metadata();
    const dir = this.target.runId ? `workflows/${this.target.runId}` : 'generations';
    const path = `${this.target.accountId}/${dir}/${this.target.id}/preview-${p.i}.${format === 'jpeg' ? 'jpg' : format}`;
    if (!isValidPath(path)) throw new TypeError('invalid preview path');
    const staged = await stageObject(this.ctx, {
      path, owner: this.target.accountId, data: p.data, contentType: p.type, format,
      width: meta.width ?? 0, height: meta.height ?? 0, visibility: 'private',
    });
    return { staged, preview: { i: p.i, path, type: p.type } };
  }
}
