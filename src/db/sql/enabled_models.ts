// The enabled entries of the model catalog (the kiln.models view), in display order, each with
// its version (updated_at in microseconds, what a price is checked against); one entry when `id`
// is given.

import type { Queryable } from '../pool.ts';

/** Where and how an entry's adapter calls its upstream (see docs/providers.md "Model catalog"). */
export interface CatalogUpstream {
  baseUrl?: string;
  /** The upstream's model name (openai, anthropic, gemini, replicate `owner/name`). */
  model?: string;
  /** fal: the app id, e.g. `fal-ai/flux/schnell`. */
  app?: string;
  /** replicate: a version id, when the model is not called by name. */
  version?: string;
  apiKeyEnv?: string;
  /** Extra provider-specific input fields merged into the request. */
  params?: Record<string, unknown>;
  /** Longest upstream run time billed (and waited for) — replicate time-billed models. */
  maxSeconds?: number;
  pollIntervalMs?: number;
  /** This entry's upstream timeout in ms, in place of KILN_PROVIDER_TIMEOUT_MS (src/providers/upstream.ts entryOptions). */
  timeoutMs?: number;
  delayMs?: number;
  /** false: never ask this upstream for a stream, even when the generation streams. */
  stream?: boolean;
  /** openai image entries: partial images (0–3) asked for while a generation streams. */
  partialImages?: number;
  [setting: string]: unknown;
}

/** A kiln.models row (also the shape of the models kiln.snapshot_workflow returns as json). */
export interface ModelRow {
  id: string;
  name: string;
  description: string | null;
  category: 'image' | 'text' | 'svg';
  provider: string;
  upstream: CatalogUpstream | null;
  supports_image_input: boolean;
  input_modalities: string[];
  output_modalities: string[];
  cost: { micros_per_image?: number; micros_per_second?: number; input_micros_per_token?: number; output_micros_per_token?: number } | null;
  max_output_tokens: number | null;
  markup: number | string | null;
  /** What batch lines bill at instead of markup; null = markup. */
  batch_markup: number | string | null;
  enabled: boolean;
  sort_order: number;
  updated_at: Date | string;
  fallbacks: string[];
}

export function enabledModels(sql: Queryable, id: string | null) {
  return sql<Array<ModelRow & { version: string }>>`
    select *, (extract(epoch from updated_at) * 1000000)::bigint::text as version
    from kiln.models where enabled and (${id}::text is null or id = ${id}::text)
    order by sort_order, id`;
}
