// One output while it is written (docs/console.md, "Streaming output"): the code so far,
// highlighted, with a caret; or the newest partial image; the provider's progress; and, after a
// reset, a notice that the model started over (code: over an empty code view with its caret).

import type { ComponentChildren } from 'preact';
import { Highlighted } from './highlight.tsx';
import { shownCode, type Writing } from './live.ts';

/**
 * `code`: the page knows the output is code (the request's type). Code that a reset emptied stays
 * a code view (empty, with the caret) until the next attempt writes: `empty` (a placeholder) is
 * for an output nothing has been written to yet.
 */
export function WritingView({ w, alt, empty, code }: { w: Writing | null; alt: string; empty?: ComponentChildren; code?: boolean }) {
  const p = w?.progress;
  const startedOver = !!w && w.attempt > 1 && (code || w.code);
  return (
    <div class="writing-view" data-attempt={w?.attempt ?? 1}>
      {w && w.attempt > 1 && (
        <p class="notice info writing-reset" role="status">The model started over (attempt {w.attempt}); what it had written is dropped.</p>
      )}
      {p && (p.percent !== null || p.message) && (
        <div class="writing-progress">
          {p.percent !== null && (
            <div class="bar" role="progressbar" aria-label="Progress" aria-valuemin={0} aria-valuemax={100} aria-valuenow={p.percent}>
              <span style={{ width: `${p.percent}%` }} />
            </div>
          )}
          <p class="muted small">{p.percent !== null ? `${Math.round(p.percent)} %` : ''}{p.percent !== null && p.message ? ' · ' : ''}{p.message ?? ''}</p>
        </div>
      )}
      {w?.preview ? (
        <figure class="writing-preview">
          <img class="result-image" src={w.preview.url} alt={`Preview ${w.preview.index + 1} of ${alt}`} data-preview-index={w.preview.index} />
          <figcaption class="muted small"><span class="spinner" aria-hidden="true" /> Preview {w.preview.index + 1}: still painting</figcaption>
        </figure>
      ) : w && (w.text || startedOver) ? (
        <Highlighted code={shownCode(w.text)} writing />
      ) : empty}
    </div>
  );
}
