// GET /healthz and GET /readyz on the real server: liveness without a key or the database;
// readiness that follows the database (reachable, migrated to this build) and the shutdown, with
// a 503 in the error envelope that never carries the cause.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { toNodeHandler } from 'h3/node';
import postgres from 'postgres';
import { createContext } from '../src/context.ts';
import { createApp } from '../src/http/server.ts';
import { onCleanup, startServer, testConfig, type TestDb } from './_setup.ts';

const shipped = fs.readdirSync(new URL('../db/migrations/committed/', import.meta.url)).filter((f) => f.endsWith('.sql')).length;

async function get(origin: string, path: string) {
  const res = await fetch(origin + path);
  return { status: res.status, headers: res.headers, body: await res.json() as any };
}

test('/healthz: 200 without a key, never cached', async () => {
  const srv = await startServer();
  const r = await get(srv.origin, '/healthz');
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { status: 'ok' });
  assert.equal(r.headers.get('cache-control'), 'no-store');
  assert.ok(r.headers.get('x-request-id'));
});

test('/readyz: ready with this build\'s migrations; 503 naming kiln migrate while one is missing, ready again once applied', async () => {
  const srv = await startServer();
  const ready = await get(srv.origin, '/readyz');
  assert.equal(ready.status, 200, JSON.stringify(ready.body));
  assert.deepEqual(ready.body, { status: 'ready', migrations: { applied: shipped, expected: shipped } });
  assert.equal(ready.headers.get('cache-control'), 'no-store');

  // The newest migration "not yet applied" (a process of a newer build started before kiln migrate).
  const [newest] = await srv.db.sql`delete from graphile_migrate.migrations
    where filename = (select max(filename) from graphile_migrate.migrations) returning *`;
  const behind = await until503(srv.origin);
  assert.equal(behind.body.error.type, 'server_error');
  assert.equal(behind.body.error.message, `The database holds ${shipped - 1} of this build's ${shipped} migrations: run kiln migrate.`);
  assert.equal(behind.headers.get('retry-after'), '1');

  await srv.db.sql`insert into graphile_migrate.migrations ${srv.db.sql(newest!)}`;
  const t = Date.now();
  for (;;) {
    const r = await get(srv.origin, '/readyz');
    if (r.status === 200) break;
    assert.ok(Date.now() - t < 5000, 'ready again within the check interval');
    await new Promise((res) => setTimeout(res, 100));
  }
});

test('/readyz: an unreachable database is a 503 that says only that', async () => {
  // Nothing listens on port 1: every query fails to connect.
  const sql = postgres('postgres://kiln:secret-password@127.0.0.1:1/kiln', { max: 1, connect_timeout: 1, onnotice: () => {} });
  onCleanup(() => sql.end({ timeout: 0 }));
  const srv = await startServer({ db: { url: 'postgres://127.0.0.1:1/kiln', sql, app: sql } as TestDb });
  const r = await get(srv.origin, '/readyz');
  assert.equal(r.status, 503);
  assert.deepEqual(r.body, { error: { type: 'server_error', message: 'The database did not answer within 2 s.' } });
  assert.equal((await get(srv.origin, '/healthz')).status, 200, 'liveness does not ask the database');
});

test('/readyz: probes share one database check per second, however many come at once', async () => {
  const base = await startServer();
  // The server's queries, counted: only /readyz is asked here, so each call is a readiness check.
  let queries = 0;
  const counted = new Proxy(base.db.app, { apply: (target, self, args) => { queries++; return Reflect.apply(target, self, args); } });
  const srv = await startServer({ db: { ...base.db, app: counted } });
  const t = Date.now();
  const burst = await Promise.all(Array.from({ length: 30 }, () => get(srv.origin, '/readyz')));
  for (let i = 0; i < 30; i++) burst.push(await get(srv.origin, '/readyz'));
  assert.ok(burst.every((r) => r.status === 200));
  const seconds = Math.ceil((Date.now() - t) / 1000);
  assert.ok(queries >= 1 && queries <= seconds + 1, `${queries} checks for 60 probes over ${seconds} s`);
});

test('/readyz: 503 once the process is shutting down, while its connections still answer', async () => {
  const base = await startServer();
  const shutdown = new AbortController();
  const app = createApp(createContext(testConfig(), base.db.app, shutdown.signal));
  const server = http.createServer(toNodeHandler(app) as any);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  onCleanup(() => new Promise((r) => { server.closeAllConnections(); server.close(() => r(undefined)); }));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  assert.equal((await get(origin, '/readyz')).status, 200);
  shutdown.abort();
  const r = await get(origin, '/readyz');
  assert.equal(r.status, 503);
  assert.deepEqual(r.body, { error: { type: 'server_error', message: 'Shutting down.' } });
  assert.equal((await get(origin, '/healthz')).status, 200);
});

/** Polls /readyz until it answers 503 (the check is shared for a second). */
async function until503(origin: string) {
  const t = Date.now();
  for (;;) {
    const r = await get(origin, '/readyz');
    if (r.status === 503) return r;
    assert.ok(Date.now() - t < 5000, `still ${r.status} after 5 s`);
    await new Promise((res) => setTimeout(res, 100));
  }
}
