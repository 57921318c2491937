// Offsets in streamed text count characters (Unicode code points), as Postgres's char_length
// does: the same numbers whichever language a client is written in (docs/api.md, "Streaming").

/** The characters (code points) of `s`. */
export function charCount(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A low surrogate after a high one is the second half of one character.
    if (c >= 0xdc00 && c <= 0xdfff && i > 0) {
      const p = s.charCodeAt(i - 1);
      if (p >= 0xd800 && p <= 0xdbff) continue;
    }
    n++;
  }
  return n;
}

/** `s` after its first `chars` characters. */
export function afterChars(s: string, chars: number): string {
  if (chars <= 0) return s;
  let i = 0;
  for (let n = 0; n < chars && i < s.length; n++) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
  }
  return s.slice(i);
}
