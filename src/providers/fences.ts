// Chat models often wrap code in markdown fences despite being told not to; this unwraps them.

import type { OutputKind } from './types.ts';

const PROSE_KINDS: ReadonlySet<OutputKind> = new Set(['markdown', 'mdx', 'text']);

interface Fence {
  marker: string;
  start: number; // line index of the opening fence
  end: number; // line index of the closing fence
}

function fences(lines: string[]): Fence[] {
  const out: Fence[] = [];
  let open: { marker: string; start: number } | null = null;
  lines.forEach((line, i) => {
    const m = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (!m) return;
    if (!open) {
      // An opening backtick fence's info string may not contain backticks (CommonMark).
      if (m[1]!.startsWith('`') && m[2]!.includes('`')) return;
      open = { marker: m[1]!, start: i };
    } else if (m[1]![0] === open.marker[0] && m[1]!.length >= open.marker.length && m[2]!.trim() === '') {
      out.push({ marker: open.marker, start: open.start, end: i });
      open = null;
    }
  });
  return out;
}

/**
 * A reply that is exactly one fenced block is unwrapped for every kind. For code kinds, a reply
 * with prose around fenced blocks is reduced to the longest block. Markdown-like kinds keep
 * inner fences, which are legitimate content there.
 */
export function stripCodeFences(text: string, kind: OutputKind): string {
  const trimmed = text.trim();
  const lines = trimmed.split(/\r?\n/);
  const blocks = fences(lines);
  if (blocks.length === 0) return trimmed;
  const only = blocks[0]!;
  if (blocks.length === 1 && only.start === 0 && only.end === lines.length - 1) {
    return lines.slice(1, -1).join('\n').trim();
  }
  if (PROSE_KINDS.has(kind)) return trimmed;
  const longest = blocks.reduce((a, b) => (b.end - b.start > a.end - a.start ? b : a));
  return lines.slice(longest.start + 1, longest.end).join('\n').trim();
}
