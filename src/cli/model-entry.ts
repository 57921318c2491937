// The catalog entry file format of `kiln model upsert` (documented in docs/providers.md "Model catalog"),
// which is also what `kiln model list` prints for each entry, so that a listed entry loads back as it is.

import * as v from 'valibot';
import type { ModelRow } from '../db/sql/upsert_model.ts';
import { OPENAI_FAMILIES, openaiEntryProblem } from '../providers/openai-family.ts';

const nonNeg = v.pipe(v.number(), v.minValue(0));

export const ModelEntry = v.pipe(v.strictObject({
  id: v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/, 'letters, digits and . _ : / - only')),
  name: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
  description: v.optional(v.nullable(v.string())),
  category: v.picklist(['image', 'text', 'svg']),
  provider: v.picklist(['local', 'openai', 'fal', 'replicate', 'anthropic', 'gemini']),
  upstream: v.optional(
    v.nullable(
      v.strictObject({
        baseUrl: v.optional(v.pipe(v.string(), v.url(), v.regex(/^https?:\/\//, 'must be http(s)'))),
        model: v.optional(v.string()),
        app: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$/, 'must be an app id like fal-ai/flux/schnell'))),
        version: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9]{1,128}$/, 'must be a version id'))),
        apiKeyEnv: v.optional(v.pipe(v.string(), v.regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name'))),
        params: v.optional(v.record(v.string(), v.unknown())),
        maxSeconds: v.optional(v.pipe(v.number(), v.minValue(1), v.maxValue(3600))),
        pollIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(60000))),
        timeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(3_600_000))),
        waitSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(60))),
        delayMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(600000))),
        acceptImageUrls: v.optional(v.boolean()),
        imageSizes: v.optional(v.record(v.string(), v.string())),
        imageParams: v.optional(v.record(v.string(), v.unknown())),
        family: v.optional(v.picklist(OPENAI_FAMILIES)),
        maxPromptBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000))),
        stream: v.optional(v.boolean()),
        partialImages: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(3))),
      }),
    ),
  ),
  supports_image_input: v.optional(v.boolean(), false),
  input_modalities: v.optional(v.array(v.string()), ['text']),
  output_modalities: v.optional(v.array(v.string()), ['text']),
  cost: v.optional(
    v.nullable(
      v.union([
        v.strictObject({ micros_per_image: nonNeg }),
        v.strictObject({ micros_per_second: nonNeg }),
        v.strictObject({ input_micros_per_token: nonNeg, output_micros_per_token: nonNeg }),
      ]),
    ),
  ),
  maxOutputTokens: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000)))),
  markup: v.optional(v.nullable(v.pipe(v.number(), v.minValue(1), v.maxValue(100)))),
  batchMarkup: v.optional(v.nullable(v.pipe(v.number(), v.minValue(1), v.maxValue(100)))),
  enabled: v.optional(v.boolean(), true),
  sort_order: v.optional(v.pipe(v.number(), v.integer())),
  fallbacks: v.optional(v.pipe(
    v.array(v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/, 'must be a catalog id'))),
    v.maxLength(5, 'at most 5 fallbacks'),
  )),
}),
  v.check(
    (m) => !m.cost || (m.category === 'image') === ('micros_per_image' in m.cost || 'micros_per_second' in m.cost),
    'cost: image models are priced with micros_per_image (or micros_per_second), text and svg models per token',
  ),
  v.check((m) => !m.cost || !('micros_per_second' in m.cost) || m.provider === 'replicate', 'cost: micros_per_second is for replicate models (billed by run time)'),
  v.check((m) => m.provider !== 'openai' || !!m.upstream?.baseUrl, 'upstream.baseUrl is required for openai models'),
  v.check((m) => m.provider !== 'openai' || openaiEntryProblem(m) === null, (issue) => openaiEntryProblem(issue.input as Parameters<typeof openaiEntryProblem>[0]) ?? 'invalid openai entry'),
  v.check((m) => m.provider !== 'fal' || !!m.upstream?.app, 'upstream.app is required for fal models'),
  v.check((m) => m.provider === 'openai' || !m.upstream?.partialImages, 'upstream.partialImages is for openai image entries'),
  v.check((m) => m.provider !== 'anthropic' || m.category !== 'image', 'anthropic models serve text and svg only (the Messages API makes no images)'),
  v.check((m) => m.provider !== 'replicate' || !!(m.upstream?.model || m.upstream?.version), 'upstream.model or upstream.version is required for replicate models'),
  v.check((m) => !(m.fallbacks ?? []).includes(m.id), 'fallbacks: an entry cannot fall back to itself'),
  v.check((m) => m.batchMarkup == null || m.markup == null || m.batchMarkup <= m.markup, 'batchMarkup: must not be above markup (batch lines never bill more than interactive requests)'),
);

/** The keys an entry file may hold (and `kiln model list` prints, with `updated_at`). */
const ENTRY_KEYS = Object.keys(ModelEntry.entries);
const UPSTREAM_KEYS = Object.keys(ModelEntry.entries.upstream.wrapped.wrapped.entries);
/** Printed by `kiln model list`, set by the database: ignored in an entry file. */
const READ_ONLY_KEYS = ['updated_at'];

/** `kiln model list`'s form of a stored entry: the entry file's keys, plus `updated_at`. */
export function modelEntryJson(r: ModelRow) {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    category: r.category,
    provider: r.provider,
    upstream: r.upstream,
    supports_image_input: r.supports_image_input,
    input_modalities: r.input_modalities,
    output_modalities: r.output_modalities,
    cost: r.cost,
    maxOutputTokens: r.max_output_tokens,
    markup: r.markup == null ? null : Number(r.markup),
    batchMarkup: r.batch_markup == null ? null : Number(r.batch_markup),
    enabled: r.enabled,
    sort_order: r.sort_order,
    fallbacks: r.fallbacks,
    updated_at: r.updated_at,
  };
}

function unknownKeys(obj: Record<string, unknown>, known: readonly string[], prefix: string): string[] {
  const squash = (k: string) => k.replace(/_/g, '').toLowerCase();
  return Object.keys(obj).filter((k) => !known.includes(k)).map((k) => {
    const like = known.find((n) => squash(n) === squash(k));
    return `${prefix}${k}: unknown key${like ? ` (the key is ${prefix}${like})` : ''}`;
  });
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * Checks an entry file against the entry stored under its id (null for a new entry): a key the file
 * leaves out keeps its stored value. Resolves with the entry to store, or every problem found
 * (all the unknown keys, then each invalid field). `defaultMarkup` (KILN_DEFAULT_MARKUP) is the
 * markup a `batchMarkup` must not exceed when the entry sets no markup of its own.
 */
export function resolveEntry(file: unknown, stored: ModelRow | null, defaultMarkup?: number):
  { ok: true; entry: v.InferOutput<typeof ModelEntry> } | { ok: false; problems: string[] } {
  if (!isObject(file)) return { ok: false, problems: ['the file must hold one JSON object (one catalog entry)'] };
  const given = Object.fromEntries(Object.entries(file).filter(([k]) => !READ_ONLY_KEYS.includes(k)));
  const problems = unknownKeys(given, ENTRY_KEYS, '');
  if (isObject(given.upstream)) problems.push(...unknownKeys(given.upstream, UPSTREAM_KEYS, 'upstream.'));
  let merged: Record<string, unknown> = given;
  if (stored) {
    const { updated_at: _, ...kept } = modelEntryJson(stored);
    merged = { ...kept, ...given };
  }
  const parsed = v.safeParse(ModelEntry, merged);
  if (parsed.success && parsed.output.markup == null && parsed.output.batchMarkup != null && defaultMarkup !== undefined && parsed.output.batchMarkup > defaultMarkup) {
    problems.push(`batchMarkup: must not be above markup (the entry sets none, so KILN_DEFAULT_MARKUP, ${defaultMarkup})`);
  }
  if (parsed.success && !problems.length) return { ok: true, entry: parsed.output };
  for (const issue of parsed.issues ?? []) {
    if (issue.kind === 'schema' && issue.expected === 'never') continue; // an unknown key: listed above
    const path = v.getDotPath(issue);
    const text = path ? `${path}: ${issue.message}` : issue.message;
    if (!problems.includes(text)) problems.push(text);
  }
  return { ok: false, problems };
}
