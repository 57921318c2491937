// A small syntax highlighter for generated code (comments, strings, keywords, numbers, tags):
// enough to read TSX, CSS, HTML, SVG, JSON and GLSL at a glance, in ~1 KB instead of a library.

import type { JSX } from 'preact';

const TOKEN = new RegExp([
  String.raw`(\/\*[\s\S]*?\*\/|\/\/[^\n]*|<!--[\s\S]*?-->|#[^\n{]*$)`, // comment
  String.raw`("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|\`(?:[^\`\\]|\\.)*\`)`, // string
  String.raw`(<\/?[A-Za-z][\w.:-]*|\/?>)`, // tag
  String.raw`\b(import|export|from|default|const|let|var|function|return|if|else|for|while|do|switch|case|break|continue|new|class|extends|interface|type|enum|async|await|yield|try|catch|finally|throw|typeof|instanceof|in|of|as|void|null|undefined|true|false|this|uniform|float|vec2|vec3|vec4|int|bool)\b`, // keyword
  String.raw`(\b\d+(?:\.\d+)?(?:px|rem|em|%|s|ms)?\b|#[0-9a-fA-F]{3,8}\b)`, // number
].join('|'), 'gm');

const CLASSES = ['c', 's', 't', 'k', 'n'];

/**
 * `code` highlighted. While it is still `writing` (a stream), a caret ends it and the block is
 * aria-busy; streamed code re-renders at most once an animation frame (live.ts, useFrameState).
 */
export function Highlighted({ code, writing }: { code: string; writing?: boolean }) {
  const out: Array<string | JSX.Element> = [];
  let last = 0;
  let i = 0;
  for (const m of code.matchAll(TOKEN)) {
    if (m.index! > last) out.push(code.slice(last, m.index));
    const group = m.slice(1).findIndex((g) => g !== undefined);
    out.push(<span key={i++} class={`tok-${CLASSES[group] ?? 'x'}`}>{m[0]}</span>);
    last = m.index! + m[0].length;
    if (i > 20_000) break;
  }
  out.push(code.slice(last));
  return (
    <pre class={writing ? 'code writing' : 'code'} tabIndex={0} aria-busy={writing ? 'true' : undefined}>
      <code>{out}{writing && <span class="caret" aria-hidden="true" />}</code>
    </pre>
  );
}
