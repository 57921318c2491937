// The catalog's types, apart from catalog.ts so that the SQL wrappers can name them without an
// import circle (db/sql/enabled_models.ts ⇄ billing/catalog.ts).

export type ModelCategory = 'image' | 'text' | 'svg';

export interface TokenCost {
  input_micros_per_token: number;
  output_micros_per_token: number;
}
export interface ImageCost {
  micros_per_image: number;
}
/** Image models billed by upstream run time (Replicate): reserved at upstream.maxSeconds. */
export interface TimeCost {
  micros_per_second: number;
}

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
  delayMs?: number;
  [setting: string]: unknown;
}

export interface CatalogModel {
  id: string;
  name: string;
  category: ModelCategory;
  /** adapter name: 'local' | 'openai' | 'fal' | 'replicate' | 'anthropic' | 'gemini' */
  provider: string;
  upstream: CatalogUpstream | null;
  supports_image_input: boolean;
  input_modalities: string[];
  output_modalities: string[];
  cost: Partial<TokenCost & ImageCost & TimeCost> | null;
  maxOutputTokens: number | null;
  markup: number;
  enabled: boolean;
  description?: string | null;
  /** Catalog ids tried in order when this entry's upstream is down (same category). */
  fallbacks?: string[];
}
