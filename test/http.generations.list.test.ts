// GET /generations over HTTP: keyset pages without gaps or repeats while jobs keep arriving, every
// filter (checked against the table), signed cursors, 400s for every bad parameter, and isolation
// between accounts, between the personal and workspace scopes, and from other origins.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { createGeneration } from '../src/generations/create.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
let alice: { id: string };
let aliceKey: string;
let aliceReadKey: string;
let aliceWsKey: string;
let ws: string;
let bobKey: string;
let mcpId: string;

const code = { type: 'code', prompt: 'a card', targetLanguage: 'tsx' };
const svg = { type: 'code', prompt: 'a logo', model: 'local/vector', targetLanguage: 'svg' };
const image = { type: 'image', prompt: 'a fox' };

async function post(key: string, body: unknown): Promise<string> {
  const res = await api(srv.base, key, '/generations', { body });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.id;
}

/** Every page of a list, following nextCursor; returns the ids in order. */
async function walk(key: string, query: string, between?: () => Promise<unknown>): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 200, 'too many pages');
    const sep = query ? '&' : '';
    const res = await api(srv.base, key, `/generations?${query}${cursor ? `${sep}cursor=${cursor}` : ''}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    ids.push(...res.body.data.map((g: any) => g.id));
    cursor = res.body.nextCursor;
    if (!cursor) return ids;
    await between?.();
  }
}

/** What a list must return, straight from the table: the account's API jobs in one scope, newest first. */
async function expected(accountId: string, workspaceId: string | null, f: { status?: string[]; type?: string; model?: string; since?: string } = {}) {
  const rows = await srv.db.sql`
    select id from kiln_private.generations
    where account_id = ${accountId} and workspace_id is not distinct from ${workspaceId}::uuid and origin = 'api'
      and (${f.status ?? null}::text[] is null or status = any (${f.status ?? null}::text[]))
      and (${f.type ?? null}::text is null or type = ${f.type ?? null}::text)
      and (${f.model ?? null}::text is null or model_id = ${f.model ?? null}::text)
      and (${f.since ?? null}::timestamptz is null or created_at >= ${f.since ?? null}::timestamptz)
    order by created_at desc, id desc`;
  return rows.map((r) => r.id as string);
}

before(async () => {
  srv = await startServer();
  // No worker: outcomes are settled through the SQL functions the worker uses.
  await srv.db.sql`delete from graphile_worker._private_jobs`;
  alice = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: null });
  aliceKey = (await createKey(srv.db.sql, alice.id)).key;
  aliceReadKey = (await createKey(srv.db.sql, alice.id, { scopes: ['read'] })).key;
  const [w] = await srv.db.sql`select * from kiln.create_workspace('Studio', ${alice.id})`;
  ws = w.id;
  await srv.db.sql`select kiln.set_workspace_plan(${ws}, 'active', null, true)`;
  aliceWsKey = (await createKey(srv.db.sql, alice.id, { workspaceId: ws })).key;
  const bob = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: null });
  bobKey = (await createKey(srv.db.sql, bob.id)).key;

  // Alice, personal: 12 code, 6 svg, 6 images — some in concurrent bursts (same created_at, so
  // the id breaks ties), some one by one.
  for (let i = 0; i < 6; i++) await post(aliceKey, code);
  await Promise.all([...Array(6)].map(() => post(aliceKey, code)));
  await Promise.all([...Array(6)].map(() => post(aliceKey, svg)));
  for (let i = 0; i < 6; i++) await post(aliceKey, image);
  // Outcomes: every third completed, every fourth failed, the rest pending or processing.
  const mine = await srv.db.sql`select id, type from kiln_private.generations where account_id = ${alice.id} order by created_at, id`;
  for (const [i, g] of mine.entries()) {
    if (i % 3 === 0) {
      const result = g.type === 'image'
        ? { type: 'image', path: `${alice.id}/generations/${g.id}.png`, mediaType: 'image/png', aspectRatio: '1:1' }
        : { type: 'code', code: `x${i}`, structuredOutput: null };
      await srv.db.sql`select kiln.complete_generation(${g.id}, ${srv.db.sql.json(result)}, 5, null)`;
    } else if (i % 4 === 0) {
      await srv.db.sql`select kiln.fail_generation(${g.id}, 'upstream said no')`;
    } else if (i % 5 === 0) {
      await srv.db.sql`update kiln_private.generations set status = 'processing', started_at = now() where id = ${g.id}`;
    }
  }
  // Alice on the workspace, Bob, and an MCP job of Alice's: none of them in Alice's personal list.
  for (let i = 0; i < 3; i++) await post(aliceWsKey, code);
  for (let i = 0; i < 3; i++) await post(bobKey, code);
  mcpId = (await createGeneration(srv.ctx, { accountId: alice.id, keyId: null, workspaceId: null, origin: 'mcp' }, code)).id;
});

test('the first page: the newest 20, each exactly the GET /generations/{id} body', async () => {
  const res = await api(srv.base, aliceReadKey, '/generations');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.deepEqual(Object.keys(res.body).sort(), ['data', 'nextCursor']);
  const all = await expected(alice.id, null);
  assert.equal(all.length, 24);
  assert.deepEqual(res.body.data.map((g: any) => g.id), all.slice(0, 20));
  assert.equal(typeof res.body.nextCursor, 'string');
  let images = 0;
  for (const item of res.body.data) {
    const one = await api(srv.base, aliceReadKey, `/generations/${item.id}`);
    assert.equal(one.status, 200);
    // A signed URL carries its own expiry: compare everything else, and check it is a working signature.
    const strip = (b: any) => (b.result?.url ? { ...b, result: { ...b.result, url: b.result.url.split('?')[0] } } : b);
    assert.deepEqual(strip(item), strip(one.body));
    // What was asked comes with each item: a client can tell jobs made within a minute apart.
    assert.ok(['a card', 'a logo', 'a fox'].includes(item.prompt), item.prompt);
    if (item.result?.type === 'image') {
      images++;
      assert.match(item.result.url, /\/files\/.+\?expires=\d+&sig=/);
    }
  }
  assert.ok(images > 0, 'the page has a completed image');
});

test('pages follow the cursor with no gaps or repeats, at every page size', async () => {
  const all = await expected(alice.id, null);
  for (const limit of [1, 5, 7, 23, 24, 100]) {
    assert.deepEqual(await walk(aliceKey, `limit=${limit}`), all, `limit=${limit}`);
  }
});

test('jobs created while a client pages are not skipped or repeated', async () => {
  const before = await expected(alice.id, null);
  // New jobs (newer than any cursor) arrive between and during page reads, in bursts.
  const seen = await walk(aliceKey, 'limit=4', () => Promise.all([post(aliceKey, code), post(aliceKey, image)]));
  assert.deepEqual(seen, before, 'the walk returns exactly the jobs that existed when it started, in order');
  // Concurrently with a whole walk, from the newest again.
  const writer = Promise.all([...Array(8)].map(() => post(aliceKey, svg)));
  const [during] = await Promise.all([walk(aliceKey, 'limit=3'), writer]);
  assert.equal(new Set(during).size, during.length, 'no repeats');
  const now = await expected(alice.id, null);
  const tail = now.slice(now.indexOf(during[0]!));
  assert.deepEqual(during, tail, 'every job older than the first item, none missing');
});

test('every filter, alone and combined, returns what the table holds', async () => {
  const cases: Array<[string, Parameters<typeof expected>[2]]> = [
    ['status=completed', { status: ['completed'] }],
    ['status=failed', { status: ['failed'] }],
    ['status=pending,processing', { status: ['pending', 'processing'] }],
    ['type=image', { type: 'image' }],
    ['type=code', { type: 'code' }],
    ['model=local/vector', { model: 'local/vector' }],
    ['model=local/coder&status=completed', { model: 'local/coder', status: ['completed'] }],
    ['model=local/sketch&type=code', { model: 'local/sketch', type: 'code' }],
    ['model=no-such-model', { model: 'no-such-model' }],
    ['type=code&status=failed,completed', { type: 'code', status: ['failed', 'completed'] }],
  ];
  const [{ mid }] = await srv.db.sql`
    select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as mid
    from kiln_private.generations where account_id = ${alice.id} and origin = 'api' and workspace_id is null
    order by created_at desc, id desc offset 10 limit 1`;
  // Milliseconds round down: since = that instant includes the job (created_at ≥ since).
  cases.push([`since=${mid}`, { since: mid }], [`since=${mid}&type=image&status=pending`, { since: mid, type: 'image', status: ['pending'] }]);
  cases.push(['since=2000-01-01', { since: '2000-01-01T00:00:00Z' }], ['since=2999-01-01T00:00:00%2B02:00', { since: '2999-01-01T00:00:00+02:00' }]);
  for (const [query, f] of cases) {
    const want = await expected(alice.id, null, f);
    assert.deepEqual(await walk(aliceKey, `${query}&limit=4`), want, query);
    const empty = query === 'model=no-such-model' || query.startsWith('since=2999') || query.includes('sketch&type=code');
    assert.equal(want.length === 0, empty, `${query}: ${want.length} matches`);
  }
});

test('a bad parameter or cursor is a 400 invalid_request naming it', async () => {
  const good = await api(srv.base, aliceKey, '/generations?limit=2');
  const cursor: string = good.body.nextCursor;
  const flipped = cursor.slice(0, 10) + (cursor[10] === 'A' ? 'B' : 'A') + cursor.slice(11);
  const bad = [
    ['limit=0', 'limit'], ['limit=101', 'limit'], ['limit=abc', 'limit'], ['limit=1.5', 'limit'], ['limit=-1', 'limit'], ['limit=1&limit=2', 'limit'],
    ['cursor=', 'cursor'], ['cursor=abc', 'cursor'], [`cursor=${flipped}`, 'cursor'], [`cursor=${cursor}x`, 'cursor'],
    [`cursor=${Buffer.alloc(32).toString('base64url')}`, 'cursor'],
    ['status=done', 'status'], ['status=', 'status'], ['status=completed,', 'status'], ['type=video', 'type'],
    ['model=', 'model'], ['model=a%20b', 'model'], ['model=%00', 'model'], [`model=${'x'.repeat(201)}`, 'model'],
    ['since=yesterday', 'since'], ['since=2026-13-01', 'since'], ['since=2026-02-30', 'since'], ['since=2026-11-01T25:00:00Z', 'since'],
    ['since=1969-12-31', 'since'], ['since=2026-11-01T00:00:00', 'since'], ['since=%F0%9F%92%A5', 'since'],
  ];
  for (const [q, name] of bad) {
    const res = await api(srv.base, aliceKey, `/generations?${q}`);
    assert.equal(res.status, 400, `${q}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error.type, 'invalid_request', q);
    assert.ok(res.body.error.message.startsWith(`${name}:`), `${q}: ${res.body.error.message}`);
  }
  // The key still comes first: a bad query with a bad key is a 401.
  assert.equal((await api(srv.base, 'kiln_live_nope', '/generations?limit=0')).status, 401);
  assert.equal((await api(srv.base, null, '/generations')).status, 401);
});

test('isolation: other accounts, the other billing scope and other origins are never listed', async () => {
  const aliceAll = new Set(await walk(aliceKey, 'limit=100'));
  assert.ok(!aliceAll.has(mcpId), 'an MCP job is not listed (GET /generations/{id} does not read it either)');
  assert.equal((await api(srv.base, aliceKey, `/generations/${mcpId}`)).status, 404);

  const wsIds = await walk(aliceWsKey, '');
  assert.deepEqual(wsIds, await expected(alice.id, ws));
  assert.equal(wsIds.length, 3);
  assert.ok(wsIds.every((id) => !aliceAll.has(id)));

  const bobIds = await walk(bobKey, '');
  assert.equal(bobIds.length, 3);
  assert.ok(bobIds.every((id) => !aliceAll.has(id) && !wsIds.includes(id)));

  // Another account's cursor is only a position: Bob gets his own jobs older than it, nothing of Alice's.
  const page = await api(srv.base, aliceKey, '/generations?limit=1');
  const res = await api(srv.base, bobKey, `/generations?cursor=${page.body.nextCursor}`);
  assert.equal(res.status, 200);
  // Alice's newest job is newer than all of Bob's: the position lets Bob see exactly his own.
  assert.deepEqual(res.body.data.map((g: any) => g.id), bobIds);
});

test('no btree index on generations leads with created_at: the list\'s probes read generations_list_idx, never history newest first', async () => {
  // With such an index the planner may scan every generation backwards and filter, costing it from
  // the average share of matches: a rare (type, status) pair then read the whole table (12 ms at
  // 10,000 rows against 0.3 ms through generations_list_idx). Time ranges use a BRIN index.
  const rows = await srv.db.sql`
    select c.relname as name, am.amname as method, pg_get_indexdef(i.indexrelid, 1, true) as first_key
    from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am am on am.oid = c.relam
    where i.indrelid = 'kiln_private.generations'::regclass`;
  assert.deepEqual(rows.filter((r) => r.method === 'btree' && r.first_key === 'created_at').map((r) => r.name), []);
  assert.ok(rows.some((r) => r.method === 'brin' && r.first_key === 'created_at'));
  assert.ok(rows.some((r) => r.name === 'generations_list_idx'));
});
