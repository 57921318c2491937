// Test helpers: a private database cloned from the migrated template, a real HTTP server on
// loopback, and shortcuts to create accounts and keys through the same SQL functions the CLI uses.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import type { H3 } from 'h3';
import { toNodeHandler } from 'h3/node';
import postgres from 'postgres';
import { loadConfig, type Config } from '../src/config.ts';
import { createContext, type Context } from '../src/context.ts';
import { connect, type Sql } from '../src/db/pool.ts';
import { extensions } from '../src/cli/mounts.ts';
import { generateKey } from '../src/auth/secrets.ts';
import { API_PREFIX } from '../src/http/route.ts';
import { createApp, type AppOptions } from '../src/http/server.ts';

export interface TestDb {
  /** The service's URL: a login member of kiln_app, as production runs it (give it to `kiln serve` and workers). */
  url: string;
  /** The owner's pool, for the test's own fixtures and checks (it may read and change any table). */
  sql: Sql;
  /** The service's pool (kiln_app): what startServer's app and the test workers query with. */
  app: Sql;
  /** The owner's URL (a superuser in tests): `kiln migrate`, and what only the owner may do. */
  ownerUrl: string;
}

let counter = 0;

// Cleanups run once, after every test of the file (registered at import, at top level:
// `after` called inside a `before` hook would run as soon as that hook ends).
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const fn of cleanups.reverse()) await fn().catch(() => {});
});
export function onCleanup(fn: () => Promise<unknown>) {
  cleanups.push(fn);
}

/** A fresh database for this test file (dropped when the file ends). */
export async function createTestDb(): Promise<TestDb> {
  const adminUrl = process.env.KILN_TEST_ADMIN_URL;
  const template = process.env.KILN_TEST_TEMPLATE;
  if (!adminUrl || !template) throw new Error('run tests with `npm test` (it prepares the database)');
  const name = `kiln_t_${process.pid}_${++counter}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  // CREATE DATABASE … TEMPLATE fails while another session uses the template: retry briefly.
  for (let i = 0; ; i++) {
    try {
      await admin.unsafe(`create database ${name} template ${template}`);
      break;
    } catch (e: any) {
      if (e.code !== '55006' || i > 50) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const ownerUrl = u.toString();
  const sql = connect(ownerUrl, { max: 20 });
  const url = serviceUrl(ownerUrl);
  const app = connect(url, { max: 20 });
  onCleanup(async () => {
    await Promise.all([sql.end({ timeout: 5 }), app.end({ timeout: 5 })]);
    // Connections a stopped component is still closing get a moment before the drop forces them
    // out (a test may end with a component it never stopped).
    for (let i = 0; i < 50; i++) {
      const [{ n }] = await admin`select count(*)::int as n from pg_stat_activity where datname = ${name}`;
      if (n === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await admin.unsafe(`drop database if exists ${name} with (force)`).catch(() => {});
    await admin.end();
  });
  return { url, sql, app, ownerUrl };
}

/** `ownerUrl` with the service's login role (KILN_TEST_SERVICE_ROLE, made by test/_run.ts) in place of the owner. */
export function serviceUrl(ownerUrl: string): string {
  const role = process.env.KILN_TEST_SERVICE_ROLE;
  if (!role) throw new Error('run tests with `npm test` (it makes the service role)');
  const [user, password] = role.split(':');
  const u = new URL(ownerUrl);
  u.username = user!;
  u.password = password!;
  return u.toString();
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig(), logLevel: process.env.KILN_LOG ?? 'silent', ...overrides };
}

export interface TestServer {
  base: string;
  origin: string;
  ctx: Context;
  db: TestDb;
  /** The app the server runs (its route table: `app['~routes']`). */
  app: H3;
  close(): Promise<void>;
}

/**
 * The real h3 app on a real HTTP server bound to 127.0.0.1 on a free port. `extend` replaces the
 * app's extension mounts (default: src/cli/mounts.ts, as in production).
 */
export async function startServer(opts: { config?: Partial<Config>; db?: TestDb; extend?: AppOptions['extend'] } = {}): Promise<TestServer> {
  const db = opts.db ?? (await createTestDb());
  const shutdown = new AbortController();
  // Idle sockets kept as long as `kiln serve` keeps them (65 s): with Node's default 5 s, a loaded
  // test process that reuses a socket just as the server closes it reads ECONNRESET.
  const server = http.createServer({ keepAliveTimeout: 65_000 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  const config = testConfig({ publicUrl: origin, port, ...opts.config });
  const ctx = createContext(config, db.app, shutdown.signal);
  const app = createApp(ctx, { extend: opts.extend ?? extensions });
  server.on('request', toNodeHandler(app) as any);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    shutdown.abort();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  onCleanup(close);
  return { base: origin + API_PREFIX, origin, ctx, db, app, close };
}

export async function createAccount(sql: Sql, opts: { tier?: string; budgetMicros?: bigint | number | null; email?: string } = {}) {
  const email = opts.email ?? `u${Date.now()}${Math.random().toString(36).slice(2, 8)}@example.test`;
  const useDefault = opts.budgetMicros === undefined;
  const budget = opts.budgetMicros == null ? null : String(opts.budgetMicros);
  const [a] = await sql`select * from kiln.create_account(${email}, ${opts.tier ?? 'pro'}, ${budget}::bigint, ${useDefault})`;
  return a as { id: string; email: string; tier: string };
}

export async function createKey(sql: Sql, accountId: string, opts: { scopes?: string[]; rpm?: number | null; workspaceId?: string | null } = {}) {
  const { key, hash, displayPrefix } = generateKey();
  const [k] = await sql`select * from kiln.create_api_key(${accountId}, ${hash}, ${displayPrefix}, ${opts.scopes ?? ['read', 'write']}, ${opts.rpm ?? null}, ${opts.workspaceId ?? null}, null)`;
  return { id: k.id as string, key };
}

/** fetch with the bearer key and JSON body. */
export async function api(base: string, key: string | null, path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...init.headers };
  if (key) headers.authorization = `Bearer ${key}`;
  if (init.body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(base + path, {
    method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
    headers,
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: any = text;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, body };
}

/** Runs `fn` with these environment variables set (undefined = unset), then restores the environment. */
export function withEnv<T>(env: Record<string, string | undefined>, fn: () => T): T {
  const saved = { ...process.env };
  try {
    for (const [k, v] of Object.entries(env)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    return fn();
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}
