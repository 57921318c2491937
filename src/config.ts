// Configuration, read once from the environment, typed, failing fast on bad values.
// Every variable is documented in README.md ("Configuration").

import path from 'node:path';

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

function opt(name: string): string | undefined {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

export function loadConfig() {
  const port = int('PORT', 8787, 0, 65535);
  const host = str('HOST', '127.0.0.1');
  const publicUrl = str('KILN_PUBLIC_URL', `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  return {
    databaseUrl: opt('DATABASE_URL'),
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
    /** Milliseconds the authorize/rate-limit call may take before the request fails closed with 503. */
    limiterTimeoutMs: int('KILN_LIMITER_TIMEOUT_MS', 2000, 1),
    defaultMarkup: num('KILN_DEFAULT_MARKUP', 1.25, 1),
    defaultImageModel: str('KILN_DEFAULT_IMAGE_MODEL', 'local/sketch'),
    defaultCodeModel: str('KILN_DEFAULT_CODE_MODEL', 'local/coder'),
    /** Largest JSON request body, bytes. */
    maxBodyBytes: int('KILN_MAX_BODY_BYTES', 16 * 1024 * 1024, 1024),
    /** Secret for signing image URLs; generated and kept in the data dir when unset. */
    urlSigningSecret: opt('KILN_URL_SIGNING_SECRET'),
    signedUrlTtlSeconds: int('KILN_SIGNED_URL_TTL', 3600, 1),
    workerConcurrency: int('KILN_WORKER_CONCURRENCY', 8, 1, 1000),
    /** How long a worker may go without a heartbeat before its jobs are unlocked for others. */
    workerHeartbeatSeconds: int('KILN_WORKER_HEARTBEAT_SECONDS', 5, 1),
    workerStaleSeconds: int('KILN_WORKER_STALE_SECONDS', 30, 3),
    runWindowSeconds: int('KILN_RUN_WINDOW_SECONDS', 300, 1),
    logLevel: str('KILN_LOG', 'info'),
    mcpUrl: opt('MCP_URL'),
    oidcIssuer: opt('OIDC_ISSUER'),
    oidcJwksUrl: opt('OIDC_JWKS_URL'),
    oidcAutoLinkEmail: bool('OIDC_AUTO_LINK_EMAIL', false),
    devIssuer: bool('KILN_DEV_ISSUER', false),
  };
}

export type Config = ReturnType<typeof loadConfig>;
