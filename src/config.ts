// Configuration, read once from the environment, typed, failing fast on bad values.
// Every variable is documented in docs/configuration.md (or the page of its feature under docs/).

import path from 'node:path';
import { LOG_LEVELS } from './log.ts';

export class ConfigError extends Error {}

function int(name: string, def: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}`);
  return n;
}

function num(name: string, def: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new ConfigError(`${name} must be a number ≥ ${min}`);
  return n;
}

function bool(name: string, def: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return def;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false`);
}

function str(name: string, def: string): string {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? def : raw;
}

/** KILN_LOG: one of the logger's levels (docs/configuration.md). */
function logLevel(): string {
  const raw = str('KILN_LOG', 'info');
  if (!(LOG_LEVELS as string[]).includes(raw)) throw new ConfigError(`KILN_LOG must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw;
}

function opt(name: string): string | undefined {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

/** NODE_ENV=production: the development-only switches are refused (KILN_DEV_ISSUER, MCP's test-only auth bypass). */
export function production(): boolean {
  return str('NODE_ENV', '') === 'production';
}

/**
 * The API key a catalog entry names (`upstream.apiKeyEnv`). Provider keys are data — the model
 * catalog names them — so they are looked up when a call needs one, not read at start.
 */
export function providerKey(name: string): string | undefined {
  return process.env[name];
}

/** The environment a child process inherits (`kiln gm` runs graphile-migrate with it, plus its database URLs). */
export function childEnv(): NodeJS.ProcessEnv {
  return { ...process.env };
}

/** KILN_WEBHOOK_RETRY_SCHEDULE: comma-separated seconds between attempts (the first attempt is immediate). */
function schedule(name: string, def: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return def;
  const parts = raw.split(',').map((s) => s.trim());
  if (parts.length > 50 || !parts.every((p) => /^\d{1,7}$/.test(p))) {
    throw new ConfigError(`${name} must be comma-separated whole seconds (at most 50 steps), e.g. "5,300,1800"`);
  }
  return parts.map(Number);
}

/**
 * KILN_EVENT_RETENTION: how long events and the webhook delivery log are kept, in seconds, at
 * least a day (GET /events resumes over the last 24 h); `forever` = undefined, nothing purged.
 */
function eventRetention(name: string, def: number): number | undefined {
  const raw = opt(name);
  if (raw?.trim().toLowerCase() === 'forever') return undefined;
  const seconds = duration(name) ?? def;
  if (seconds < 86_400) throw new ConfigError(`${name} must be at least 1d (event streams resume over the last 24 h), or forever`);
  // purge_events takes whole seconds in an int.
  if (seconds > 2_147_483_647) throw new ConfigError(`${name} is too long; use forever to keep events`);
  return seconds;
}

/** KILN_AUDIT_RETENTION: a duration (at least a day) or `forever` (the default): undefined = kept forever. */
function auditRetention(name: string): number | undefined {
  const raw = opt(name);
  if (raw === undefined || raw.trim().toLowerCase() === 'forever') return undefined;
  const seconds = duration(name)!;
  if (seconds < 86_400) throw new ConfigError(`${name} must be at least 1d, or forever`);
  return seconds;
}

/** Single sign-on for the console (OpenID Connect); undefined when KILN_OIDC_ISSUER is unset. */
function oidcConfig() {
  const issuer = opt('KILN_OIDC_ISSUER');
  if (!issuer) return undefined;
  if (!/^https?:\/\/[^\s]+$/.test(issuer)) throw new ConfigError('KILN_OIDC_ISSUER must be an http(s) URL');
  // Over http the provider's answers (tokens, keys) are not protected in transit: development only.
  if (production() && !issuer.startsWith('https://')) throw new ConfigError('KILN_OIDC_ISSUER must be https under NODE_ENV=production');
  const clientId = opt('KILN_OIDC_CLIENT_ID');
  if (!clientId) throw new ConfigError('KILN_OIDC_ISSUER needs KILN_OIDC_CLIENT_ID');
  const scopes = str('KILN_OIDC_SCOPES', 'openid email profile').split(/\s+/).filter(Boolean);
  if (!scopes.includes('openid')) throw new ConfigError('KILN_OIDC_SCOPES must include openid');
  return {
    issuer,
    clientId,
    /** Unset: a public client (PKCE alone). */
    clientSecret: opt('KILN_OIDC_CLIENT_SECRET'),
    scopes,
    /** Email domains whose verified users are created on first sign-in (lower case). */
    allowedDomains: (opt('KILN_OIDC_ALLOWED_DOMAINS') ?? '').split(',').map((d) => d.trim().toLowerCase()).filter(Boolean),
    /** Members of this group (the ID token's `groups` claim) are admins. */
    adminGroup: opt('KILN_OIDC_ADMIN_GROUP'),
  };
}

/** A duration such as `30d`, `12h`, `15m` or `90s`, in seconds; unset = undefined. */
function duration(name: string): number | undefined {
  const raw = opt(name);
  if (raw === undefined) return undefined;
  const m = /^(\d{1,9})([smhd])$/.exec(raw.trim());
  if (!m || Number(m[1]) === 0) throw new ConfigError(`${name} must be a duration such as 30d, 12h, 15m or 90s, got ${JSON.stringify(raw)}`);
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as 's' | 'm' | 'h' | 'd'];
}

/** A duration such as `3s`, `500ms` or `1m`, in milliseconds; unset = `def`. */
function millis(name: string, def: number): number {
  const raw = opt(name);
  if (raw === undefined) return def;
  const m = /^(\d{1,7})(ms|s|m)$/.exec(raw.trim());
  if (!m) throw new ConfigError(`${name} must be a duration such as 3s, 500ms or 1m, got ${JSON.stringify(raw)}`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[m[2] as 'ms' | 's' | 'm'];
}

/** A postgres:// URL, or undefined; anything else fails at start. */
function dbUrl(name: string): string | undefined {
  const v = opt(name);
  if (v !== undefined && !/^postgres(ql)?:\/\/\S+$/.test(v)) throw new ConfigError(`${name} must be a postgres:// URL`);
  return v;
}

/** KILN_STORE_OUTAGE_GRACE: a duration (default 10m), at most 7d. */
function outageGrace(name: string): number {
  const seconds = duration(name) ?? 600;
  if (seconds > 7 * 86_400) throw new ConfigError(`${name} must be at most 7d`);
  return seconds;
}

/** The image store's backend (KILN_STORE) and, for s3, its bucket settings; see docs/storage.md. */
function storeConfig() {
  const backend = str('KILN_STORE', 'postgres');
  if (backend !== 'postgres' && backend !== 's3') throw new ConfigError(`KILN_STORE must be postgres or s3, got ${JSON.stringify(backend)}`);
  const bucket = opt('KILN_S3_BUCKET');
  if (backend === 's3' && !bucket) throw new ConfigError('KILN_STORE=s3 needs KILN_S3_BUCKET');
  const prefix = str('KILN_S3_PREFIX', '');
  if (prefix && (!/^[A-Za-z0-9][A-Za-z0-9_.\/-]{0,199}$/.test(prefix) || /\.\.|\/\//.test(prefix))) throw new ConfigError('KILN_S3_PREFIX may hold letters, digits and _ . / - (at most 200)');
  const url = (name: string) => {
    const v = opt(name);
    if (v !== undefined && !/^https?:\/\/[^\s]+$/.test(v)) throw new ConfigError(`${name} must be an http(s) URL`);
    return v?.replace(/\/+$/, '');
  };
  return {
    backend: backend as 'postgres' | 's3',
    /** Only with backend s3. */
    s3: bucket
      ? {
          bucket,
          /** Any S3-compatible service (MinIO, R2, …); unset = AWS. */
          endpoint: url('KILN_S3_ENDPOINT'),
          /** The endpoint presigned URLs are made for, when clients reach the bucket by another name than Kiln does (docker-compose's MinIO). */
          publicEndpoint: url('KILN_S3_PUBLIC_ENDPOINT'),
          region: opt('KILN_S3_REGION') ?? opt('AWS_REGION') ?? 'us-east-1',
          forcePathStyle: bool('KILN_S3_FORCE_PATH_STYLE', false),
          /** Keys are `<prefix><path>`; a non-empty prefix ends in `/` unless it is meant as a name prefix. */
          prefix,
          /** /files answers 302 to a presigned GET (true) or streams the bytes through (false). */
          redirect: bool('KILN_S3_REDIRECT', true),
        }
      : undefined,
    /** Outputs older than this are removed (seconds); undefined = kept forever. */
    retentionSeconds: duration('KILN_RETENTION'),
    /** How often the retention and orphan sweep runs, seconds (at most a minute). */
    sweepSeconds: int('KILN_RETENTION_SWEEP_SECONDS', 60, 1, 60),
    /** A bucket key no row references is deleted only once noted this long ago: longer than any write or presigned URL. */
    orphanGraceSeconds: int('KILN_STORE_ORPHAN_GRACE_SECONDS', 3600, 1, 7 * 86_400),
    /**
     * How long an image generation keeps retrying the store with the provider's output held
     * before it fails uncharged (docs/storage.md, "When the store is down"), seconds.
     */
    outageGraceSeconds: outageGrace('KILN_STORE_OUTAGE_GRACE'),
  };
}

export type StoreConfig = ReturnType<typeof storeConfig>;

/** The /metrics listener (docs/observability.md): none unless KILN_METRICS_PORT is set. */
function metricsConfig() {
  const port = opt('KILN_METRICS_PORT') === undefined ? undefined : int('KILN_METRICS_PORT', 0, 0, 65535);
  return { port, host: str('KILN_METRICS_HOST', '127.0.0.1'), token: opt('KILN_METRICS_TOKEN') };
}

export function loadConfig() {
  const port = int('PORT', 8787, 0, 65535);
  const host = str('HOST', '127.0.0.1');
  const databaseUrl = opt('DATABASE_URL');
  for (const name of ['KILN_DATABASE_POOLER_URL', 'KILN_DATABASE_REPLICA_URL', 'KILN_DATABASE_OWNER_URL']) {
    if (opt(name) && !databaseUrl) throw new ConfigError(`${name} needs DATABASE_URL (the primary, direct)`);
  }
  const publicUrl = str('KILN_PUBLIC_URL', `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  return {
    databaseUrl,
    /**
     * PgBouncer in transaction mode (docs/operators.md, "Scale-out"): the queries and SQL
     * functions of every process go through it (no prepared statements, no session state);
     * LISTEN, session advisory locks, graphile-worker and migrations stay on DATABASE_URL.
     * Needs DATABASE_URL (the embedded cluster has no pooler).
     */
    poolerUrl: dbUrl('KILN_DATABASE_POOLER_URL'),
    /**
     * The owner of Kiln's schemas, for migrations only (`kiln migrate`, `kiln gm`, and `kiln serve`'s
     * migration at start): the service itself runs as DATABASE_URL's role, a member of kiln_app
     * (docs/operators.md, "Database roles"). Unset: DATABASE_URL migrates.
     */
    ownerUrl: dbUrl('KILN_DATABASE_OWNER_URL'),
    /** A streaming replica for the reads that tolerate a bounded lag (lists, daily usage, run history). */
    replicaUrl: dbUrl('KILN_DATABASE_REPLICA_URL'),
    /** Past this lag (replayed WAL position, in time) or while unreachable, the replica's reads go to the primary, ms. */
    replicaMaxLagMs: millis('KILN_REPLICA_MAX_LAG', 5000),
    dataDir: path.resolve(str('KILN_DATA_DIR', '.kiln')),
    embeddedPort: int('KILN_EMBEDDED_PG_PORT', 0, 0, 65535),
    port,
    host,
    /** Origin clients use to reach this service; signed and public image URLs are built on it. */
    publicUrl,
    dbPoolSize: int('KILN_DB_POOL_SIZE', 10, 1, 1000),
    /** Requests per minute per key on read endpoints. */
    readRpm: int('KILN_READ_RPM', 600, 1),
    /** Requests per minute per account on POST /images/transforms (shared with the app's image tools). */
    transformRpm: int('KILN_TRANSFORM_RPM', 60, 1),
    /** Image transforms decoding at once per process (CPU- and memory-heavy). */
    transformConcurrency: int('KILN_TRANSFORM_CONCURRENCY', 2, 1, 64),
    /** Milliseconds the authorize/rate-limit call may take before the request fails closed with 503. */
    limiterTimeoutMs: int('KILN_LIMITER_TIMEOUT_MS', 2000, 1),
    defaultMarkup: num('KILN_DEFAULT_MARKUP', 1.25, 1),
    defaultImageModel: str('KILN_DEFAULT_IMAGE_MODEL', 'local/sketch'),
    defaultCodeModel: str('KILN_DEFAULT_CODE_MODEL', 'local/coder'),
    /** Largest JSON request body, bytes. */
    maxBodyBytes: int('KILN_MAX_BODY_BYTES', 16 * 1024 * 1024, 1024),
    /** Secret for signing image URLs; when unset one is generated once and kept in the database (shared by every process). */
    urlSigningSecret: opt('KILN_URL_SIGNING_SECRET'),
    signedUrlTtlSeconds: int('KILN_SIGNED_URL_TTL', 3600, 1),
    store: storeConfig(),
    /**
     * Executions of one generation that ran to an end (the provider answered, failed or timed
     * out) before it fails for good: transient failures retry with backoff. Waiting for a parallel
     * slot, a takeover from a dead worker and a worker's shutdown do not count.
     */
    generationMaxAttempts: int('KILN_GENERATION_MAX_ATTEMPTS', 5, 1, 25),
    /**
     * Executions of one generation cut off by a dead worker (a crash, a kill, a lost database
     * session) in a row before it fails for good: a request that crashes every worker it meets.
     * Such an execution is taken over and never counts as an attempt. At most 20: a job is picked
     * up at most kiln_private.generation_job_attempts() (25) times.
     */
    generationMaxCrashes: int('KILN_GENERATION_MAX_CRASHES', 10, 1, 20),
    /**
     * Deadline for one execution of a generation (all provider calls of that attempt), ms. At most
     * 3 h: graphile-worker unlocks (and runs again) any job locked for 4 h, and its public API has
     * no way to keep a live worker's lock fresh.
     */
    generationTimeoutMs: int('KILN_GENERATION_TIMEOUT_MS', 600_000, 100, 3 * 3600_000),
    /** Per-request timeout of an upstream provider call, ms. */
    providerTimeoutMs: int('KILN_PROVIDER_TIMEOUT_MS', 120_000, 100),
    /** Attempts of one upstream call inside an execution (429/5xx/network retried with backoff). */
    providerAttempts: int('KILN_PROVIDER_ATTEMPTS', 3, 1, 10),
    /** Consecutive failed upstream calls (each after its retries) after which a catalog entry is skipped for its fallbacks. */
    upstreamFailureThreshold: int('KILN_UPSTREAM_FAILURES', 5, 1, 1000),
    /** How long a failing entry is skipped before one trial call decides, seconds. */
    upstreamSkipSeconds: int('KILN_UPSTREAM_SKIP_SECONDS', 30, 1, 86_400),
    /** When an account's parallel slots are all busy, look again after this long (a freed slot wakes it sooner), ms. */
    slotRetryMs: int('KILN_SLOT_RETRY_MS', 2000, 10),
    workerConcurrency: int('KILN_WORKER_CONCURRENCY', 8, 1, 1000),
    /**
     * Slots of KILN_WORKER_CONCURRENCY that batch lines never take (docs/configuration.md): an
     * interactive generation always finds one free while a batch drains, and the drain's share of
     * the machine is bounded. Default a quarter of the concurrency (at least 1); batch jobs always
     * get at least one slot.
     */
    workerInteractiveSlots: int('KILN_WORKER_INTERACTIVE_SLOTS', Math.max(1, Math.floor(int('KILN_WORKER_CONCURRENCY', 8, 1, 1000) / 4)), 0, 1000),
    /**
     * graphile-worker's own connections per worker process (direct: it LISTENs and locks jobs).
     * Tasks run their queries on KILN_DB_POOL_SIZE's pool (pooled behind PgBouncer), so this pool
     * only fetches and completes jobs; see docs/operators.md for the arithmetic.
     */
    workerDbPoolSize: int('KILN_WORKER_DB_POOL_SIZE', 10, 2, 1000),
    /** How often a worker records that it is alive (and checks that it still holds its lease). */
    workerHeartbeatSeconds: int('KILN_WORKER_HEARTBEAT_SECONDS', 5, 1),
    /** How often a worker looks for dead workers (lease session gone) and unlocks their jobs, ms. */
    workerSweepMs: int('KILN_WORKER_SWEEP_MS', 1000, 100),
    /** Only for workers without a lease (registered before leases, or died before registering): silent this long = dead. */
    workerStaleSeconds: int('KILN_WORKER_STALE_SECONDS', 30, 3),
    runWindowSeconds: int('KILN_RUN_WINDOW_SECONDS', 300, 1),
    /** Event streams (GET …/events) one account may hold open on one API process. */
    maxStreams: int('KILN_MAX_STREAMS', 100, 1, 100_000),
    /** How long the first accepted request of an Idempotency-Key is kept (and replayed), seconds. */
    idempotencyTtlSeconds: int('KILN_IDEMPOTENCY_TTL_SECONDS', 86_400, 1, 365 * 86_400),
    logLevel: logLevel(),
    /** Deadline of one webhook delivery attempt (connect to end of the answer's headers), ms. */
    webhookTimeoutMs: int('KILN_WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
    /** Events and the webhook delivery log older than this are purged (seconds); undefined = kept forever. */
    eventRetentionSeconds: eventRetention('KILN_EVENT_RETENTION', 30 * 86_400),
    /** Seconds before each retry of a failed webhook delivery; after the last, the delivery is failed. */
    webhookRetrySchedule: schedule('KILN_WEBHOOK_RETRY_SCHEDULE', [5, 300, 1800, 7200, 18_000, 36_000, 36_000]),
    /** Development and tests only: webhook URLs may be http and resolve to private or loopback addresses. */
    webhookAllowPrivate: bool('KILN_WEBHOOK_ALLOW_PRIVATE', false),
    /** Public URL of the MCP endpoint and the required token audience; unset = `${publicUrl}/mcp` (see src/mcp/mount.ts). */
    mcpUrl: opt('MCP_URL'),
    oidcIssuer: opt('OIDC_ISSUER'),
    oidcJwksUrl: opt('OIDC_JWKS_URL'),
    /**
     * KILN_OIDC_JWKS_CACHE: how long the MCP endpoint keeps the token issuer's signing keys before it
     * asks again (seconds; default 1 h). While the issuer is unreachable the keys it has keep serving.
     */
    oidcJwksCacheSeconds: duration('KILN_OIDC_JWKS_CACHE') ?? 3600,
    oidcAutoLinkEmail: bool('OIDC_AUTO_LINK_EMAIL', false),
    /** Exact browser origins (scheme://host[:port], comma-separated) allowed to call the MCP endpoint; unset = MCP_URL's own origin. */
    mcpAllowedOrigins: opt('MCP_ALLOWED_ORIGINS')?.split(',').map((s) => s.trim()).filter(Boolean),
    /** Development only: a loopback OIDC issuer for `kiln dev-token` tokens (src/mcp/dev-issuer.ts). */
    devIssuer: bool('KILN_DEV_ISSUER', false),
    devIssuerPort: int('KILN_DEV_ISSUER_PORT', 8788, 0, 65535),
    production: production(),
    /** Use X-Forwarded-For for the client address the audit log records (only behind a proxy you run). */
    trustProxy: bool('KILN_TRUST_PROXY', false),
    /** Audit entries older than this are purged (seconds); undefined = kept forever (the default). */
    auditRetentionSeconds: auditRetention('KILN_AUDIT_RETENTION'),
    oidc: oidcConfig(),
    /** A console session unused this long ends (seconds); it ends 7 days after sign-in whatever its use. */
    sessionIdleSeconds: duration('KILN_SESSION_IDLE') ?? 12 * 3600,
    sessionLifetimeSeconds: 7 * 86_400,
    metrics: metricsConfig(),
  };
}

export type Config = ReturnType<typeof loadConfig>;

/**
 * The user CLI's settings (`kiln generate`, `kiln run`, …; src/cli/user/): it talks to a Kiln
 * service over HTTP with an API key, never to the database, so none of the above applies to it.
 */
export function loadClientConfig() {
  return {
    /** The service's URL; a trailing `/api/v1` is accepted. */
    url: str('KILN_URL', 'http://127.0.0.1:8787'),
    apiKey: opt('KILN_API_KEY'),
    /** Attempts per request (503 and network errors are retried with backoff), the first included. */
    attempts: int('KILN_CLIENT_ATTEMPTS', 5, 1, 20),
  };
}
