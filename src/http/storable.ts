// Values Postgres cannot store: text and jsonb refuse NUL (SQLSTATE 22P05) and lone UTF-16
// surrogates (22021 once encoded), and JSON has no Infinity (JSON.parse('1e999') is Infinity).
// Inputs are checked here, before any SQL, so one request's bad value is that request's 400
// and never the failure of a batched call it shares with others (docs/api.md, "How billing and
// limits behave": one request never fails another).

/** Why `s` cannot be stored, or null. */
export function unstorableText(s: string): string | null {
  if (s.includes('\u0000')) return 'contains a character that cannot be stored (NUL)';
  if (!(s as string & { isWellFormed(): boolean }).isWellFormed()) return 'contains a character that cannot be stored (a lone surrogate)';
  return null;
}

interface Frame {
  value: unknown;
  /** Index of the parent frame in `seen`, -1 for the root. */
  parent: number;
  key: string;
  /** Containers above it (the root's children are at depth 1). */
  depth: number;
}

/**
 * How deeply a request may nest arrays and objects. No request of the API nests beyond a dozen
 * levels; deeper values overflow the call stack of recursive code on their way (JSON.stringify,
 * fingerprints of Idempotency-Keys), which would answer 500 instead of 400.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * The first value in `root` Postgres cannot store, as "path: problem" (the path in valibot's dot
 * form, e.g. `textInputs.0.content`; the root is named `root`), or null. Object keys are checked
 * too. Iterative: JSON.parse accepts nesting far deeper than the call stack. `strings: false`
 * skips the string checks (for JSON text without a `\u` escape, whose strings cannot hold NUL or
 * lone surrogates).
 */
export function unstorableValue(root: unknown, opts: { strings?: boolean; root?: string } = {}): string | null {
  const strings = opts.strings ?? true;
  // Fast path: a flat value. (A value nested too deeply counts as one Postgres cannot store: code
  // on its way would recurse past the stack; see MAX_JSON_DEPTH.)
  if (root === null || typeof root === 'boolean') return null;
  const seen: Frame[] = [{ value: root, parent: -1, key: '', depth: 0 }];
  const todo: number[] = [0];
  while (todo.length) {
    const at = todo.pop()!;
    const { value } = seen[at]!;
    let problem: string | null = null;
    if (seen[at]!.depth > MAX_JSON_DEPTH) return `${opts.root ?? 'root'}: is nested more than ${MAX_JSON_DEPTH} levels deep`;
    if (typeof value === 'string') {
      if (strings) problem = unstorableText(value);
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) problem = 'is not a finite number (out of range)';
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        const item = value[i];
        if (item === null || typeof item === 'boolean') continue;
        todo.push(seen.push({ value: item, parent: at, key: String(i), depth: seen[at]!.depth + 1 }) - 1);
      }
    } else if (value !== null && typeof value === 'object') {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        if (strings && unstorableText(key)) {
          problem = `has a property name that ${unstorableText(key)!}`;
          break;
        }
        const item = (value as Record<string, unknown>)[key];
        if (item === null || typeof item === 'boolean' || item === undefined) continue;
        todo.push(seen.push({ value: item, parent: at, key, depth: seen[at]!.depth + 1 }) - 1);
      }
    }
    if (problem) return `${pathOf(seen, at) || (opts.root ?? 'root')}: ${problem}`;
  }
  return null;
}

function pathOf(seen: Frame[], at: number): string {
  const keys: string[] = [];
  for (let i = at; i > 0; i = seen[i]!.parent) keys.push(seen[i]!.key);
  return keys.reverse().join('.');
}
