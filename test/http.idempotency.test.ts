// Idempotency-Key on POST /generations, POST /workflows/{id}/runs and the MCP tools that start
// work: concurrent duplicates (one batch, several batches, two API processes) make one job and
// one reservation, replays answer the stored id from any key of the account, another body is a
// 422, refused requests keep nothing, and records expire.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { before, test } from 'node:test';
import { hashKey } from '../src/auth/secrets.ts';
import { ARRAY_OID, pgArray } from '../src/db/pool.ts';
import { generationStats } from '../src/generations/service.ts';
import { fingerprint } from '../src/idempotency.ts';
import { api, createAccount, createKey, onCleanup, startServer } from './_setup.ts';
import { startTestWorker } from './_generations.ts';
import { connectV2, link, ok, startMcpServer, toolError, type McpServer } from './_mcp.ts';
import { saveWorkflow } from './_workflows.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const GRAPH = {
  nodes: [
    { id: 'brief', kind: 'text', text: 'Autumn sale' },
    { id: 'p1', kind: 'prompt', output: 'code', targetLanguage: 'tsx', prompt: 'Landing section', model: 'local/coder' },
    { id: 'o1', kind: 'output', label: 'Landing section' },
  ],
  edges: [{ from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }],
};

let srv: McpServer;

before(async () => {
  // No worker: jobs stay queued, so every count below is what the POSTs made.
  srv = await startMcpServer();
});

async function account(opts: { budgetMicros?: number | null } = {}) {
  const a = await createAccount(srv.db.sql, { tier: 'pro', ...opts });
  return { id: a.id, key: (await createKey(srv.db.sql, a.id)).key };
}

function post(key: string, body: unknown, idem?: string, base = srv.base) {
  return api(base, key, '/generations', { body, headers: idem === undefined ? {} : { 'idempotency-key': idem } });
}

/** What an account has: generations, ledger rows, queued jobs. */
async function made(accountId: string) {
  const [r] = await srv.db.sql`
    select (select count(*)::int from kiln_private.generations where account_id = ${accountId}) as generations,
           (select count(*)::int from kiln_private.charges where account_id = ${accountId}) as charges,
           (select count(*)::int from graphile_worker.jobs j join kiln_private.generations g on j.key = g.id::text
             where g.account_id = ${accountId}) as jobs,
           (select count(*)::int from kiln_private.workflow_runs where account_id = ${accountId}) as runs`;
  return r as { generations: number; charges: number; jobs: number; runs: number };
}

test('50 concurrent identical POSTs with one key: one generation, one reservation, one job, 50 × the same id', async (t) => {
  const a = await account();
  const body = { type: 'code', prompt: 'A pricing card', targetLanguage: 'tsx' };
  const batches = generationStats.createBatches;
  const res = await Promise.all(Array.from({ length: 50 }, () => post(a.key, body, 'order-42')));
  t.diagnostic(`the 50 requests went out in ${generationStats.createBatches - batches} batched calls`);
  assert.deepEqual(res.map((r) => r.status), Array(50).fill(202), JSON.stringify(res.find((r) => r.status !== 202)?.body));
  const ids = new Set(res.map((r) => r.body.id));
  assert.equal(ids.size, 1, `ids: ${[...ids].join(', ')}`);
  const [id] = ids;
  for (const r of res) assert.deepEqual(r.body, { id, status: 'pending' });
  // Exactly one answer created it; every other one is the stored answer.
  assert.equal(res.filter((r) => r.headers.get('idempotent-replayed') === 'true').length, 49);
  assert.equal(res.filter((r) => r.headers.get('idempotent-replayed') === null).length, 1);
  assert.ok(res.every((r) => r.headers.get('location')?.endsWith(`/generations/${id}`)));
  assert.deepEqual(await made(a.id), { generations: 1, charges: 1, jobs: 1, runs: 0 });

  // Later, in any key order and spacing: the same request, the same answer.
  const again = await post(a.key, '{ "targetLanguage": "tsx",  "prompt": "A pricing card", "type": "code" }', 'order-42');
  assert.equal(again.status, 202);
  assert.deepEqual(again.body, { id, status: 'pending' });
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  // Without the key the same body is a new job; with another key too.
  const unkeyed = await post(a.key, body);
  const otherKey = await post(a.key, body, 'order-43');
  assert.notEqual(unkeyed.body.id, id);
  assert.notEqual(otherKey.body.id, id);
  assert.equal(otherKey.headers.get('idempotent-replayed'), null);
  assert.deepEqual(await made(a.id), { generations: 3, charges: 3, jobs: 3, runs: 0 });
});

test('a different body with a used key is a 422 idempotency_conflict and creates nothing', async () => {
  const a = await account();
  const first = await post(a.key, { type: 'image', prompt: 'a fox' }, 'k-1');
  assert.equal(first.status, 202);
  for (const other of [{ type: 'image', prompt: 'a wolf' }, { type: 'image', prompt: 'a fox', aspectRatio: '1:1' }, { type: 'code', prompt: 'a fox' }]) {
    const r = await post(a.key, other, 'k-1');
    assert.equal(r.status, 422, JSON.stringify(r.body));
    assert.equal(r.body.error.type, 'idempotency_conflict');
    assert.match(r.body.error.message, /idempotency key was already used with a different request/);
    assert.equal(r.headers.get('idempotent-replayed'), null);
  }
  // Concurrent conflicting requests in one batch: the first body wins, the others conflict.
  const race = await Promise.all([post(a.key, { type: 'image', prompt: 'x' }, 'k-2'), post(a.key, { type: 'image', prompt: 'y' }, 'k-2'), post(a.key, { type: 'image', prompt: 'x' }, 'k-2')]);
  assert.deepEqual(race.map((r) => r.status).sort(), [202, 202, 422]);
  assert.equal(race[0]!.body.id, race[2]!.body.id);
  assert.deepEqual(await made(a.id), { generations: 2, charges: 2, jobs: 2, runs: 0 });
});

test('a refused request keeps nothing: after 429 insufficient_quota, the same key succeeds once the budget is raised', async () => {
  const a = await account({ budgetMicros: 0 });
  const body = { type: 'image', prompt: 'retry me' };
  const refused = await post(a.key, body, 'budget-1');
  assert.equal(refused.status, 429);
  assert.equal(refused.body.error.type, 'insufficient_quota');
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.idempotency_keys where account_id = ${a.id}`;
  assert.equal(n, 0);
  await srv.db.sql`update kiln_private.accounts set budget_micros = 10000000 where id = ${a.id}`;
  const ok1 = await post(a.key, body, 'budget-1');
  assert.equal(ok1.status, 202, JSON.stringify(ok1.body));
  assert.equal(ok1.headers.get('idempotent-replayed'), null);
  const ok2 = await post(a.key, body, 'budget-1');
  assert.equal(ok2.headers.get('idempotent-replayed'), 'true');
  assert.equal(ok2.body.id, ok1.body.id);

  // A 400 (bad model) and a 403 (read-only key) keep nothing either.
  const bad = await post(a.key, { type: 'image', prompt: 'm', model: 'nope/none' }, 'bad-1');
  assert.equal(bad.status, 400);
  const ro = await createKey(srv.db.sql, a.id, { scopes: ['read'] });
  const forbidden = await post(ro.key, { type: 'image', prompt: 'ro' }, 'ro-1');
  assert.equal(forbidden.status, 403);
  assert.equal((await post(a.key, { type: 'image', prompt: 'now valid' }, 'bad-1')).status, 202);
  assert.equal((await post(a.key, { type: 'image', prompt: 'ro' }, 'ro-1')).headers.get('idempotent-replayed'), null);
  assert.deepEqual(await made(a.id), { generations: 3, charges: 3, jobs: 3, runs: 0 });
});

test('keys are per account: another API key of the account replays, another account is independent', async () => {
  const a = await account();
  const second = await createKey(srv.db.sql, a.id);
  const b = await account();
  const body = { type: 'code', prompt: 'shared key' };
  const first = await post(a.key, body, 'same-key');
  const replay = await post(second.key, body, 'same-key');
  assert.equal(replay.status, 202);
  assert.equal(replay.body.id, first.body.id);
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  const other = await post(b.key, body, 'same-key');
  assert.equal(other.status, 202);
  assert.notEqual(other.body.id, first.body.id);
  assert.equal(other.headers.get('idempotent-replayed'), null);
  // Another account's generation stays invisible to this one's replay.
  assert.equal((await api(srv.base, b.key, `/generations/${first.body.id}`)).status, 404);
  assert.deepEqual(await made(a.id), { generations: 1, charges: 1, jobs: 1, runs: 0 });
  assert.deepEqual(await made(b.id), { generations: 1, charges: 1, jobs: 1, runs: 0 });
});

test('a malformed Idempotency-Key is a 400 naming the header, after the API key checks out', async () => {
  const a = await account();
  for (const bad of ['', 'x'.repeat(256), 'tab\there', 'caf\u00e9']) {
    const r = await post(a.key, { type: 'image', prompt: 'p' }, bad);
    assert.equal(r.status, 400, `${JSON.stringify(bad)} → ${r.status}`);
    assert.equal(r.body.error.type, 'invalid_request');
    assert.match(r.body.error.message, /^Idempotency-Key: must be 1 to 255 printable ASCII characters/);
  }
  assert.equal((await post('kiln_live_nope', { type: 'image', prompt: 'p' }, '')).status, 401);
  assert.equal((await post(a.key, { type: 'image', prompt: 'p' }, 'x'.repeat(255))).status, 202);
  assert.equal((await post(a.key, { type: 'image', prompt: 'p' }, ' !~ printable ')).status, 202);
  const run = await api(srv.base, a.key, `/workflows/${crypto.randomUUID()}/runs`, { method: 'POST', headers: { 'idempotency-key': 'x'.repeat(256) } });
  assert.equal(run.status, 400);
  assert.match(run.body.error.message, /^Idempotency-Key:/);
  assert.equal((await made(a.id)).generations, 2);
});

test('a large body (read after the key, created on the plain path) replays too', async () => {
  const a = await account();
  const body = { type: 'code', prompt: 'big', textInputs: [{ content: 'x'.repeat(45_000) }, { content: 'y'.repeat(45_000) }] };
  const res = await Promise.all(Array.from({ length: 5 }, () => post(a.key, body, 'big-1')));
  assert.deepEqual(res.map((r) => r.status), Array(5).fill(202));
  assert.equal(new Set(res.map((r) => r.body.id)).size, 1);
  assert.equal(res.filter((r) => r.headers.get('idempotent-replayed') === 'true').length, 4);
  const conflict = await post(a.key, { ...body, prompt: 'bigger' }, 'big-1');
  assert.equal(conflict.status, 422);
  assert.deepEqual(await made(a.id), { generations: 1, charges: 1, jobs: 1, runs: 0 });
});

test('POST /workflows/{id}/runs: concurrent retries with one key start one run; the key is per workflow', async () => {
  const a = await account();
  const second = await createKey(srv.db.sql, a.id);
  const wf1 = await saveWorkflow(srv, a.id, GRAPH);
  const wf2 = await saveWorkflow(srv, a.id, GRAPH);
  const start = (key: string, wf: string, idem: string) => api(srv.base, key, `/workflows/${wf}/runs`, { method: 'POST', headers: { 'idempotency-key': idem } });
  const res = await Promise.all(Array.from({ length: 10 }, (_, i) => start(i % 2 ? second.key : a.key, wf1, 'run-1')));
  assert.deepEqual(res.map((r) => r.status), Array(10).fill(202), JSON.stringify(res.map((r) => r.body)));
  const ids = new Set(res.map((r) => r.body.id));
  assert.equal(ids.size, 1);
  assert.equal(res.filter((r) => r.headers.get('idempotent-replayed') === 'true').length, 9);
  assert.ok(res.every((r) => r.headers.get('location')?.endsWith(`/workflows/${wf1}/runs/${res[0]!.body.id}`)));
  assert.deepEqual(await made(a.id), { generations: 1, charges: 0, jobs: 1, runs: 1 });
  // Same key, another workflow: another operation.
  const other = await start(a.key, wf2, 'run-1');
  assert.equal(other.status, 202);
  assert.notEqual(other.body.id, res[0]!.body.id);
  assert.equal(other.headers.get('idempotent-replayed'), null);
  // A refused run (unknown workflow) keeps nothing.
  assert.equal((await start(a.key, crypto.randomUUID(), 'run-404')).status, 404);
  assert.equal((await made(a.id)).runs, 2);
});

test('MCP: generate_image, generate_code and run_workflow take idempotencyKey; run keys are shared with REST, generation keys kept per surface', async () => {
  const a = await account();
  await link(srv.db.sql, srv.iss.issuer, `idem-${a.id}`, a.id);
  const client = await connectV2(srv.mcpUrl, await srv.iss.sign({ sub: `idem-${a.id}` }));
  onCleanup(() => client.close());
  const { tools } = await client.listTools();
  for (const name of ['generate_image', 'generate_code', 'run_workflow']) {
    const arg = tools.find((t) => t.name === name).inputSchema.properties.idempotencyKey;
    assert.ok(arg, `${name} has idempotencyKey`);
    assert.match(arg.description, /retry, reuse the SAME key/);
    assert.equal(arg.type, 'string');
  }

  const img = await Promise.all(Array.from({ length: 5 }, () => ok(client, 'generate_image', { prompt: 'an agent fox', idempotencyKey: 'agent-1' })));
  assert.equal(new Set(img.map((g) => g.id)).size, 1);
  const again = await client.callTool({ name: 'generate_image', arguments: { prompt: 'an agent fox', idempotencyKey: 'agent-1' } });
  assert.match(again.content[0].text, /already started with this idempotencyKey/);
  // The same key over REST is another surface's key: REST could not read the MCP generation, so
  // it starts its own (readable) one, and a REST retry replays that.
  const rest = await post(a.key, { prompt: 'an agent fox', type: 'image' }, 'agent-1');
  assert.equal(rest.status, 202);
  assert.equal(rest.headers.get('idempotent-replayed'), null);
  assert.notEqual(rest.body.id, img[0].id);
  assert.equal((await api(srv.base, a.key, `/generations/${rest.body.id}`)).status, 200);
  const restAgain = await post(a.key, { prompt: 'an agent fox', type: 'image' }, 'agent-1');
  assert.equal(restAgain.headers.get('idempotent-replayed'), 'true');
  assert.equal(restAgain.body.id, rest.body.id);
  const conflict = await toolError(client, 'generate_code', { prompt: 'an agent fox', idempotencyKey: 'agent-1' });
  assert.equal(conflict.type, 'idempotency_conflict');
  const bad = await toolError(client, 'generate_code', { prompt: 'x', idempotencyKey: '' });
  assert.equal(bad.type, 'invalid_request');

  const code1 = await ok(client, 'generate_code', { prompt: 'a card', targetLanguage: 'tsx', idempotencyKey: 'agent-2' });
  const code2 = await ok(client, 'generate_code', { targetLanguage: 'tsx', prompt: 'a card', idempotencyKey: 'agent-2' });
  assert.equal(code1.id, code2.id);

  const wf = await saveWorkflow(srv, a.id, GRAPH);
  const runs = await Promise.all(Array.from({ length: 4 }, () => ok(client, 'run_workflow', { workflowId: wf, idempotencyKey: 'agent-run' })));
  assert.equal(new Set(runs.map((r) => r.id)).size, 1);
  const restRun = await api(srv.base, a.key, `/workflows/${wf}/runs`, { method: 'POST', headers: { 'idempotency-key': 'agent-run' } });
  assert.equal(restRun.body.id, runs[0].id);
  assert.deepEqual(await made(a.id), { generations: 4, charges: 3, jobs: 4, runs: 1 });
});

test('records expire: past KILN_IDEMPOTENCY_TTL_SECONDS a key is new again, and the purge deletes expired records', async () => {
  const short = await startServer({ db: srv.db, config: { idempotencyTtlSeconds: 1 } });
  const a = await account();
  const first = await post(a.key, { type: 'image', prompt: 'one' }, 'ttl-1', short.base);
  await post(a.key, { type: 'image', prompt: 'one' }, 'ttl-2', short.base);
  assert.equal(first.status, 202);
  await new Promise((r) => setTimeout(r, 1100));
  // Expired: another body is not a conflict but a new request, which takes the record over.
  const second = await post(a.key, { type: 'image', prompt: 'two' }, 'ttl-1', short.base);
  assert.equal(second.status, 202, JSON.stringify(second.body));
  assert.notEqual(second.body.id, first.body.id);
  assert.equal(second.headers.get('idempotent-replayed'), null);
  const [{ n }] = await srv.db.sql`select kiln.purge_idempotency_keys(1000) as n`;
  assert.ok(n >= 1, `purged ${n}`);
  const left = await srv.db.sql`select key from kiln_private.idempotency_keys where account_id = ${a.id}`;
  assert.deepEqual(left.map((r) => r.key), ['ttl-1']);
});

/** kiln.start_generations for keyed requests of `keys` (image, local/sketch), in `sql` (the pool or a transaction). */
async function startKeyed(sql: any, reqs: Array<{ key: string; idem: string; prompt: string }>) {
  const [m] = await srv.db.sql`select (extract(epoch from updated_at) * 1000000)::bigint::text as v from kiln_private.models where id = 'local/sketch'`;
  const bodies = reqs.map((r) => ({ type: 'image', prompt: r.prompt }));
  return sql`select * from kiln.start_generations(
    ${pgArray(sql, reqs.map((r) => hashKey(r.key)), ARRAY_OID.bytea)}, 'api',
    ${pgArray(sql, reqs.map(() => 'image'), ARRAY_OID.text)}, ${pgArray(sql, reqs.map(() => 'local/sketch'), ARRAY_OID.text)},
    ${pgArray(sql, reqs.map(() => m!.v), ARRAY_OID.int8)}, ${pgArray(sql, bodies.map((b) => JSON.stringify(b)), ARRAY_OID.text)}::jsonb[],
    ${pgArray(sql, reqs.map(() => '1000'), ARRAY_OID.int8)}, 3,
    ${pgArray(sql, reqs.map((r) => r.idem), ARRAY_OID.text)}, ${pgArray(sql, bodies.map((b) => fingerprint(b)), ARRAY_OID.bytea)}, 60)
    order by ord`;
}

test('one batch: duplicates follow the first of the set, another body in the set conflicts', async () => {
  const a = await account();
  const k2 = await createKey(srv.db.sql, a.id);
  const rows = await startKeyed(srv.db.sql, [
    { key: a.key, idem: 'set', prompt: 'p' }, { key: k2.key, idem: 'set', prompt: 'p' }, { key: a.key, idem: 'set', prompt: 'q' },
    { key: a.key, idem: 'other', prompt: 'p' }, { key: 'kiln_live_unknown', idem: 'set', prompt: 'p' },
  ]);
  assert.deepEqual(rows.map((r: any) => [r.status, r.id === rows[0].id, r.error_code, r.replayed]), [
    ['ok', true, null, false], ['ok', true, null, true], ['ok', false, 'KD001', false], ['ok', false, null, false], ['unauthorized', false, null, false],
  ]);
  assert.deepEqual(await made(a.id), { generations: 2, charges: 2, jobs: 2, runs: 0 });
});

test('another transaction: a duplicate waits for the claimant, then replays its commit or claims after its rollback', async () => {
  const a = await account();
  for (const outcome of ['commit', 'rollback'] as const) {
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    let firstId: string | undefined;
    const first = srv.db.sql.begin(async (tx) => {
      const [r] = await startKeyed(tx, [{ key: a.key, idem: `tx-${outcome}`, prompt: 'p' }]);
      firstId = r.id;
      await held;
      if (outcome === 'rollback') throw new Error('rolled back');
    }).catch((e) => e);
    while (!firstId) await new Promise((r) => setTimeout(r, 10));
    let settled = false;
    const second = startKeyed(srv.db.sql, [{ key: a.key, idem: `tx-${outcome}`, prompt: 'p' }]).then((rows: any) => { settled = true; return rows[0]; });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(settled, false, 'the duplicate waits for the claimant\'s transaction');
    release();
    await first;
    const row = await second;
    if (outcome === 'commit') assert.deepEqual([row.id, row.replayed], [firstId, true]);
    else assert.deepEqual([row.id !== firstId && row.id !== null, row.replayed], [true, false]);
  }
  assert.deepEqual(await made(a.id), { generations: 2, charges: 2, jobs: 2, runs: 0 });
});

/** `kiln api` in its own process on the test database; resolves with its base URL. */
function spawnApi(): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: srv.db.url, PORT: '0', KILN_LOG: 'silent' };
  delete env.KILN_PUBLIC_URL;
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'kiln.js'), 'api'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (l) => {
      const m = /listening on (\S+)/.exec(l);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code, sig) => reject(new Error(`kiln api exited early (${code ?? sig})`)));
  });
}

test('two API processes racing one key make one job', async () => {
  const [b1, b2] = await Promise.all([spawnApi(), spawnApi()]);
  for (let round = 0; round < 3; round++) {
    const a = await account();
    const body = { type: 'image', prompt: `race ${round}` };
    const res = await Promise.all(Array.from({ length: 20 }, (_, i) => post(a.key, body, 'cross-process', i % 2 ? b1 : b2)));
    assert.deepEqual(res.map((r) => r.status), Array(20).fill(202), JSON.stringify(res.find((r) => r.status !== 202)?.body));
    assert.equal(new Set(res.map((r) => r.body.id)).size, 1);
    assert.equal(res.filter((r) => r.headers.get('idempotent-replayed') === null).length, 1);
    assert.deepEqual(await made(a.id), { generations: 1, charges: 1, jobs: 1, runs: 0 });
  }
});

test('the workers\' sweep purges expired records', async () => {
  const a = await account();
  await srv.db.sql`insert into kiln_private.idempotency_keys (account_id, operation, key, fingerprint, response_status, response_body, expires_at)
    values (${a.id}, 'POST /generations', 'old', sha256('x'::bytea), 202, '{}', now() - interval '1 second'),
           (${a.id}, 'POST /generations', 'fresh', sha256('x'::bytea), 202, '{}', now() + interval '1 hour')`;
  // Started last: it runs every queued job of this file's database.
  await startTestWorker(srv, { workerHeartbeatSeconds: 1 });
  const until = Date.now() + 10_000;
  for (;;) {
    const rows = await srv.db.sql`select key from kiln_private.idempotency_keys where account_id = ${a.id} order by key`;
    if (rows.length === 1) {
      assert.deepEqual(rows.map((r) => r.key), ['fresh']);
      break;
    }
    assert.ok(Date.now() < until, 'the expired record is still there');
    await new Promise((r) => setTimeout(r, 100));
  }
});

test('the OpenAPI document has the header, the replay header, the 422 and the error type', async () => {
  const doc = (await api(srv.base, null, '/openapi.json')).body;
  for (const [p, conflict] of [['/generations', true], ['/workflows/{id}/runs', false]] as const) {
    const op = doc.paths[p].post;
    const param = op.parameters.find((x: any) => x.name === 'Idempotency-Key');
    assert.equal(param?.in, 'header', p);
    assert.equal(param.schema.pattern, '^[\\x20-\\x7E]{1,255}$', JSON.stringify(param.schema));
    assert.match(param.description, /printable ASCII/);
    assert.ok(op.responses['202'].headers['idempotent-replayed'], p);
    assert.equal(Boolean(op.responses['422']), conflict, p);
  }
  assert.ok(doc.components.schemas.Error.properties.error.properties.type.enum.includes('idempotency_conflict'));
});
