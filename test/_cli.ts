// Helpers for the user CLI tests: `kiln <user command>` as a child process (no terminal, or on a
// pseudo-terminal through script(1)), its JSON lines, and a small terminal emulator that replays
// what was drawn to the screen it leaves.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { onCleanup } from './_setup.ts';

export const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON lines (throws on a line that is not JSON). */
  lines: any[];
}

export interface RunningCli {
  child: ChildProcess;
  /** stdout so far. */
  stdout(): string;
  /** Resolves with the first JSON line on stdout matching `pred`. */
  line(pred: (l: any) => boolean, timeoutMs?: number): Promise<any>;
  done: Promise<CliResult>;
}

export interface CliOptions {
  cwd?: string;
  timeoutMs?: number;
  /** `ulimit -f`: files the command writes fail (EFBIG) past this many 512-byte blocks. */
  fileBlocks?: number;
}

/** Starts `kiln ARGS` with `env` (no terminal: stdin ignored, stdout and stderr piped). */
export function startCli(args: string[], env: Record<string, string>, opts: CliOptions = {}): RunningCli {
  const [file, argv] = opts.fileBlocks === undefined
    ? [process.execPath, [BIN, ...args]]
    : ['/bin/sh', ['-c', `ulimit -f ${opts.fileBlocks} && exec "$@"`, 'sh', process.execPath, BIN, ...args]];
  const child = spawn(file, argv, {
    cwd: opts.cwd,
    env: { ...process.env, KILN_LOG: 'silent', NO_COLOR: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters: Array<() => void> = [];
  child.stdout!.on('data', (b) => { out += b; waiters.splice(0).forEach((w) => w()); });
  child.stderr!.on('data', (b) => { err += b; });
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  const done = new Promise<CliResult>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      waiters.splice(0).forEach((w) => w());
      // Parsed when read: a command whose stdout is not JSON lines (`generate code --stream`) has none.
      resolve({ code, signal, stdout: out, stderr: err, get lines() { return jsonLines(out, err); } });
    });
  });
  onCleanup(async () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  return {
    child,
    stdout: () => out,
    done,
    async line(pred, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        // Complete lines only: a chunk may end mid-line.
        const hit = out.slice(0, out.lastIndexOf('\n') + 1).split('\n').filter(Boolean).map((l) => JSON.parse(l)).find(pred);
        if (hit) return hit;
        if (child.exitCode !== null || Date.now() > end) throw new Error(`no matching line; stdout: ${out}\nstderr: ${err}`);
        await Promise.race([new Promise<void>((r) => waiters.push(r)), new Promise((r) => setTimeout(r, 200))]);
      }
    },
  };
}

export function cli(args: string[], env: Record<string, string>, opts: CliOptions = {}): Promise<CliResult> {
  return startCli(args, env, opts).done;
}

function jsonLines(stdout: string, stderr: string): any[] {
  return stdout.split('\n').filter(Boolean).map((l) => {
    try {
      return JSON.parse(l);
    } catch {
      throw new Error(`not a JSON line: ${JSON.stringify(l)}\nstderr: ${stderr}`);
    }
  });
}

/** A fresh empty directory (removed after the file's tests). */
export function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-cli-'));
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * `kiln ARGS` on a pseudo-terminal: script(1) gives it a tty for stdin, stdout and stderr and
 * copies everything drawn to our pipe. Resolves with the raw bytes and the exit code.
 */
export function cliOnTty(args: string[], env: Record<string, string>, opts: { cwd?: string; timeoutMs?: number } = {}): Promise<{ code: number | null; raw: string }> {
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  const child = spawn('/usr/bin/script', ['-qfec', command, '/dev/null'], {
    cwd: opts.cwd,
    env: { ...process.env, KILN_LOG: 'silent', TERM: 'xterm', COLUMNS: '100', LINES: '30', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let raw = '';
  child.stdout!.on('data', (b) => { raw += b; });
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  onCleanup(async () => { if (child.exitCode === null) child.kill('SIGKILL'); });
  return new Promise((resolve) => child.on('close', (code) => { clearTimeout(timer); resolve({ code, raw }); }));
}

/**
 * Replays terminal output onto a screen and returns its non-empty lines, as a person would see
 * them at the end: printable text, CR, LF, cursor up (ESC[nA), erase line (ESC[2K, ESC[K);
 * colors and cursor visibility are ignored. Anything else is an error, so a test notices
 * drawing it does not understand.
 */
export function finalScreen(raw: string): string[] {
  const screen: string[][] = [[]];
  let row = 0;
  let col = 0;
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i]!;
    if (ch === '\x1b') {
      const m = /^\x1b\[([0-9;?]*)([A-Za-z])/.exec(raw.slice(i));
      if (!m) throw new Error(`unknown escape at ${i}: ${JSON.stringify(raw.slice(i, i + 8))}`);
      i += m[0].length - 1;
      const [, arg, cmd] = m;
      if (cmd === 'A') row = Math.max(0, row - Number(arg || 1));
      else if (cmd === 'K') screen[row] = arg === '2' ? [] : screen[row]!.slice(0, col);
      else if (cmd === 'm' || ((cmd === 'l' || cmd === 'h') && arg === '?25')) continue;
      else throw new Error(`unhandled escape ${JSON.stringify(m[0])}`);
      continue;
    }
    if (ch === '\r') col = 0;
    else if (ch === '\n') {
      row++;
      while (screen.length <= row) screen.push([]);
    } else {
      screen[row]![col++] = ch;
    }
  }
  return screen.map((cells) => Array.from(cells, (c) => c ?? ' ').join('').trimEnd()).filter((l) => l !== '');
}
