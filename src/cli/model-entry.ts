// The catalog entry file format of `kiln model upsert` (documented in README "Model catalog").

import * as v from 'valibot';

const nonNeg = v.pipe(v.number(), v.minValue(0));

export const ModelEntry = v.pipe(v.strictObject({
  id: v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/, 'letters, digits and . _ : / - only')),
  name: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
  description: v.optional(v.nullable(v.string())),
  category: v.picklist(['image', 'text', 'svg']),
  provider: v.picklist(['local', 'openai']),
  upstream: v.optional(
    v.nullable(
      v.strictObject({
        baseUrl: v.optional(v.pipe(v.string(), v.url(), v.regex(/^https?:\/\//, 'must be http(s)'))),
        model: v.optional(v.string()),
        apiKeyEnv: v.optional(v.pipe(v.string(), v.regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name'))),
        delayMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(600000))),
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
        v.strictObject({ input_micros_per_token: nonNeg, output_micros_per_token: nonNeg }),
      ]),
    ),
  ),
  maxOutputTokens: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000)))),
  markup: v.optional(v.nullable(v.pipe(v.number(), v.minValue(1), v.maxValue(100)))),
  enabled: v.optional(v.boolean(), true),
  sort_order: v.optional(v.pipe(v.number(), v.integer())),
}),
  v.check(
    (m) => !m.cost || (m.category === 'image') === ('micros_per_image' in m.cost),
    'cost: image models are priced with micros_per_image, text and svg models per token',
  ),
  v.check((m) => m.provider !== 'openai' || !!m.upstream?.baseUrl, 'upstream.baseUrl is required for openai models'),
);
