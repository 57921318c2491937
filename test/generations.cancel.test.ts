// POST /generations/{id}/cancel end to end: a `kiln worker` process calling a slow loopback
// OpenAI peer has its call aborted within 2 s of the cancel (through kiln:cancel, and through the
// backstop when no notification reaches it); pending jobs are dropped; the ledger shows releases;
// 404/400/403/409 rules; and a cancel racing a completion always ends in exactly one of the two.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { after, before, test } from 'node:test';
import { chatReply, startOpenAIPeer, type OpenAIPeer, type PeerRequest } from './_openai-peer.ts';
import { api, createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';
import { charges, generationRow, until } from './_generations.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

let srv: TestServer;
let peer: OpenAIPeer;

before(async () => {
  peer = await startOpenAIPeer();
  // "[slow]" prompts are answered after 30 s (a call a cancel must cut short); others at once.
  peer.script((req) => (JSON.stringify(req.json).includes('[slow]') ? { ...chatReply('too late'), delayMs: 30_000 } : chatReply('done')));
  srv = await startServer();
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'peer/coder', name: 'Peer coder', category: 'text', provider: 'openai', upstream: { baseUrl: peer.url, model: 'c' },
    cost: { input_micros_per_token: 1, output_micros_per_token: 2 }, maxOutputTokens: 100, markup: 1,
  })})`;
});

after(async () => {
  await peer?.close();
});

async function newKey(opts: { slots?: number } = {}) {
  const a = await createAccount(srv.db.sql);
  if (opts.slots !== undefined) await srv.db.sql`update kiln_private.accounts set parallel_slots = ${opts.slots} where id = ${a.id}`;
  const k = await createKey(srv.db.sql, a.id);
  return { accountId: a.id, key: k.key, keyId: k.id };
}

async function create(key: string, body: Record<string, unknown>): Promise<string> {
  const res = await api(srv.base, key, '/generations', { body });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.id;
}

const cancel = (key: string | null, id: string) => api(srv.base, key, `/generations/${id}/cancel`, { method: 'POST' });


let worker: Promise<ChildProcess> | null = null;
/** One `kiln worker` process for the file (the API is this process). */
function spawnWorker(): Promise<ChildProcess> {
  worker ??= new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'kiln.js'), 'worker'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: srv.db.url, KILN_LOG: 'silent' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    onCleanup(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    });
    readline.createInterface({ input: child.stdout! }).on('line', (l) => {
      if (/worker started/i.test(l)) resolve(child);
    });
    child.once('exit', (code, sig) => reject(new Error(`worker exited early (${code ?? sig})`)));
  });
  return worker;
}

const requestFor = (marker: string): PeerRequest | undefined => peer.requests.find((r) => JSON.stringify(r.json).includes(marker));

async function jobsOf(id: string): Promise<number> {
  const [r] = await srv.db.sql`select count(*)::int as n from graphile_worker._private_jobs where key = ${id} or payload->>'id' = ${id}`;
  return r.n;
}

test('a processing generation: its provider call in another process is aborted within 2 s, its reservation released, nothing retried', async (t) => {
  await spawnWorker();
  const { key } = await newKey();
  const id = await create(key, { type: 'code', prompt: '[slow] [case:abort] take your time', model: 'peer/coder' });
  const req = await until('the worker calls the peer', () => requestFor('[case:abort]'));
  assert.equal((await generationRow(srv.db.sql, id)).status, 'processing');
  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => c.status), ['reserved']);

  const canceledAt = Date.now();
  const res = await cancel(key, id);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body, { id, status: 'failed', result: null, error: 'canceled', prompt: '[slow] [case:abort] take your time' });
  assert.equal(res.headers.get('cache-control'), 'no-store');

  await until('the peer sees the connection aborted', () => req.abortedAt, 5_000);
  const abortMs = req.abortedAt! - canceledAt;
  t.diagnostic(`provider call aborted ${abortMs} ms after the cancel was sent`);
  assert.ok(abortMs <= 2_000, `aborted after ${abortMs} ms`);

  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => [c.status, c.settled]), [['released', null]]);
  const get = await api(srv.base, key, `/generations/${id}`);
  assert.deepEqual(get.body, { id, status: 'failed', result: null, error: 'canceled', prompt: '[slow] [case:abort] take your time' });
  // The task ended quietly: its job is gone, not retried, and the peer saw one call.
  await until('the job is gone', async () => (await jobsOf(id)) === 0, 5_000);
  await new Promise((r) => setTimeout(r, 1_000));
  assert.equal(peer.requests.filter((r) => JSON.stringify(r.json).includes('[case:abort]')).length, 1);
  const row = await generationRow(srv.db.sql, id);
  assert.equal(row.attempts, 1);
  assert.equal(row.error, 'canceled');

  const again = await cancel(key, id);
  assert.equal(again.status, 409);
  assert.equal(again.body.error.type, 'conflict');
  assert.match(again.body.error.message, /already failed/);
});

test('a generation that ends without its worker hearing of it (a missed notification) is aborted by the backstop within 2 s', async (t) => {
  await spawnWorker();
  const { key } = await newKey();
  const id = await create(key, { type: 'code', prompt: '[slow] [case:missed] take your time', model: 'peer/coder' });
  const req = await until('the worker calls the peer', () => requestFor('[case:missed]'));
  // Failed with 'canceled' straight in SQL: the generation ends, but no kiln:cancel is sent.
  const endedAt = Date.now();
  const [{ r }] = await srv.db.sql`select kiln.fail_generation(${id}, 'canceled') as r`;
  assert.equal(r.applied, true);
  await until('the peer sees the connection aborted', () => req.abortedAt, 5_000);
  const abortMs = req.abortedAt! - endedAt;
  t.diagnostic(`provider call aborted ${abortMs} ms after the generation ended`);
  assert.ok(abortMs <= 2_000, `aborted after ${abortMs} ms`);
  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => c.status), ['released']);
});

test('the worker hears kiln:cancel on its lease connection: a bare NOTIFY, which the backstop cannot see, aborts the call', async () => {
  await spawnWorker();
  const { key } = await newKey();
  const id = await create(key, { type: 'code', prompt: '[slow] [case:notify] take your time', model: 'peer/coder' });
  const req = await until('the worker calls the peer', () => requestFor('[case:notify]'));
  // Nothing ends the generation in SQL: only the notification itself can cut the call short.
  await srv.db.sql`select pg_notify('kiln:cancel', ${id})`;
  await until('the peer sees the connection aborted', () => req.abortedAt, 5_000);
  assert.equal((await generationRow(srv.db.sql, id)).status, 'processing', 'the backstop had nothing to find');
  // Tidy: the real cancel ends it and releases its reservation.
  assert.equal((await cancel(key, id)).status, 200);
  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => c.status), ['released']);
});

test('a pending generation: failed "canceled", reservation released, its job dropped', async () => {
  await spawnWorker();
  // No parallel slot: the job waits pending (re-queued) until a slot frees.
  const { key } = await newKey({ slots: 0 });
  const id = await create(key, { type: 'code', prompt: 'wait for a slot' });
  await until('the job was looked at and is waiting', async () => (await generationRow(srv.db.sql, id)).waiting);
  assert.equal((await generationRow(srv.db.sql, id)).status, 'pending');
  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => c.status), ['reserved']);

  const res = await cancel(key, id);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body, { id, status: 'failed', result: null, error: 'canceled', prompt: 'wait for a slot' });
  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => [c.status, c.settled]), [['released', null]]);
  // Its queued job is dropped at once; one a worker had just picked up (the slot wait re-queues it
  // every KILN_SLOT_RETRY_MS) ends as soon as it finds the generation ended.
  await until('its job is gone', async () => (await jobsOf(id)) === 0, 5_000);
  const [usage] = await srv.db.sql`select (kiln.get_usage(account_id, null)->>'used_micros')::bigint as used from kiln_private.generations where id = ${id}`;
  assert.equal(Number(usage.used), 0, 'nothing is held or charged');
});

test('409 after completion; 404 for unknown, another account\'s and not-API generations; 400; 403 read-only; 401', async () => {
  const { accountId, key } = await newKey({ slots: 0 });
  const done = await create(key, { type: 'code', prompt: 'finished' });
  await srv.db.sql`select kiln.complete_generation(${done}, '{"type":"code","code":"x","structuredOutput":null}', 3, null)`;
  const conflict = await cancel(key, done);
  assert.equal(conflict.status, 409);
  assert.deepEqual(Object.keys(conflict.body), ['error']);
  assert.equal(conflict.body.error.type, 'conflict');
  assert.match(conflict.body.error.message, /already completed/);
  assert.deepEqual((await charges(srv.db.sql, done)).map((c) => [c.status, c.settled]), [['settled', '3']]);

  const pending = await create(key, { type: 'code', prompt: 'not yours' });
  const other = await newKey();
  for (const [k, id] of [[other.key, pending], [key, '00000000-0000-4000-8000-000000000000']] as const) {
    const r = await cancel(k, id);
    assert.equal(r.status, 404, id);
    assert.equal(r.body.error.type, 'not_found');
  }
  assert.equal((await generationRow(srv.db.sql, pending)).status, 'pending', 'another account cannot cancel it');

  // An MCP-origin generation is not the REST API's: 404, like GET.
  const [mcp] = await srv.db.sql`select id from kiln_private.generations where account_id = ${accountId} limit 0`;
  assert.equal(mcp, undefined);
  const mcpGen = (await import('../src/generations/create.ts')).createGeneration(srv.ctx, { accountId, keyId: null, workspaceId: null, origin: 'mcp' }, { type: 'code', prompt: 'via mcp' });
  const mcpId = (await mcpGen).id;
  assert.equal((await cancel(key, mcpId)).status, 404);
  assert.equal((await generationRow(srv.db.sql, mcpId)).status, 'pending');

  const bad = await cancel(key, 'not-a-uuid');
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.type, 'invalid_request');

  const readOnly = (await createKey(srv.db.sql, accountId, { scopes: ['read'] })).key;
  for (const id of [pending, 'not-a-uuid']) {
    const r = await cancel(readOnly, id);
    assert.equal(r.status, 403, 'the key is checked before the id');
    assert.equal(r.body.error.type, 'insufficient_scope');
  }
  assert.equal((await cancel(null, pending)).status, 401);
  assert.equal((await cancel('kiln_live_nope', pending)).status, 401);
  assert.equal((await generationRow(srv.db.sql, pending)).status, 'pending');

  const m = await api(srv.base, key, `/generations/${pending}/cancel`);
  assert.equal(m.status, 405, 'GET is not a cancel');
});

test('a cancel racing a completion ends in exactly one of the two: status, answer and ledger agree', async (t) => {
  const { key } = await newKey({ slots: 0 });
  const tally = { canceled: 0, completed: 0 };
  for (let i = 0; i < 40; i++) {
    const id = await create(key, { type: 'code', prompt: `race ${i}` });
    if (i % 2) {
      // Half of them processing (started by a stand-in worker), half pending. The stand-in takes
      // the job away from the real worker process first.
      await until('the job is taken away', async () => (await srv.db.sql`delete from graphile_worker._private_jobs where key = ${id} and locked_at is null returning id`).length === 1);
      await srv.db.sql`update kiln_private.accounts set parallel_slots = 1 where id = (select account_id from kiln_private.generations where id = ${id})`;
      const [{ s }] = await srv.db.sql`select kiln.start_generation(${id}, 'pool-race', 999999, 30, 1000, 2) as s`;
      assert.equal(s.outcome, 'run');
      await srv.db.sql`update kiln_private.accounts set parallel_slots = 0 where id = (select account_id from kiln_private.generations where id = ${id})`;
    }
    const [res, completed] = await Promise.all([
      cancel(key, id),
      srv.db.sql`select kiln.complete_generation(${id}, '{"type":"code","code":"won","structuredOutput":null}', 7, null) as c`.then(([r]) => r.c.applied as boolean),
    ]);
    const row = await generationRow(srv.db.sql, id);
    const ledger = (await charges(srv.db.sql, id)).map((c) => [c.status, c.settled]);
    if (completed) {
      tally.completed++;
      assert.equal(res.status, 409, `iteration ${i}: the completion won, the cancel must be a conflict`);
      assert.equal(row.status, 'completed');
      assert.deepEqual(ledger, [['settled', '7']]);
    } else {
      tally.canceled++;
      assert.equal(res.status, 200, `iteration ${i}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'canceled');
      assert.equal(row.status, 'failed');
      assert.equal(row.error, 'canceled');
      assert.deepEqual(ledger, [['released', null]], 'never a settled charge for a canceled job');
    }
  }
  t.diagnostic(`cancel won ${tally.canceled}, completion won ${tally.completed}`);
  assert.equal(tally.canceled + tally.completed, 40);
});
