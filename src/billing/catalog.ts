// Model catalog entries as stored in kiln_private.models and as read by providers.
// `cost` is what the upstream charges; callers are billed cost × markup, rounded up per charge
// (batch lines: cost × batchMarkup when the entry sets one; docs/providers.md, "Model catalog").
// Two per-process caches: the priced entries that generations are priced from (re-read every
// minute), and the public catalog that GET /models and MCP show (every five minutes).

export type { CatalogModel, CatalogUpstream, ImageCost, ModelCategory, TimeCost, TokenCost } from './types.ts';

import * as v from 'valibot';
import type { Context } from '../context.ts';
import type { CatalogModel } from './types.ts';
import type { Sql } from '../db/pool.ts';
import { enabledModels, type ModelRow } from '../db/sql/enabled_models.ts';
import { registerSchemas } from '../schemas.ts';
import { rootOf } from '../root.ts';

/** A catalog row as read from kiln.models, normalised for providers and billing. */
export function rowToModel(row: ModelRow, defaultMarkup: number): CatalogModel {
  const markup = row.markup == null ? defaultMarkup : Number(row.markup);
  return {
    id: row.id,
    name: row.name,
    description: row.description ?? null,
    category: row.category,
    provider: row.provider,
    upstream: row.upstream ?? null,
    supports_image_input: row.supports_image_input,
    input_modalities: row.input_modalities,
    output_modalities: row.output_modalities,
    cost: row.cost ?? null,
    maxOutputTokens: row.max_output_tokens ?? null,
    markup,
    // Never above the markup (an entry without its own markup bills at KILN_DEFAULT_MARKUP).
    batchMarkup: row.batch_markup == null ? null : Math.min(Number(row.batch_markup), markup),
    enabled: row.enabled,
    fallbacks: row.fallbacks ?? [],
  };
}

/**
 * The entries tried, in order, after `model` when its upstream fails: its listed fallbacks that
 * are enabled, of the same category and able to take the request's image inputs. One level:
 * a fallback's own fallbacks are not followed.
 */
export function fallbackChain(model: CatalogModel, entries: ReadonlyArray<CatalogModel | null | undefined>, imageCount: number): CatalogModel[] {
  const seen = new Set([model.id]);
  const out: CatalogModel[] = [];
  for (const m of entries) {
    if (!m || !m.enabled || seen.has(m.id) || m.category !== model.category) continue;
    if (imageCount > 0 && !m.supports_image_input) continue;
    seen.add(m.id);
    out.push(m);
  }
  return out;
}

export async function getModel(sql: Sql, id: string, defaultMarkup: number): Promise<CatalogModel | null> {
  const [row] = await enabledModels(sql, id);
  return row ? rowToModel(row, defaultMarkup) : null;
}

/**
 * The entry as a batch line bills it: `markup` replaced by its batch markup (itself when it has
 * none). A batch line's stored request carries its model and fallbacks priced so, and both its
 * reservation and its settled charge are computed from them (docs/api.md, "Batches").
 */
export function batchPriced(model: CatalogModel): CatalogModel {
  return model.batchMarkup == null || model.batchMarkup === model.markup ? model : { ...model, markup: model.batchMarkup };
}

/** Multiplies by the markup exactly enough for display (6 decimals). */
function marked(n: unknown, markup: number): number | undefined {
  if (typeof n !== 'number' || !Number.isFinite(n)) return undefined;
  return Math.round(n * markup * 1e6) / 1e6;
}

/** The billed (marked-up) price shown by GET /models; null when the cost is unknown. `markup`: another markup (the batch price). */
export function pricingOf(model: CatalogModel, markup = model.markup): Record<string, number> | null {
  const c = model.cost;
  if (!c) return null;
  const out: Record<string, number> = {};
  for (const k of ['micros_per_image', 'micros_per_second', 'input_micros_per_token', 'output_micros_per_token'] as const) {
    const m = marked(c[k], markup);
    if (m !== undefined) out[k] = m;
  }
  return Object.keys(out).length ? out : null;
}

/** The price batch lines are billed at, when the entry sets a batch markup (else absent). */
export function batchPricingOf(model: CatalogModel): Record<string, number> | null | undefined {
  return model.batchMarkup == null ? undefined : pricingOf(model, model.batchMarkup);
}

/** The public shape of a model (the OpenAPI `Model` schema). */
export function publicModel(model: CatalogModel) {
  const batchPrice = batchPricingOf(model);
  return {
    id: model.id,
    name: model.name,
    category: model.category,
    provider: model.provider,
    supports_image_input: model.supports_image_input,
    input_modalities: model.input_modalities,
    output_modalities: model.output_modalities,
    pricing: pricingOf(model),
    ...(batchPrice !== undefined ? { batchPrice } : {}),
  };
}

export async function listModels(sql: Sql, defaultMarkup: number): Promise<CatalogModel[]> {
  const rows = await enabledModels(sql, null);
  return rows.map((r) => rowToModel(r, defaultMarkup));
}

// ---------------------------------------------------------------- priced entries (what a generation is priced at)

/** An enabled entry and its version: the catalog row version a price is computed from (checked again in SQL). */
export interface CatalogEntry {
  model: CatalogModel;
  version: string;
}

interface CatalogCache {
  at: number;
  byId: Map<string, CatalogEntry>;
}

/** Entries are re-read at least this often; a stale price is also caught by create_generation (KS001). */
const CATALOG_TTL_MS = 60_000;
const catalogs = new WeakMap<Sql, CatalogCache>();

async function readEntries(ctx: Context, id: string | null): Promise<CatalogEntry[]> {
  const rows = await enabledModels(ctx.sql, id);
  return rows.map((r) => ({ model: rowToModel(r, ctx.config.defaultMarkup), version: r.version }));
}

/**
 * An enabled catalog entry by id from a per-process cache. Misses look the one id up; the
 * price a generation is reserved at is re-checked in SQL, so staleness never mis-bills.
 * `force` looks the id up again (its cached price was stale) unless the cache was just re-read.
 */
export async function catalogEntry(ctx: Context, id: string, force = false): Promise<CatalogEntry | null> {
  const { cache, fresh } = await catalogCache(ctx);
  if (fresh) force = false;
  const hit = cache.byId.get(id);
  if (hit && !force) return hit;
  const [entry] = await readEntries(ctx, id);
  if (entry) cache.byId.set(id, entry);
  else cache.byId.delete(id);
  return entry ?? null;
}

/**
 * Every enabled entry by id, from the same cache and never looked up one by one: for ids that
 * must not cost a query each (a model's fallbacks). An entry enabled less than CATALOG_TTL_MS
 * ago may be missing.
 */
export async function cachedEntries(ctx: Context): Promise<ReadonlyMap<string, CatalogEntry>> {
  return (await catalogCache(ctx)).cache.byId;
}

/** The per-process catalog cache, re-read in full when older than CATALOG_TTL_MS (`fresh`: just now). */
async function catalogCache(ctx: Context): Promise<{ cache: CatalogCache; fresh: boolean }> {
  const cache = catalogs.get(rootOf(ctx.sql));
  if (cache && Date.now() - cache.at <= CATALOG_TTL_MS) return { cache, fresh: false };
  const next = { at: Date.now(), byId: new Map((await readEntries(ctx, null)).map((e) => [e.model.id, e])) };
  catalogs.set(rootOf(ctx.sql), next);
  return { cache: next, fresh: true };
}

// ---------------------------------------------------------------- the public catalog (GET /models, MCP list_models)

export const Model = v.object({
  id: v.pipe(v.string(), v.description('Value to pass as `model`.')),
  name: v.string(),
  category: v.picklist(['image', 'text', 'svg']),
  provider: v.string(),
  supports_image_input: v.boolean(),
  input_modalities: v.array(v.string()),
  output_modalities: v.array(v.string()),
  pricing: v.pipe(
    v.nullable(v.record(v.string(), v.number())),
    v.description('Marked-up price billed to the caller, in microdollars (per image, per second of upstream run time, or per input/output token); null when unknown.'),
  ),
  batchPrice: v.optional(v.pipe(
    v.nullable(v.record(v.string(), v.number())),
    v.description('Present when the entry has a batch price: what lines of `POST /batches` are billed instead of `pricing`, in the same units (never above it); null when the cost is unknown.'),
  )),
});
export const ModelList = v.object({ data: v.array(Model) });
registerSchemas({ Model, ModelList });

const TTL_MS = 5 * 60 * 1000;
const cache = new WeakMap<Context, { at: number; body: string; models: ReturnType<typeof publicModel>[] }>();

/** The public catalog, refreshed from the database at most every 5 minutes per process. */
export async function cachedCatalog(ctx: Context) {
  const hit = cache.get(rootOf(ctx));
  if (hit && Date.now() - hit.at < TTL_MS) return hit;
  const models = (await listModels(ctx.sql, ctx.config.defaultMarkup)).map(publicModel);
  const entry = { at: Date.now(), models, body: JSON.stringify({ data: models }) };
  cache.set(rootOf(ctx), entry);
  return entry;
}

/**
 * Forgets this process's two caches (an admin just changed the catalog): its next GET /models and
 * its next price read the table. Other processes re-read within their TTLs; meanwhile the database
 * refuses a disabled entry (KI001) and a price of a changed entry (KS001) anyway.
 */
export function invalidateCatalog(ctx: Context) {
  cache.delete(ctx);
  catalogs.delete(ctx.sql);
}
