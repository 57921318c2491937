// Issue 31: reads that tolerate lag on a streaming replica (KILN_DATABASE_REPLICA_URL), with the
// lag bounded by KILN_REPLICA_MAX_LAG. A PostgreSQL 15 primary with Kiln migrated (Debian's tools:
// the embedded cluster has no pg_basebackup) and a hot standby made with `pg_basebackup -R`; a
// `kiln api` process reads its lists there. With replay paused, a new generation is missing from
// the list until the lag passes the bound, then the list reads the primary; GET by id always reads
// the primary; with the standby promoted or stopped mid-load the lists still answer 200, nothing
// is lost and nothing charged twice. kiln_analyst works on the standby too.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import postgres from 'postgres';
import { cleanupServers, PG_BIN } from './_pgbouncer.ts';
import { startPrimary, startStandby, type Cluster } from './_replica.ts';
import { spawnKiln, type Spawned } from './_live.ts';
import { api, createAccount, createKey, onCleanup, testConfig } from './_setup.ts';
import { createContext, type Context } from '../src/context.ts';
import { Replica } from '../src/db/replica.ts';
import { createLogger } from '../src/log.ts';
import { listGenerationsOf, parseListQuery } from '../src/generations/list.ts';
import { dailyUsageOf } from '../src/billing/daily.ts';
import { listWorkflows } from '../src/workflows/service.ts';
import type { Caller } from '../src/auth/access.ts';

const skip = PG_BIN ? false : 'Debian\'s PostgreSQL tools (pg_basebackup) are not installed';
// The default bound: room for a loaded machine between the write and the list that must miss it.
const MAX_LAG_MS = 5000;

// Registered first, so it runs last: PgBouncer and the clusters outlive the processes using them.
onCleanup(cleanupServers);

let primary: Cluster;
let standby: Cluster;
let sql: postgres.Sql;
let replicaSql: postgres.Sql;
let kiln: Spawned;
let key: string;
let accountId: string;
/** An in-process context with the same replica settings: what the MCP tools call. */
let mcpCtx: Context;
let replica: Replica;

before(async () => {
  if (skip) return;
  primary = await startPrimary();
  standby = await startStandby(primary);
  sql = postgres(primary.url, { max: 5, onnotice: () => {} });
  replicaSql = postgres(standby.url, { max: 2, onnotice: () => {} });
  onCleanup(async () => { await sql.end({ timeout: 1 }); await replicaSql.end({ timeout: 1 }); });
  kiln = await spawnKiln('api', primary.url, { KILN_DATABASE_REPLICA_URL: standby.url, KILN_REPLICA_MAX_LAG: `${MAX_LAG_MS / 1000}s`, KILN_LIMITER_TIMEOUT_MS: '10000' });
  const a = await createAccount(sql as any);
  accountId = a.id;
  key = (await createKey(sql as any, a.id)).key;
  replica = new Replica(replicaSql as any, sql as any, MAX_LAG_MS, createLogger('silent'));
  onCleanup(async () => replica.close());
  await replica.start();
  mcpCtx = createContext(testConfig({ databaseUrl: primary.url }), sql as any, undefined, { replica });
});

/** What the MCP tool list_generations answers (the caller's own origin: api here, to see the REST-made jobs). */
async function mcpIds() {
  const caller: Caller = { accountId, keyId: null, workspaceId: null, origin: 'api' };
  const page = await listGenerationsOf(mcpCtx, caller, await parseListQuery(mcpCtx, { limit: '100' }));
  return page.data.map((g) => g.id);
}

const ids = async () => {
  const res = await api(kiln.base, key, '/generations?limit=100');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data.map((g: any) => g.id) as string[];
};

async function eventually(what: string, fn: () => Promise<boolean>, ms = 15_000) {
  const end = Date.now() + ms;
  while (!(await fn())) {
    assert.ok(Date.now() < end, `${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a generation made while replay is paused: absent from the list until the lag passes the bound, then read from the primary; GET by id finds it at once', { skip }, async (t) => {
  const first = await api(kiln.base, key, '/generations', { body: { type: 'code', model: 'local/coder', prompt: 'before' } });
  assert.equal(first.status, 202);
  await eventually('the replica to have the first generation', async () => (await ids()).includes(first.body.id));

  await replicaSql`select pg_wal_replay_pause()`;
  // Whatever fails below, replay goes on for the tests after this one.
  t.after(() => replicaSql`select pg_wal_replay_resume()`.then(() => {}, () => {}));
  const made = await api(kiln.base, key, '/generations', { body: { type: 'code', model: 'local/coder', prompt: 'after the pause' } });
  const madeAt = Date.now();
  assert.equal(made.status, 202);
  // Right after a write: GET by id reads the primary.
  const byId = await api(kiln.base, key, `/generations/${made.body.id}`);
  assert.equal(byId.status, 200);
  assert.equal(byId.body.id, made.body.id);
  // The list reads the paused replica while it is within the bound.
  assert.ok(!(await ids()).includes(made.body.id), 'the list reads the replica, which has not replayed it');
  // Daily usage and workflows answer there too.
  for (const path of ['/usage/daily', '/workflows']) assert.equal((await api(kiln.base, key, path)).status, 200, path);
  // The MCP twins read the replica the same way.
  const reads = replica.stats.replicaReads;
  assert.ok(!(await mcpIds()).includes(made.body.id), 'MCP list_generations reads the replica');
  const mcpCaller: Caller = { accountId, keyId: null, workspaceId: null, origin: 'mcp' };
  assert.ok((await dailyUsageOf(mcpCtx, mcpCaller, { from: null, to: null })).days);
  assert.ok(Array.isArray((await listWorkflows(mcpCtx, mcpCaller)).data));
  assert.equal(replica.stats.replicaReads, reads + 3);
  await eventually('the list to read the primary once the lag passes KILN_REPLICA_MAX_LAG', async () => (await ids()).includes(made.body.id), MAX_LAG_MS + 5000);
  const after = Date.now() - madeAt;
  t.diagnostic(`present ${after} ms after it was made (bound ${MAX_LAG_MS} ms, sampled once a second)`);
  // Lag is counted from the last sample the replica had replayed, up to a second before the write.
  assert.ok(after >= MAX_LAG_MS - 1200, `not before the lag passed the bound: ${after} ms`);
  // Its own sampler (another process's, here the test's) crosses the bound within a second of the API's.
  await eventually('MCP list_generations to read the primary past the bound', async () => (await mcpIds()).includes(made.body.id), 2500);
  await replicaSql`select pg_wal_replay_resume()`;
  // Caught up again: the replica serves the list (and has the generation).
  await eventually('the replica to catch up', async () => {
    const [r] = await replicaSql`select count(*)::int as n from kiln_private.generations where id = ${made.body.id}`;
    return r!.n === 1;
  });
});

test('kiln_analyst on the standby: the views, and not the tables', { skip }, async () => {
  const name = `alice_${process.pid}`;
  // One statement, so the standby never has the login without the grant (it replays them apart).
  await sql.unsafe(`create role ${name} login in role kiln_analyst`);
  const alice = postgres(standby.url.replace('postgres@', `${name}@`), { max: 1, onnotice: () => {} });
  try {
    await eventually('the role to reach the standby', async () => {
      try { await alice`select 1`; return true; } catch { return false; }
    });
    const [row] = await alice`select count(*)::int as n from kiln.daily_generations`;
    assert.ok(row!.n >= 0);
    await assert.rejects(alice`select key_hash from kiln_private.api_keys`, (e: any) => e.code === '42501');
    await assert.rejects(alice`select kiln.create_account('x@example.test', 'pro', null, true)`, (e: any) => e.code === '42501');
  } finally {
    await alice.end({ timeout: 1 });
  }
});

/** POSTs and list GETs at a steady pace while `during` runs; every answer must be 202 / 200. */
async function underLoad(during: () => Promise<void>) {
  const posted: string[] = [];
  const statuses: number[] = [];
  let stop = false;
  const loop = async (i: number) => {
    while (!stop) {
      const res = i % 2
        ? await api(kiln.base, key, '/generations?limit=5')
        : await api(kiln.base, key, '/generations', { body: { type: 'code', model: 'local/coder', prompt: 'load' }, headers: { 'idempotency-key': `load-${Date.now()}-${i}-${posted.length}` } });
      statuses.push(res.status);
      if (res.status === 202) posted.push(res.body.id);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const loops = Array.from({ length: 4 }, (_, i) => loop(i));
  await new Promise((r) => setTimeout(r, 300));
  await during();
  await new Promise((r) => setTimeout(r, 1500));
  stop = true;
  await Promise.all(loops);
  return { posted, statuses };
}

async function assertExact(posted: string[]) {
  const rows = await sql`select g.id, count(c.*)::int as n from kiln_private.generations g
    left join kiln_private.charges c on c.generation_id = g.id where g.id = any (${posted}::uuid[]) group by g.id`;
  assert.equal(rows.length, posted.length, 'every accepted generation is there');
  assert.ok(rows.every((r) => r.n === 1), 'each reserved once');
}

test('the standby promoted mid-load, then stopped mid-load: every list answers 200, nothing lost, nothing charged twice', { skip }, async (t) => {
  const promoted = await underLoad(() => standby.promote());
  const stopped = await underLoad(() => standby.stop('immediate'));
  for (const [what, r] of [['promoted', promoted], ['stopped', stopped]] as const) {
    const other = r.statuses.filter((s) => s !== 200 && s !== 202);
    t.diagnostic(`${what}: ${r.statuses.length} requests, ${r.posted.length} generations, others: ${JSON.stringify(other)}`);
    // The primary is healthy throughout: not even a 503.
    assert.deepEqual(other, [], what);
    await assertExact(r.posted);
  }
  // Everything made is listed (from the primary now).
  const listed = await ids();
  for (const id of stopped.posted.slice(-3)) assert.ok(listed.includes(id));
  const [{ n }] = await sql`select count(*)::int as n from kiln_private.generations where account_id = ${accountId}`;
  assert.ok(n >= promoted.posted.length + stopped.posted.length);
});
