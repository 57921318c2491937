// `If-Match` (RFC 9110 §13.1.1) on versioned resources: the versions a request may change, read
// from the header's entity tags. Kiln's ETags are strong tags holding a version number (`"3"`).

import type { H3Event } from 'h3';
import * as v from 'valibot';
import { errors } from '../errors.ts';

export const IfMatchHeader = v.pipe(
  v.string(),
  v.description(
    'Save only over this version: the `ETag` you read (e.g. `"3"`), or several, comma-separated. Another version → 412 `precondition_failed`, ' +
    'nothing written. `*` (or no header) saves over any version: the last write wins. A weak tag (`W/"3"`) never matches.',
  ),
);

const TAG = /\s*(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*(,|$)/y;

/**
 * The versions named by the request's If-Match: null when there is no header or it is `*` (no
 * condition); otherwise the numbers of its strong tags — possibly none, which no version matches.
 * A header that is not a list of entity tags is a 400.
 */
export function readIfMatch(event: H3Event): number[] | null {
  const raw = event.req.headers.get('if-match');
  if (raw === null || raw.trim() === '*') return null;
  const versions: number[] = [];
  TAG.lastIndex = 0;
  let m: RegExpExecArray | null;
  let end = 0;
  while (end < raw.length && (m = TAG.exec(raw))) {
    end = TAG.lastIndex;
    if (!m[1] && /^[1-9]\d{0,14}$/.test(m[2]!)) versions.push(Number(m[2]));
    if (m[3] === '') break;
  }
  if (end !== raw.length || !raw.trim()) throw errors.invalid('If-Match: must be "*" or entity tags such as "3" (the ETag of the version you read)');
  return versions;
}
