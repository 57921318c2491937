// What the user commands print. On a terminal: a block of lines redrawn in place (status, elapsed
// time, cost). Anywhere else (pipes, CI, `--json`): one JSON document per line, nothing redrawn.

import type { Writable } from 'node:stream';

/** Whether to draw for a person: stdout is a terminal and `--json` was not asked for. */
export function interactive(json: boolean | undefined): boolean {
  return !json && process.stdout.isTTY === true;
}

export function jsonLine(out: Writable, value: unknown): void {
  out.write(JSON.stringify(value) + '\n');
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const color = !process.env.NO_COLOR;
const paint = (code: number, s: string) => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
export const green = (s: string) => paint(32, s);
export const red = (s: string) => paint(31, s);
export const dim = (s: string) => paint(2, s);

/** A block of lines redrawn in place, with a spinner frame that advances on its own. */
export class LiveBlock {
  private drawn = 0;
  private frame = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  private closed = false;

  /** `render(spinner)` gives the block's lines now; it is called again every `tickMs`. */
  constructor(private out: NodeJS.WriteStream, private render: (spinner: string) => string[], tickMs = 100) {
    out.write('\x1b[?25l'); // hide the cursor while redrawing
    this.draw();
    this.timer = setInterval(() => {
      this.frame = (this.frame + 1) % FRAMES.length;
      this.draw();
    }, tickMs);
  }

  draw(final = false): void {
    if (this.closed) return;
    const width = Math.max(20, (this.out.columns || 80) - 1);
    // Lines longer than the terminal would wrap and break the cursor arithmetic of the next
    // redraw: cut them. The last drawing is never redrawn, so it is shown whole.
    let lines = this.render(FRAMES[this.frame]!).map((l) => (final ? l : truncate(l, width)));
    // So are lines past the terminal's height (cursor-up stops at the top row, and every redraw
    // would leave a copy in the scrollback): at most rows − 1 of them, the last saying how many
    // were left out.
    const rows = Math.max(3, this.out.rows || 24);
    if (!final && lines.length > rows - 1) {
      const shown = rows - 2;
      lines = [...lines.slice(0, shown), dim(`+${lines.length - shown} more`)];
    }
    let text = this.drawn ? `\x1b[${this.drawn}A` : '';
    for (const line of lines) text += `\r\x1b[2K${line}\n`;
    // A shorter block than last time: clear what is left below it.
    for (let i = lines.length; i < this.drawn; i++) text += '\r\x1b[2K\n';
    if (this.drawn > lines.length) text += `\x1b[${this.drawn - lines.length}A`;
    this.drawn = lines.length;
    this.out.write(text);
  }

  /** Draws once more (the final state) and stops redrawing; the lines stay on screen. */
  close(): void {
    if (this.closed) return;
    this.draw(true);
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.out.write('\x1b[?25h');
  }
}

/** Cuts a line to `width` visible characters, keeping its color codes intact. */
function truncate(line: string, width: number): string {
  let visible = 0;
  let out = '';
  for (let i = 0; i < line.length; i++) {
    const esc = /^\x1b\[[0-9;?]*[A-Za-z]/.exec(line.slice(i));
    if (esc) {
      out += esc[0];
      i += esc[0].length - 1;
      continue;
    }
    if (visible === width) return out + (color ? '\x1b[0m' : '');
    out += line[i];
    visible++;
  }
  return out;
}

/** Microdollars as dollars, exactly (`17` → `$0.000017`). */
export function dollars(micros: number | null | undefined): string {
  if (micros == null) return '—';
  const m = Math.round(micros);
  const whole = Math.floor(Math.abs(m) / 1_000_000);
  const frac = String(Math.abs(m) % 1_000_000).padStart(6, '0');
  return `${m < 0 ? '-' : ''}$${whole}.${frac}`;
}

export function elapsed(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}
