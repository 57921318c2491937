// The CLI command table. Each command parses its flags, calls one SQL function (or the
// service), and returns what is printed as JSON.

import fs from 'node:fs';
import path from 'node:path';
import { migrateAndSeed, openDatabase, requireEmbeddedCluster } from './boot.ts';
import { childEnv } from '../config.ts';
import { generateKey } from '../auth/secrets.ts';
import { microsFlag, oneOf, parseArgs, required, UsageError, uuidFlag } from './args.ts';
import { modelEntryJson, resolveEntry } from './model-entry.ts';
import { withDb, type Command } from './command.ts';
import { workflowCommands } from './workflows.ts';
import { mcpCommands } from './mcp.ts';
import { storeCommands } from './store.ts';
import { doctorCommands } from './doctor.ts';
import { addWorkspaceMember, type MemberRow } from '../db/sql/add_workspace_member.ts';
import { setAccountAdmin } from '../db/sql/admin.ts';
import { allModels, modelForUpdate } from '../db/sql/all_models.ts';
import { countMigrations } from '../db/sql/count_migrations.ts';
import { MIGRATIONS_FOLDER } from '../db/committed.ts';
import { expandIncludes, hasIncludes } from '../db/definitions.ts';
import { createAccount, type AccountRow } from '../db/sql/create_account.ts';
import { listAuditLog } from '../db/sql/audit.ts';
import { createKey } from '../db/sql/keys.ts';
import { KEY_SCOPES } from '../auth/scopes.ts';
import { createWorkspace } from '../db/sql/create_workspace.ts';
import { getUsage } from '../db/sql/get_usage.ts';
import { removeWorkspaceMember } from '../db/sql/remove_workspace_member.ts';
import { revokeApiKey } from '../db/sql/revoke_api_key.ts';
import { setWorkspacePlan } from '../db/sql/set_workspace_plan.ts';
import { updateAccount } from '../db/sql/update_account.ts';
import { upsertModel } from '../db/sql/upsert_model.ts';

/** The service (HTTP server, worker, and what they load), imported only by the commands that run it: every other command starts without it. */
const serve = () => import('./serve.ts');

const TIERS = ['legacy_free', 'pro', 'enterprise', 'blocked'];

function tierFlag(t: unknown): string | undefined {
  if (t === undefined) return undefined;
  if (typeof t !== 'string' || !TIERS.includes(t)) throw new UsageError(`--tier must be one of ${TIERS.join(', ')}`);
  return t;
}

function accountJson(a: AccountRow) {
  return {
    id: a.id,
    email: a.email,
    tier: a.tier,
    budget_micros: a.budget_micros == null ? null : Number(a.budget_micros),
    created_at: a.created_at,
  };
}

function memberJson(m: MemberRow) {
  return { workspace: m.workspace_id, user: m.account_id, role: m.role, left_at: m.left_at };
}

export const commands: Record<string, Command> = {
  serve: {
    help: 'Run the API and the worker in one process (embedded Postgres when DATABASE_URL is unset).',
    run: async (argv, config) => (await serve()).runServices(config, { api: true, worker: true, argv }),
  },
  api: {
    help: 'Run the HTTP API only.',
    run: async (argv, config) => (await serve()).runServices(config, { api: true, worker: false, argv }),
  },
  worker: {
    help: 'Run the job worker only.',
    run: async (argv, config) => (await serve()).runServices(config, { api: false, worker: true, argv }),
  },
  migrate: {
    help: 'Apply committed migrations (and graphile-worker\'s schema) as the owner (KILN_DATABASE_OWNER_URL, else DATABASE_URL), and record KILN_AUDIT_RETENTION.',
    async run(argv, config) {
      parseArgs(argv, { options: {} });
      const db = await openDatabase(config, { migrate: false, poolSize: 1, create: true });
      try {
        await migrateAndSeed(config.ownerUrl ?? db.url, { config });
        const [row] = await countMigrations(db.sql);
        return { migrated: true, migrations: row!.n };
      } finally {
        await db.close();
      }
    },
  },
  'db url': {
    help: 'Print the connection URL of Kiln\'s database: DATABASE_URL, or the embedded cluster\'s (joined while Kiln runs; else started here and kept up until Ctrl-C). For psql, pg_dump and analysts (docs/analysts.md)',
    async run(argv, config) {
      parseArgs(argv, { options: {} });
      // Printed bare (not JSON), so `pg_dump "$(kiln db url)"` works.
      if (config.databaseUrl) {
        process.stdout.write(`${config.databaseUrl}\n`);
        return undefined;
      }
      requireEmbeddedCluster(config);
      const { startEmbedded } = await import('../db/embedded.ts');
      const pg = await startEmbedded(config.dataDir, { port: config.embeddedPort || undefined });
      process.stdout.write(`${pg.url}\n`);
      if (!pg.owned) return undefined;
      // Nothing else runs the cluster: the URL works while this command does.
      process.stderr.write('kiln db url: no Kiln process runs the embedded database, so this command started it; it stops on Ctrl-C (or run `kiln serve` and ask again)\n');
      await new Promise<void>((resolve) => {
        for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => resolve());
      });
      await pg.stop();
      return undefined;
    },
  },

  'user create': {
    help: '--email E [--tier legacy_free|pro|enterprise|blocked] [--budget-micros N|unlimited]',
    async run(argv, config) {
      const f = parseArgs(argv, {
        options: { email: { type: 'string' }, tier: { type: 'string' }, 'budget-micros': { type: 'string' } },
      }).values;
      const email = required(f, 'email');
      const tier = tierFlag(f.tier) ?? 'legacy_free';
      const budget = microsFlag(f['budget-micros'], 'budget-micros', true);
      return withDb(config, async (sql) => {
        const [a] = await createAccount(sql, email, tier, budget ?? null, budget === undefined);
        return accountJson(a!);
      });
    },
  },
  'user set': {
    help: '--user ID [--tier T] [--budget-micros N|unlimited] [--admin true|false]',
    async run(argv, config) {
      const f = parseArgs(argv, {
        options: { user: { type: 'string' }, tier: { type: 'string' }, 'budget-micros': { type: 'string' }, admin: { type: 'string' } },
      }).values;
      const id = uuidFlag(f, 'user')!;
      const tier = tierFlag(f.tier);
      const budget = microsFlag(f['budget-micros'], 'budget-micros', true);
      const admin = oneOf(f.admin, 'admin', ['true', 'false'] as const);
      if (tier === undefined && budget === undefined && admin === undefined) throw new UsageError('give --tier, --budget-micros or --admin');
      return withDb(config, (sql) => sql.begin(async (tx) => {
        // One transaction: both changes or neither (each audited as account.updated, actor operator).
        let a: AccountRow | undefined;
        if (tier !== undefined || budget !== undefined) [a] = await updateAccount(tx, id, tier ?? null, budget ?? null, budget !== undefined);
        let isAdmin: boolean | undefined;
        if (admin !== undefined) {
          const [r] = await setAccountAdmin(tx, id, admin === 'true');
          a = r;
          isAdmin = r!.is_admin;
        }
        return { ...accountJson(a!), ...(isAdmin === undefined ? {} : { admin: isAdmin }) };
      }));
    },
  },

  'key create': {
    help: '--user ID [--scopes read,write,keys,admin] [--rpm N] [--workspace ID] [--name N] [--budget-micros N] [--expires-at ISO-8601] [--require-end-user]',
    async run(argv, config) {
      const f = parseArgs(argv, {
        options: {
          user: { type: 'string' }, scopes: { type: 'string' }, rpm: { type: 'string' }, workspace: { type: 'string' }, name: { type: 'string', allowEmpty: true },
          'budget-micros': { type: 'string' }, 'expires-at': { type: 'string' }, 'require-end-user': { type: 'boolean' },
        },
      }).values;
      const user = uuidFlag(f, 'user')!;
      const workspace = uuidFlag(f, 'workspace', true);
      const scopes = String(f.scopes ?? 'read,write').split(',').map((s) => s.trim()).filter(Boolean);
      if (!scopes.length || scopes.some((s) => !(KEY_SCOPES as readonly string[]).includes(s))) {
        throw new UsageError(`--scopes must be a comma-separated set of ${KEY_SCOPES.join(', ')}`);
      }
      let rpm: number | null = null;
      if (f.rpm !== undefined) {
        if (typeof f.rpm !== 'string' || !/^\d{1,9}$/.test(f.rpm) || Number(f.rpm) < 1) throw new UsageError('--rpm must be a positive whole number');
        rpm = Number(f.rpm);
      }
      const budget = microsFlag(f['budget-micros'], 'budget-micros', false);
      let expiresAt: string | null = null;
      if (f['expires-at'] !== undefined) {
        const at = new Date(String(f['expires-at']));
        if (!/^\d{4}-\d\d-\d\d/.test(String(f['expires-at'])) || Number.isNaN(at.getTime())) throw new UsageError('--expires-at must be an ISO 8601 date-time, e.g. 2027-01-31T00:00:00Z');
        if (at.getTime() <= Date.now()) throw new UsageError('--expires-at must be in the future');
        expiresAt = at.toISOString();
      }
      const { key, hash, displayPrefix } = generateKey();
      return withDb(config, async (sql) => {
        // The operator may give any scope; `admin` counts only while the user is an admin.
        const [row] = await createKey(sql, user, workspace ?? null, [...KEY_SCOPES], hash, displayPrefix, f.name ?? null, [...new Set(scopes)], rpm,
          budget == null ? null : budget.toString(), expiresAt, f['require-end-user'] === true);
        const k = row!.k;
        return {
          id: k.id, key, prefix: k.prefix, user, scopes: k.scopes, rpm: k.rpm, workspace: k.workspaceId,
          budget_micros: k.budgetMicros, expires_at: k.expiresAt, require_end_user: k.requireEndUser, created_at: k.createdAt,
        };
      });
    },
  },
  'key revoke': {
    help: '--key-id ID',
    async run(argv, config) {
      const f = parseArgs(argv, { options: { 'key-id': { type: 'string' } } }).values;
      const id = uuidFlag(f, 'key-id')!;
      return withDb(config, async (sql) => {
        const [k] = await revokeApiKey(sql, id);
        return { id: k!.id, revoked_at: k!.revoked_at };
      });
    },
  },

  audit: {
    help: '[--user ID | --workspace ID] [--action A] [--limit N] [--before ID] — the audit log, newest first (every scope and the service-wide entries unless --user or --workspace)',
    async run(argv, config) {
      const f = parseArgs(argv, {
        options: { user: { type: 'string' }, workspace: { type: 'string' }, action: { type: 'string' }, limit: { type: 'string' }, before: { type: 'string' } },
      }).values;
      const user = uuidFlag(f, 'user', true);
      const workspace = uuidFlag(f, 'workspace', true);
      if (user && workspace) throw new UsageError('give --user or --workspace, not both');
      const before = uuidFlag(f, 'before', true);
      let limit = 50;
      if (f.limit !== undefined) {
        if (!/^\d{1,5}$/.test(String(f.limit)) || Number(f.limit) < 1 || Number(f.limit) > 10_000) throw new UsageError('--limit must be a whole number from 1 to 10000');
        limit = Number(f.limit);
      }
      if (f.action !== undefined && !/^[a-z_]{1,40}\.[a-z_]{1,40}$/.test(String(f.action))) throw new UsageError('--action must be an action name such as key.created');
      return withDb(config, async (sql) => {
        const rows = await listAuditLog(sql, user ?? workspace ?? null, limit, before ?? null, f.action ?? null);
        return { data: rows, next_before: rows.length === limit ? rows[rows.length - 1]!.id : null };
      });
    },
  },

  'workspace create': {
    help: '--name N --owner USER',
    async run(argv, config) {
      const f = parseArgs(argv, { options: { name: { type: 'string' }, owner: { type: 'string' } } }).values;
      const name = required(f, 'name');
      const owner = uuidFlag(f, 'owner')!;
      return withDb(config, async (sql) => {
        const [w] = await createWorkspace(sql, name, owner);
        return { id: w!.id, name: w!.name, owner: w!.owner_id, plan_status: w!.plan_status };
      });
    },
  },
  'workspace member add': {
    help: '--workspace ID --user USER [--role admin|member]',
    async run(argv, config) {
      const f = parseArgs(argv, {
        options: { workspace: { type: 'string' }, user: { type: 'string' }, role: { type: 'string' } },
      }).values;
      const ws = uuidFlag(f, 'workspace')!;
      const user = uuidFlag(f, 'user')!;
      const role = f.role ?? 'member';
      if (role !== 'admin' && role !== 'member') throw new UsageError('--role must be admin or member');
      return withDb(config, async (sql) => {
        const [m] = await addWorkspaceMember(sql, ws, user, role);
        return memberJson(m!);
      });
    },
  },
  'workspace member remove': {
    help: '--workspace ID --user USER',
    async run(argv, config) {
      const f = parseArgs(argv, { options: { workspace: { type: 'string' }, user: { type: 'string' } } }).values;
      const ws = uuidFlag(f, 'workspace')!;
      const user = uuidFlag(f, 'user')!;
      return withDb(config, async (sql) => {
        const [m] = await removeWorkspaceMember(sql, ws, user);
        return memberJson(m!);
      });
    },
  },
  'workspace plan': {
    help: '--workspace ID --status active|lapsed [--budget-micros N|unlimited]',
    async run(argv, config) {
      const f = parseArgs(argv, {
        options: { workspace: { type: 'string' }, status: { type: 'string' }, 'budget-micros': { type: 'string' } },
      }).values;
      const ws = uuidFlag(f, 'workspace')!;
      const status = required(f, 'status');
      if (status !== 'active' && status !== 'lapsed') throw new UsageError('--status must be active or lapsed');
      const budget = microsFlag(f['budget-micros'], 'budget-micros', true);
      return withDb(config, async (sql) => {
        const [w] = await setWorkspacePlan(sql, ws, status, budget ?? null, budget !== undefined);
        return { id: w!.id, plan_status: w!.plan_status, plan_budget_micros: w!.plan_budget_micros == null ? null : Number(w!.plan_budget_micros) };
      });
    },
  },

  'model upsert': {
    help: '--file model.json (one catalog entry, as `kiln model list` prints them; a key left out keeps its stored value; see docs/providers.md)',
    async run(argv, config) {
      const f = parseArgs(argv, { options: { file: { type: 'string' } } }).values;
      const file = required(f, 'file');
      let raw: unknown;
      try {
        raw = JSON.parse(fs.readFileSync(file, 'utf8'));
      } catch (e) {
        throw new UsageError(`cannot read ${file}: ${(e as Error).message}`);
      }
      const id = (raw as { id?: unknown } | null)?.id;
      return withDb(config, (sql) => sql.begin(async (tx) => {
        const [stored] = typeof id === 'string' ? await modelForUpdate(tx, id) : [];
        const res = resolveEntry(raw, stored ?? null, config.defaultMarkup);
        if (!res.ok) {
          const n = res.problems.length;
          throw new UsageError(`invalid model entry (${n} problem${n === 1 ? '' : 's'}):\n  - ${res.problems.join('\n  - ')}`);
        }
        const [m] = await upsertModel(tx, res.entry);
        if (!m) throw new Error('model not stored');
        return { id: m.id, name: m.name, category: m.category, provider: m.provider, enabled: m.enabled, updated_at: m.updated_at };
      }));
    },
  },
  'model list': {
    help: 'Print the catalog, including disabled entries and upstream cost, each entry in the file format of `kiln model upsert`.',
    async run(argv, config) {
      parseArgs(argv, { options: {} });
      return withDb(config, async (sql) => (await allModels(sql)).map(modelEntryJson));
    },
  },

  gm: {
    passthrough: true,
    help: '<graphile-migrate command> — e.g. `kiln gm watch`, `kiln gm commit`, `kiln gm status` (embedded database when DATABASE_URL is unset).',
    async run(argv, config) {
      const { spawnSync } = await import('node:child_process');
      const { startEmbedded } = await import('../db/embedded.ts');
      const env = childEnv();
      let stop: (() => Promise<void>) | null = null;
      if (config.ownerUrl) env.DATABASE_URL = config.ownerUrl;
      if (!config.databaseUrl) {
        const pg = await startEmbedded(config.dataDir);
        stop = pg.owned ? pg.stop : null;
        env.DATABASE_URL = pg.url;
        env.SHADOW_DATABASE_URL = pg.adminUrl('kiln_shadow');
        env.ROOT_DATABASE_URL = pg.adminUrl('postgres');
      }
      try {
        // graphile-worker's schema must exist before Kiln's migrations run (shadow included).
        const { runMigrations } = await import('graphile-worker');
        const { ownedPgPool } = await import('../db/pg-pool.ts');
        const workerPool = ownedPgPool(env.DATABASE_URL!, { max: 1 });
        try {
          await runMigrations({ pgPool: workerPool.pool });
        } finally {
          await workerPool.close();
        }
        const bin = path.join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'graphile-migrate');
        // `commit`: the current migration's `--! include`s become the files' text first, so the
        // committed migration holds every definition it ships (src/db/definitions.ts); put back if
        // the commit fails.
        const restore = argv[0] === 'commit' ? expandCurrentIncludes() : () => {};
        const res = spawnSync(bin, argv, { stdio: 'inherit', env });
        if (res.status !== 0) {
          restore();
          throw new Error(`graphile-migrate exited with ${res.status}`);
        }
        return undefined;
      } finally {
        await stop?.();
      }
    },
  },

  schema: {
    help: '[--url URL] — development: rewrite db/schema.sql from a scratch database migrated with the committed migrations, and db/functions/ and db/views/ from one migrated with the current migration too (DATABASE_URL\'s server, or the embedded cluster); --url dumps that already-migrated database instead (the `kiln gm commit` hook).',
    async run(argv, config) {
      const f = parseArgs(argv, { options: { url: { type: 'string', allowEmpty: true } } }).values;
      const { dumpCommittedSchema, dumpSchema, writeSchemaFile, withScratchDatabase, SCHEMA_FILE } = await import('../db/schema-dump.ts');
      const { renderDefinitions, writeDefinitions } = await import('../db/definitions.ts');
      let text: string;
      let definitions: Map<string, string>;
      if (typeof f.url === 'string') {
        const { default: postgres } = await import('postgres');
        const sql = postgres(f.url, { max: 1, onnotice: () => {} });
        try {
          text = await dumpSchema(sql);
          definitions = await renderDefinitions(sql);
        } finally {
          await sql.end();
        }
      } else {
        const dump = async (adminUrl: string) => {
          text = await dumpCommittedSchema(adminUrl);
          definitions = await withScratchDatabase(adminUrl, { includeCurrent: true }, renderDefinitions);
        };
        if (config.databaseUrl) {
          await dump(config.ownerUrl ?? config.databaseUrl);
        } else {
          const { startEmbedded } = await import('../db/embedded.ts');
          const pg = await startEmbedded(config.dataDir, { port: config.embeddedPort || undefined });
          try {
            await dump(pg.adminUrl('postgres'));
          } finally {
            if (pg.owned) await pg.stop();
          }
        }
      }
      const changed = writeSchemaFile(text!);
      const { written, removed } = writeDefinitions(definitions!);
      return { file: SCHEMA_FILE, changed, lines: text!.split('\n').length - 1, definitions: { written, removed } };
    },
  },

  ...workflowCommands,
  ...mcpCommands,
  ...storeCommands,
  ...doctorCommands,

  usage: {
    help: '--user ID [--workspace ID]',
    async run(argv, config) {
      const f = parseArgs(argv, { options: { user: { type: 'string' }, workspace: { type: 'string' } } }).values;
      const user = uuidFlag(f, 'user')!;
      const ws = uuidFlag(f, 'workspace', true);
      return withDb(config, async (sql) => {
        const [r] = await getUsage(sql, user, ws ?? null);
        return r?.usage ?? null;
      });
    },
  },
};

/** Expands `--! include` lines in db/migrations/current/ in place; returns what puts the files back. */
function expandCurrentIncludes(): () => void {
  const dir = path.join(MIGRATIONS_FOLDER, 'current');
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.sql')).map((f) => path.join(dir, f)) : [];
  const single = path.join(MIGRATIONS_FOLDER, 'current.sql');
  if (fs.existsSync(single)) files.push(single);
  const saved = new Map<string, string>();
  for (const f of files) {
    const text = fs.readFileSync(f, 'utf8');
    if (!hasIncludes(text)) continue;
    saved.set(f, text);
    fs.writeFileSync(f, expandIncludes(text));
  }
  return () => { for (const [f, text] of saved) fs.writeFileSync(f, text); };
}
