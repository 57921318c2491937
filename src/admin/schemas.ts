// Admin schemas (the operator's view under /api/v1/admin): request bodies and response bodies,
// the single source for validation, the OpenAPI document and the typed client.

import * as v from 'valibot';
import { Key } from '../keys/schemas.ts';
import { registerSchemas, Uuid } from '../schemas.ts';

export const TIERS = ['legacy_free', 'pro', 'enterprise', 'blocked'] as const;

const dateTime = v.pipe(v.string(), v.isoTimestamp());
const int = v.pipe(v.number(), v.integer());
const micros = v.pipe(v.number(), v.integer(), v.minValue(0, 'must be at least 0'), v.maxValue(Number.MAX_SAFE_INTEGER, 'is too large'));
const Tier = v.picklist(TIERS, `must be one of ${TIERS.join(', ')}`);

export const AdminAccount = v.object({
  id: Uuid,
  email: v.string(),
  tier: Tier,
  budgetMicros: v.pipe(v.nullable(int), v.description('Personal budget per period; null = unlimited.')),
  usedMicros: v.pipe(int, v.description('Held + settled this period (what GET /usage calls used).')),
  keyCount: v.pipe(int, v.description('Live API keys (not revoked, not expired).')),
  admin: v.pipe(v.boolean(), v.description('An admin (operator flag or SSO group).')),
});

export const AdminAccountPage = v.object({
  data: v.array(AdminAccount),
  nextCursor: v.pipe(v.nullable(v.string()), v.description('Pass as `cursor` for the next page; null on the last.')),
});

export const AdminAccountDetail = v.object({
  ...AdminAccount.entries,
  periodStart: dateTime,
  resetsAt: v.pipe(dateTime, v.description('When this period ends and spend starts again from 0.')),
  createdAt: dateTime,
  keys: v.pipe(v.array(Key), v.description('Every API key of the account, revoked ones included (never a secret or hash).')),
  workspaces: v.array(v.object({ id: Uuid, name: v.string(), role: v.picklist(['owner', 'admin', 'member']) })),
});

export const UpdateAccountRequest = v.pipe(
  v.object({
    tier: v.optional(v.pipe(Tier, v.description('`blocked` stops new generations.'))),
    budgetMicros: v.optional(v.nullable(v.pipe(micros, v.description('Personal budget per period in microdollars; null = unlimited.')))),
  }),
  v.check((b) => b.tier !== undefined || b.budgetMicros !== undefined, 'give tier, budgetMicros or both'),
);

export const RevokeKeysResult = v.object({
  revoked: v.pipe(int, v.description('Keys revoked by this call (0 when none was live).')),
  account: AdminAccountDetail,
});

export const AdminWorkspace = v.object({
  id: Uuid,
  name: v.string(),
  ownerId: Uuid,
  ownerEmail: v.nullable(v.string()),
  planStatus: v.picklist(['none', 'active', 'lapsed']),
  budgetMicros: v.pipe(v.nullable(int), v.description('Team budget per period; null = unlimited.')),
  usedMicros: v.pipe(int, v.description('Held + settled on the Team pool this period.')),
  memberCount: v.pipe(int, v.description('Current members.')),
  createdAt: dateTime,
});

export const AdminWorkspacePage = v.object({
  data: v.array(AdminWorkspace),
  nextCursor: v.pipe(v.nullable(v.string()), v.description('Pass as `cursor` for the next page; null on the last.')),
});

export const AdminWorkspaceDetail = v.object({
  ...AdminWorkspace.entries,
  members: v.array(v.object({
    accountId: Uuid,
    email: v.string(),
    role: v.picklist(['owner', 'admin', 'member']),
    joinedAt: dateTime,
    leftAt: v.pipe(v.nullable(dateTime), v.description('Set for former members.')),
  })),
});

const PriceTable = v.record(v.string(), v.number());

export const AdminModel = v.object({
  id: v.string(),
  name: v.string(),
  category: v.picklist(['image', 'text', 'svg']),
  provider: v.string(),
  enabled: v.boolean(),
  markup: v.pipe(v.number(), v.description('Billed price = upstream cost × markup (the entry\'s own, else KILN_DEFAULT_MARKUP).')),
  batchMarkup: v.pipe(v.nullable(v.number()), v.description('The markup lines of batches are billed at (`batchMarkup` of the entry, never above `markup`); null: they bill at `markup`.')),
  cost: v.pipe(v.nullable(PriceTable), v.description('What the upstream charges, in microdollars (per image, per second, per input/output token); null when unknown.')),
  pricing: v.pipe(v.nullable(PriceTable), v.description('What callers are billed (cost × markup), as GET /models shows it.')),
  batchPricing: v.pipe(v.nullable(PriceTable), v.description('What batch lines are billed (cost × batchMarkup), as GET /models shows it as `batchPrice`; null when the entry has no batch markup or its cost is unknown.')),
  fallbacks: v.array(v.string()),
  updatedAt: dateTime,
});

export const AdminModelList = v.object({ data: v.array(AdminModel) });

export const UpdateModelRequest = v.object({
  enabled: v.pipe(v.boolean('must be true or false'), v.description('false: new generations with this model are refused (400) and GET /models stops listing it.')),
});

export const AdminHealth = v.object({
  providers: v.pipe(v.array(v.object({
    modelId: v.string(),
    provider: v.string(),
    state: v.pipe(v.picklist(['healthy', 'failing', 'skipped', 'trial', 'awaiting_trial']),
      v.description('skipped: its fallback is taken at once until skippedUntil; trial: one call in flight decides.')),
    consecutiveFailures: int,
    skippedUntil: v.nullable(dateTime),
    lastError: v.nullable(v.string()),
    lastErrorAt: v.nullable(dateTime),
    lastSuccessAt: v.nullable(dateTime),
    calls15m: int,
    failures15m: int,
    errorRate15m: v.nullable(v.number()),
  })), v.description('Each network catalog entry\'s upstream as the workers see it.')),
  queue: v.pipe(v.object({
    jobs: int,
    ready: v.pipe(int, v.description('Waiting for a worker now.')),
    running: int,
    scheduled: v.pipe(int, v.description('Waiting for their run time (retries with backoff, delayed jobs).')),
    oldestReadyAt: v.nullable(dateTime),
    oldestReadySeconds: v.pipe(v.nullable(int), v.description('How long the oldest ready job has waited.')),
  }), v.description('The job queue (graphile-worker).')),
  webhooks: v.pipe(v.object({
    pending: int,
    due: v.pipe(int, v.description('Pending deliveries whose next attempt is due.')),
    oldestDueAt: v.nullable(dateTime),
  }), v.description('The webhook backlog.')),
});

registerSchemas({
  AdminAccount, AdminAccountPage, AdminAccountDetail, RevokeKeysResult, AdminWorkspace, AdminWorkspacePage,
  AdminWorkspaceDetail, AdminModel, AdminModelList, AdminHealth,
});
