// The catalog's types, apart from catalog.ts. CatalogUpstream is the stored column's shape, so it
// lives with the SQL wrapper that reads it (db/ sits below billing/).

import type { CatalogUpstream } from '../db/sql/enabled_models.ts';

export type { CatalogUpstream };

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
  /**
   * What batch lines bill at instead of `markup` (docs/providers.md, "Model catalog"), never above
   * it; null or absent = `markup`. A batch line's stored request carries the entry with `markup`
   * already set to it (batchPriced in ./catalog.ts).
   */
  batchMarkup?: number | null;
  enabled: boolean;
  description?: string | null;
  /** Catalog ids tried in order when this entry's upstream is down (same category). */
  fallbacks?: string[];
}
