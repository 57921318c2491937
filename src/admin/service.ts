// The operator's view: accounts by spend, an account's page (tier, budget, its keys), workspaces
// and members, the whole catalog with upstream cost and billed price, and the service's health.
// Routes reach this only with the admin scope (an admin's session or key); writes run audited, so
// each audit entry names the admin's key or session, address and request id.

import type { Caller } from '../auth/access.ts';
import { audited } from '../auth/audit.ts';
import { batchPricingOf, invalidateCatalog, pricingOf, rowToModel } from '../billing/catalog.ts';
import type { Context } from '../context.ts';
import {
  adminGetAccount, adminGetWorkspace, adminHealth, adminListAccounts, adminListWorkspaces, adminRevokeAccountKeys,
  adminSetModelEnabled, adminUpdateAccount,
} from '../db/sql/admin.ts';
import { allModels } from '../db/sql/all_models.ts';
import type { ModelRow } from '../db/sql/enabled_models.ts';
import { errors } from '../errors.ts';
import { isUuid, parseWith } from '../schemas.ts';
import { UpdateAccountRequest, UpdateModelRequest } from './schemas.ts';

const CURSOR_RE = /^(\d{1,19})\.([0-9a-fA-F-]{36})$/;

export interface PageQuery {
  limit: number;
  cursor: string | null;
  q: string | null;
}

/** `limit` (1–200, default 50), the previous page's `nextCursor`, and an optional search (3–100 characters). */
export function parsePageQuery(limit: string | undefined, cursor: string | undefined, q: string | undefined): PageQuery {
  let n = 50;
  if (limit !== undefined) {
    if (!/^\d{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > 200) throw errors.invalid('limit: must be a whole number from 1 to 200');
    n = Number(limit);
  }
  const search = q?.trim() || null;
  // Under three characters a trigram index cannot narrow the search: every page would read every account.
  if (search !== null && (search.length < 3 || search.length > 100)) throw errors.invalid('q: must be 3 to 100 characters');
  return { limit: n, cursor: cursor ?? null, q: search };
}

/** GET /admin/accounts: a page sorted by spend this period. */
export async function listAccounts(ctx: Context, q: PageQuery) {
  let used: string | null = null;
  let id: string | null = null;
  if (q.cursor !== null) {
    const m = CURSOR_RE.exec(q.cursor);
    if (!m || !isUuid(m[2]) || BigInt(m[1]!) > 9223372036854775807n) throw errors.invalid('cursor: must be a nextCursor from a previous page');
    [used, id] = [m[1]!, m[2]!.toLowerCase()];
  }
  const [row] = await adminListAccounts(ctx.sql, q.limit, used, id, q.q);
  return row!.p;
}

export async function getAccount(ctx: Context, id: string) {
  const [row] = await adminGetAccount(ctx.sql, id);
  if (!row?.a) throw errors.notFound('Account');
  return row.a;
}

/** PATCH /admin/accounts/{id}: tier and/or budget, audited as account.updated naming the admin's credential. */
export async function updateAccount(ctx: Context, caller: Caller, id: string, input: unknown) {
  const body = parseWith(UpdateAccountRequest, input);
  const [row] = await audited(ctx, caller, (tx) =>
    adminUpdateAccount(tx, caller.accountId, id, body.tier ?? null, body.budgetMicros ?? null, body.budgetMicros !== undefined));
  return row!.a;
}

/** POST /admin/accounts/{id}/revoke-keys: every live key of the account, one key.revoked entry each. */
export async function revokeAccountKeys(ctx: Context, caller: Caller, id: string) {
  const [row] = await audited(ctx, caller, (tx) => adminRevokeAccountKeys(tx, caller.accountId, id));
  return row!.r;
}

export async function listWorkspaces(ctx: Context, q: PageQuery) {
  if (q.cursor !== null && !isUuid(q.cursor)) throw errors.invalid('cursor: must be a nextCursor from a previous page');
  const [row] = await adminListWorkspaces(ctx.sql, q.limit, q.cursor?.toLowerCase() ?? null, q.q);
  return row!.p;
}

export async function getWorkspace(ctx: Context, id: string) {
  const [row] = await adminGetWorkspace(ctx.sql, id);
  if (!row?.w) throw errors.notFound('Workspace');
  return row.w;
}

function costOf(row: ModelRow): Record<string, number> | null {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(row.cost ?? {})) if (typeof v === 'number' && Number.isFinite(v)) out[k] = v;
  return Object.keys(out).length ? out : null;
}

function adminModel(row: ModelRow, defaultMarkup: number) {
  const m = rowToModel(row, defaultMarkup);
  return {
    id: m.id, name: m.name, category: m.category, provider: m.provider, enabled: m.enabled, markup: m.markup,
    batchMarkup: m.batchMarkup, cost: costOf(row), pricing: pricingOf(m), batchPricing: batchPricingOf(m) ?? null, fallbacks: m.fallbacks,
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** GET /admin/models: every catalog entry, disabled ones included, with cost and billed price. */
export async function listAllModels(ctx: Context) {
  return { data: ((await allModels(ctx.sql)) as unknown as ModelRow[]).map((r) => adminModel(r, ctx.config.defaultMarkup)) };
}

/** PATCH /admin/models/{id}: enable or disable an entry (model.enabled / model.disabled in the audit log). */
export async function setModelEnabled(ctx: Context, caller: Caller, id: string, input: unknown) {
  const body = parseWith(UpdateModelRequest, input);
  const [row] = await audited(ctx, caller, (tx) => adminSetModelEnabled(tx, caller.accountId, id, body.enabled));
  invalidateCatalog(ctx);
  return adminModel(row!, ctx.config.defaultMarkup);
}

export async function health(ctx: Context) {
  const [row] = await adminHealth(ctx.sql);
  return row!.h;
}
