// Attribution (docs/api.md, "Attribution"): `endUser`, the app's own user, and `metadata`, its
// tags, on every request that spends. One set of rules for bodies (POST /generations, batch lines,
// runs, MCP tools) and for GET /generations' filters; every problem is a JSON pointer.

import * as v from 'valibot';
import { errors, type ErrorDetail } from '../errors.ts';

export const MAX_END_USER_CHARS = 128;
export const MAX_METADATA_PAIRS = 16;
export const MAX_METADATA_VALUE_CHARS = 512;
export const METADATA_KEY = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Control characters (C0, DEL, C1), lone surrogates and the line and paragraph separators. */
const UNPRINTABLE = /[\p{Cc}\p{Cs}\u2028\u2029]/u;

/** Length in characters (Unicode code points), not UTF-16 units. */
function chars(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** What is wrong with an endUser value, or null when it is a valid one. */
export function endUserProblem(value: unknown): string | null {
  if (typeof value !== 'string') return 'must be a string';
  const n = value.length > MAX_END_USER_CHARS * 2 ? Infinity : chars(value);
  if (n < 1 || n > MAX_END_USER_CHARS) return `must be 1 to ${MAX_END_USER_CHARS} characters`;
  if (UNPRINTABLE.test(value)) return 'must be printable characters (no control characters)';
  return null;
}

const KEY_MESSAGE = 'is not a valid key: keys are 1 to 64 characters of A-Z, a-z, 0-9, _ . : -';
const VALUE_MESSAGE = `must be at most ${MAX_METADATA_VALUE_CHARS} characters`;

function valueProblem(value: unknown): string | null {
  if (typeof value !== 'string') return 'must be a string';
  if (value.length > MAX_METADATA_VALUE_CHARS && chars(value) > MAX_METADATA_VALUE_CHARS) return VALUE_MESSAGE;
  return null;
}

/** RFC 6901: `~` → `~0`, `/` → `~1`. */
function pointerToken(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Every problem of a metadata object, as pointers under `at` (`/metadata/<key>`, `/metadata` for the object). */
export function metadataProblems(value: unknown, at = '/metadata'): ErrorDetail[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [{ path: at, message: 'must be an object of string values' }];
  const keys = Object.keys(value);
  if (keys.length > MAX_METADATA_PAIRS) return [{ path: at, message: `must have at most ${MAX_METADATA_PAIRS} pairs (it has ${keys.length})` }];
  const out: ErrorDetail[] = [];
  for (const k of keys) {
    if (!METADATA_KEY.test(k)) {
      out.push({ path: `${at}/${pointerToken(k)}`, message: KEY_MESSAGE });
      continue;
    }
    const p = valueProblem((value as Record<string, unknown>)[k]);
    if (p) out.push({ path: `${at}/${pointerToken(k)}`, message: p });
  }
  return out;
}

/** Every problem of a body's `endUser` and `metadata` (absent ones are fine), as JSON pointers. */
export function attributionProblems(body: Record<string, unknown>): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  if (body.endUser !== undefined) {
    const p = endUserProblem(body.endUser);
    if (p) out.push({ path: '/endUser', message: p });
  }
  if (body.metadata !== undefined) out.push(...metadataProblems(body.metadata));
  return out;
}

/** `/metadata/a~1b` → `metadata.a/b`: the "field: message" wording of a detail. */
function fieldOf(path: string): string {
  return path.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~')).join('.');
}

/** Throws the 400 invalid_request of a body's attribution problems (every one in `details`), if any. */
export function checkAttribution(body: Record<string, unknown>): void {
  const problems = attributionProblems(body);
  if (!problems.length) return;
  const first = problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length === 2 ? '' : 's'}: see details)` : '';
  throw errors.invalidBody(`${fieldOf(first.path)}: ${first.message}${more}`, problems);
}

/** A request's attribution as stored: only what was given (empty metadata is none). */
export interface Attribution {
  endUser?: string;
  metadata?: Record<string, string>;
}

/** The attribution of a body already checked (checkAttribution). */
export function attributionOf(body: { endUser?: string; metadata?: Record<string, string> }): Attribution {
  return {
    ...(body.endUser !== undefined ? { endUser: body.endUser } : {}),
    ...(body.metadata !== undefined && Object.keys(body.metadata).length ? { metadata: body.metadata } : {}),
  };
}

// ---------------------------------------------------------------- schemas (OpenAPI, MCP arguments)

export const EndUser = v.pipe(
  v.string('must be a string'),
  v.check((s) => endUserProblem(s) === null, `must be 1 to ${MAX_END_USER_CHARS} printable characters`),
  v.description(
    'Optional. An opaque id of your own user this request is for: 1 to 128 printable characters (no control characters). ' +
    'Stored with the generation and its charge, returned in its bodies and events, never changed; `GET /generations?endUser=` filters by it. ' +
    'Required when the API key was made with `requireEndUser`.',
  ),
);

export const Metadata = v.pipe(
  v.record(
    v.pipe(v.string(), v.regex(METADATA_KEY, KEY_MESSAGE)),
    v.pipe(v.string('must be a string'), v.check((s) => valueProblem(s) === null, VALUE_MESSAGE)),
    'must be an object of string values',
  ),
  v.maxEntries(MAX_METADATA_PAIRS, `must have at most ${MAX_METADATA_PAIRS} pairs`),
  v.description(
    'Optional. Your own tags: at most 16 pairs; keys match `^[A-Za-z0-9_.:-]{1,64}$`, values are strings of at most 512 characters. ' +
    'Stored with the generation and its charge, returned in its bodies and events, never changed; `GET /generations?metadata[key]=value` filters by them.',
  ),
);

// ---------------------------------------------------------------- GET /generations filters

/** The list's attribution filters: `endUser` and every `metadata[key]=value` pair (ANDed). */
export interface AttributionFilter {
  endUser: string | null;
  metadata: Record<string, string> | null;
}

/**
 * Reads `endUser` and `metadata[key]=value` from a query string (each at most once), with the body's
 * rules; invalid_request names the parameter.
 */
export function parseAttributionFilter(params: URLSearchParams): AttributionFilter {
  const endUsers = params.getAll('endUser');
  if (endUsers.length > 1) throw errors.invalid('endUser: must be given once');
  let endUser: string | null = null;
  if (endUsers.length) {
    const p = endUserProblem(endUsers[0]);
    if (p) throw errors.invalid(`endUser: ${p}`);
    endUser = endUsers[0]!;
  }
  let metadata: Record<string, string> | null = null;
  for (const [name, value] of params) {
    if (name === 'metadata') throw errors.invalid('metadata: filter by a pair as metadata[key]=value');
    const m = /^metadata\[(.*)\]$/s.exec(name);
    if (!m) continue;
    const key = m[1]!;
    if (!METADATA_KEY.test(key)) throw errors.invalid(`metadata[${key}]: ${KEY_MESSAGE}`);
    metadata ??= {};
    if (Object.hasOwn(metadata, key)) throw errors.invalid(`metadata[${key}]: must be given once`);
    const p = valueProblem(value);
    if (p) throw errors.invalid(`metadata[${key}]: ${p}`);
    metadata[key] = value;
  }
  if (metadata && Object.keys(metadata).length > MAX_METADATA_PAIRS) throw errors.invalid(`metadata: at most ${MAX_METADATA_PAIRS} pairs`);
  return { endUser, metadata };
}
