// Attribution (docs/api.md, "Attribution"): endUser and metadata on every request that spends —
// POST /generations, batch lines, workflow runs and the MCP tools — stored on the generation, the
// run and the charge, returned in bodies, on /events and in webhooks; their validation (every
// rule, with pointers, nothing stored); GET /generations' filters; keys that require an end user.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { createKilnClient } from 'kiln/client';
import { startTestWorker, until, waitFor } from './_generations.ts';
import { openSse } from './_live.ts';
import { connectV2, link, ok, startMcpServer, toolError, waitGeneration, waitRunMcp, type McpServer } from './_mcp.ts';
import { api, createAccount, createKey } from './_setup.ts';
import { startReceiver, verify } from './_webhooks.ts';
import { saveWorkflow, waitRun } from './_workflows.ts';

let srv: McpServer;

before(async () => {
  srv = await startMcpServer({ config: { webhookAllowPrivate: true, readRpm: 10_000 } });
  await startTestWorker(srv);
});

async function account() {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { id, key } = await createKey(srv.db.sql, a.id, { scopes: ['read', 'write', 'keys'] });
  return { ...a, keyId: id, key };
}

/** What an account has stored: generations, charges, runs (a refused request adds none). */
async function stored(accountId: string) {
  const [r] = await srv.db.sql`select
    (select count(*)::int from kiln_private.generations where account_id = ${accountId}) as generations,
    (select count(*)::int from kiln_private.charges where account_id = ${accountId}) as charges,
    (select count(*)::int from kiln_private.workflow_runs where account_id = ${accountId}) as runs,
    (select count(*)::int from kiln_private.batches where account_id = ${accountId}) as batches`;
  return r;
}

const GRAPH = {
  nodes: [
    { id: 'brief', kind: 'text', text: 'Autumn sale' },
    { id: 'p1', kind: 'prompt', output: 'code', targetLanguage: 'tsx', prompt: 'Landing section', model: 'local/coder' },
    { id: 'o1', kind: 'output', label: 'Landing' },
    { id: 'p2', kind: 'prompt', output: 'code', targetLanguage: 'css', prompt: 'Styles', model: 'local/coder' },
    { id: 'o2', kind: 'output', label: 'Styles' },
  ],
  edges: [{ from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }, { from: 'brief', to: 'p2' }, { from: 'p2', to: 'o2' }],
};

test('REST: endUser and metadata round trip through the body, the list, the generation and its charge; without them the body has neither', async () => {
  const a = await account();
  const metadata = { project: 'alpha', 'env.stage:1': 'prod-1', empty: '' };
  const res = await api(srv.base, a.key, '/generations', { body: { type: 'code', prompt: 'hello', endUser: 'user-42 ✓', metadata } });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const done = await waitFor(srv, a.key, res.body.id);
  assert.equal(done.status, 'completed');
  assert.equal(done.endUser, 'user-42 ✓');
  assert.deepEqual(done.metadata, metadata);

  const plain = await api(srv.base, a.key, '/generations', { body: { type: 'code', prompt: 'plain' } });
  const plainDone = await waitFor(srv, a.key, plain.body.id);
  assert.ok(!('endUser' in plainDone) && !('metadata' in plainDone), JSON.stringify(plainDone));

  const list = await api(srv.base, a.key, '/generations');
  assert.deepEqual(list.body.data.find((g: any) => g.id === res.body.id), done);

  const [g] = await srv.db.sql`select end_user, metadata, request from kiln_private.generations where id = ${res.body.id}`;
  assert.equal(g!.end_user, 'user-42 ✓');
  assert.deepEqual(g!.metadata, metadata);
  const charges = await srv.db.sql`select status, end_user, metadata from kiln_private.charges where generation_id = ${res.body.id}`;
  assert.equal(charges.length, 1);
  assert.deepEqual({ ...charges[0] }, { status: 'settled', end_user: 'user-42 ✓', metadata });
  const [pc] = await srv.db.sql`select end_user, metadata from kiln_private.charges where generation_id = ${plain.body.id}`;
  assert.deepEqual({ ...pc }, { end_user: null, metadata: null });
  // Empty metadata is none.
  const empty = await api(srv.base, a.key, '/generations', { body: { type: 'code', prompt: 'x', metadata: {} } });
  assert.equal(empty.status, 202);
  assert.ok(!('metadata' in (await api(srv.base, a.key, `/generations/${empty.body.id}`)).body));
});

test('validation: every rule is a 400 invalid_request whose details point at the field or the pair; nothing is stored or charged', async () => {
  const a = await account();
  const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
  const cases: Array<[Record<string, unknown>, Array<string>]> = [
    [{ endUser: '' }, ['/endUser']],
    [{ endUser: 'u'.repeat(129) }, ['/endUser']],
    [{ endUser: 'tab\there' }, ['/endUser']],
    [{ endUser: 'bell\u0007' }, ['/endUser']],
    [{ endUser: 'c1\u0085' }, ['/endUser']],
    [{ endUser: 42 }, ['/endUser']],
    [{ endUser: null }, ['/endUser']],
    [{ metadata: [] }, ['/metadata']],
    [{ metadata: 'project=alpha' }, ['/metadata']],
    [{ metadata: many }, ['/metadata']],
    [{ metadata: { 'bad key': 'x' } }, ['/metadata/bad key']],
    [{ metadata: { 'a/b~c': 'x' } }, ['/metadata/a~1b~0c']],
    [{ metadata: { ['k'.repeat(65)]: 'x' } }, [`/metadata/${'k'.repeat(65)}`]],
    [{ metadata: { ok: 'fine', long: 'x'.repeat(513) } }, ['/metadata/long']],
    [{ metadata: { n: 5, b: true, o: { x: 'y' } } }, ['/metadata/n', '/metadata/b', '/metadata/o']],
    [{ endUser: '', metadata: { 'é': 'x' } }, ['/endUser', '/metadata/é']],
  ];
  for (const [extra, paths] of cases) {
    const res = await api(srv.base, a.key, '/generations', { body: { type: 'image', prompt: 'p', ...extra } });
    assert.equal(res.status, 400, JSON.stringify(extra));
    assert.equal(res.body.error.type, 'invalid_request');
    assert.deepEqual(res.body.error.details.map((d: any) => d.path), paths, JSON.stringify(extra));
    for (const d of res.body.error.details) assert.ok(d.message.length > 0);
    assert.match(res.body.error.message, /^(endUser|metadata)/);
  }
  assert.deepEqual(await stored(a.id), { generations: 0, charges: 0, runs: 0, batches: 0 });
  // The limits themselves are accepted: 128 characters (astral ones count once), 16 pairs, 512-character values.
  const limits = {
    endUser: '😀'.repeat(128),
    metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k_${i}:x.y-${'z'.repeat(50)}`, i === 0 ? '😀'.repeat(512) : 'v'])),
  };
  const res = await api(srv.base, a.key, '/generations', { body: { type: 'image', prompt: 'p', ...limits } });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const body = (await api(srv.base, a.key, `/generations/${res.body.id}`)).body;
  assert.equal(body.endUser, limits.endUser);
  assert.deepEqual(body.metadata, limits.metadata);
});

test('GET /generations filters by endUser and metadata[key]=value (pairs ANDed, with the other filters, paged), and never shows another account\'s', async () => {
  const a = await account();
  const b = await account();
  const make = async (key: string, body: Record<string, unknown>) => {
    const r = await api(srv.base, key, '/generations', { body: { prompt: 'f', ...body } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.id as string;
  };
  const u1alpha = await make(a.key, { type: 'code', endUser: 'u1', metadata: { project: 'alpha' } });
  const u1beta = await make(a.key, { type: 'image', endUser: 'u1', metadata: { project: 'beta' } });
  const u2alphaProd = await make(a.key, { type: 'code', endUser: 'u2', metadata: { project: 'alpha', env: 'prod' } });
  const none = await make(a.key, { type: 'code' });
  // Another account uses the same end user and tags.
  const bU1 = await make(b.key, { type: 'code', endUser: 'u1', metadata: { project: 'alpha', env: 'prod' } });

  const ids = async (key: string, query: string) => {
    const r = await api(srv.base, key, `/generations?${query}`);
    assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
    return r.body.data.map((g: any) => g.id);
  };
  assert.deepEqual(await ids(a.key, 'endUser=u1'), [u1beta, u1alpha]);
  assert.deepEqual(await ids(a.key, 'endUser=u1&metadata[project]=alpha'), [u1alpha]);
  assert.deepEqual(await ids(a.key, 'metadata[project]=alpha'), [u2alphaProd, u1alpha]);
  assert.deepEqual(await ids(a.key, 'metadata%5Bproject%5D=alpha&metadata%5Benv%5D=prod'), [u2alphaProd]);
  assert.deepEqual(await ids(a.key, 'metadata[project]=alpha&metadata[env]=dev'), []);
  assert.deepEqual(await ids(a.key, 'endUser=u1&type=image'), [u1beta]);
  assert.deepEqual(await ids(a.key, 'metadata[project]=alpha&type=image'), []);
  assert.deepEqual(await ids(a.key, 'endUser=u1&status=failed'), []);
  assert.deepEqual(await ids(a.key, 'endUser=nobody'), []);
  assert.equal((await ids(a.key, '')).length, 4);
  assert.ok((await ids(a.key, '')).includes(none));
  // Isolation: the same end user and tags of another account never show.
  assert.deepEqual(await ids(b.key, 'endUser=u1'), [bU1]);
  assert.deepEqual(await ids(b.key, 'metadata[project]=alpha'), [bU1]);
  assert.ok(!(await ids(a.key, 'endUser=u1&metadata[env]=prod')).includes(bU1));

  // Keyset pages with a filter.
  const p1 = await api(srv.base, a.key, '/generations?endUser=u1&limit=1');
  assert.deepEqual(p1.body.data.map((g: any) => g.id), [u1beta]);
  assert.ok(p1.body.nextCursor);
  const p2 = await api(srv.base, a.key, `/generations?endUser=u1&limit=1&cursor=${p1.body.nextCursor}`);
  assert.deepEqual(p2.body.data.map((g: any) => g.id), [u1alpha]);
  assert.equal(p2.body.nextCursor, null);
  // And with a metadata pair: read from the pairs' btree (generation_tags) a page at a time.
  const m1 = await api(srv.base, a.key, '/generations?metadata[project]=alpha&limit=1');
  assert.deepEqual(m1.body.data.map((g: any) => g.id), [u2alphaProd]);
  const m2 = await api(srv.base, a.key, `/generations?metadata[project]=alpha&limit=1&cursor=${m1.body.nextCursor}`);
  assert.deepEqual(m2.body.data.map((g: any) => g.id), [u1alpha]);
  assert.equal(m2.body.nextCursor, null);
  const tags = await srv.db.sql`select generation_id, mkey, mvalue from kiln_private.generation_tags where account_id = ${a.id} order by generation_id, mkey`;
  assert.deepEqual(tags.map((t) => [t.generation_id, t.mkey, t.mvalue]), [
    [u1alpha, 'project', 'alpha'], [u1beta, 'project', 'beta'], [u2alphaProd, 'env', 'prod'], [u2alphaProd, 'project', 'alpha'],
  ].sort((x, y) => (x[0]! < y[0]! ? -1 : x[0]! > y[0]! ? 1 : x[1]! < y[1]! ? -1 : 1)));
  const [plan] = await srv.db.sql`explain (format json) select t.generation_id from kiln_private.generation_tags t
    where t.account_id = ${a.id} and t.pool_id = ${a.id} and t.origin = 'api' and t.mkey = 'project' and t.mvalue = 'alpha'
    order by t.created_at desc, t.generation_id desc limit 21`;
  assert.match(JSON.stringify(plan), /generation_tags_list_idx/, 'a page is read in the index\'s order');

  // The typed client sends metadata as metadata[key]=value (deepObject).
  const client = createKilnClient({ baseUrl: srv.origin, apiKey: a.key });
  const page = await client.generations.list({ endUser: 'u2', metadata: { project: 'alpha', env: 'prod' } });
  assert.deepEqual(page.data.map((g) => g.id), [u2alphaProd]);

  // Bad filters are 400s naming the parameter.
  for (const [query, name] of [
    ['endUser=', 'endUser'], [`endUser=${'u'.repeat(129)}`, 'endUser'], ['endUser=a%07', 'endUser'], ['endUser=a&endUser=b', 'endUser'],
    ['metadata[bad%20key]=x', 'metadata'], [`metadata[k]=${'x'.repeat(513)}`, 'metadata'], ['metadata[k]=a&metadata[k]=b', 'metadata'],
    ['metadata=project', 'metadata'],
  ] as const) {
    const r = await api(srv.base, a.key, `/generations?${query}`);
    assert.equal(r.status, 400, query);
    assert.equal(r.body.error.type, 'invalid_request');
    assert.match(r.body.error.message, new RegExp(`^${name}`), query);
  }
});

test('the typed client, /events and a webhook carry endUser and metadata', async () => {
  const a = await account();
  const rcv = await startReceiver();
  const hook = await api(srv.base, a.key, '/webhooks', { body: { url: rcv.url, events: ['generation.completed'] } });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  const events = await openSse(`${srv.base}/events`, { authorization: `Bearer ${a.key}` });
  assert.equal(events.status, 200);

  const client = createKilnClient({ baseUrl: srv.origin, apiKey: a.key });
  const accepted = await client.generations.create({ type: 'code', prompt: 'via client', endUser: 'client-user', metadata: { channel: 'sdk' } });
  const got = await until('completed', async () => {
    const g = await client.generations.get(accepted.id);
    return g.status === 'completed' && g;
  });
  assert.equal(got.endUser, 'client-user');
  assert.deepEqual(got.metadata, { channel: 'sdk' });

  const [delivery] = await rcv.wait(1, (d) => d.json?.data?.id === accepted.id);
  const payload = verify(hook.body.secret, delivery!) as any;
  assert.equal(payload.type, 'generation.completed');
  assert.equal(payload.data.endUser, 'client-user');
  assert.deepEqual(payload.data.metadata, { channel: 'sdk' });

  await events.until(() => events.events.some((e) => JSON.parse(e.data).data?.id === accepted.id));
  const ev = JSON.parse(events.events.find((e) => JSON.parse(e.data).data?.id === accepted.id)!.data);
  assert.equal(ev.data.endUser, 'client-user');
  assert.deepEqual(ev.data.metadata, { channel: 'sdk' });
  events.abort();
});

test('workflow runs: the optional body attributes the run, its outputs and their charges; the run body, its webhook and a retry carry it; bad bodies are 400 with details', async () => {
  const a = await account();
  const wf = await saveWorkflow(srv, a.id, GRAPH);
  const rcv = await startReceiver();
  const hook = await api(srv.base, a.key, '/webhooks', { body: { url: rcv.url, events: ['workflow_run.completed'] } });
  assert.equal(hook.status, 201);

  const before = await stored(a.id);
  for (const [body, paths] of [
    [{ endUser: '' }, ['/endUser']],
    [{ metadata: { 'no spaces': 'x' } }, ['/metadata/no spaces']],
    [{ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, ['/metadata']],
  ] as const) {
    const r = await api(srv.base, a.key, `/workflows/${wf}/runs`, { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.deepEqual(r.body.error.details.map((d: any) => d.path), paths);
  }
  assert.equal((await api(srv.base, a.key, `/workflows/${wf}/runs`, { body: '[1]' })).status, 400);
  assert.deepEqual(await stored(a.id), before, 'nothing stored');

  const started = await api(srv.base, a.key, `/workflows/${wf}/runs`, { body: { endUser: 'run-user', metadata: { campaign: 'autumn' } } });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const run = await waitRun(srv, a.key, wf, started.body.id);
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.equal(run.endUser, 'run-user');
  assert.deepEqual(run.metadata, { campaign: 'autumn' });
  const outs = await srv.db.sql`select end_user, metadata from kiln_private.generations where run_id = ${started.body.id}`;
  assert.equal(outs.length, 2);
  for (const o of outs) assert.deepEqual({ ...o }, { end_user: 'run-user', metadata: { campaign: 'autumn' } });
  const charges = await srv.db.sql`select status, end_user, metadata from kiln_private.charges where workflow_run_id = ${started.body.id}`;
  assert.equal(charges.length, 2);
  for (const c of charges) assert.deepEqual({ ...c }, { status: 'settled', end_user: 'run-user', metadata: { campaign: 'autumn' } });
  const [delivery] = await rcv.wait(1, (d) => d.json?.data?.id === started.body.id);
  const payload = verify(hook.body.secret, delivery!) as any;
  assert.equal(payload.data.endUser, 'run-user');
  assert.deepEqual(payload.data.metadata, { campaign: 'autumn' });

  // No body, and an empty one, start an unattributed run, as before.
  const plain = await api(srv.base, a.key, `/workflows/${wf}/runs`, { method: 'POST' });
  assert.equal(plain.status, 202, JSON.stringify(plain.body));
  const plainRun = await waitRun(srv, a.key, wf, plain.body.id);
  assert.ok(!('endUser' in plainRun) && !('metadata' in plainRun));
  assert.equal((await api(srv.base, a.key, `/workflows/${wf}/runs`, { body: {} })).status, 202);

  // A retry of a failed run keeps its attribution.
  const failing = await saveWorkflow(srv, a.id, {
    nodes: [{ id: 'p', kind: 'prompt', output: 'code', targetLanguage: 'tsx', prompt: 'x', model: 'local/coder' }, { id: 'o', kind: 'output' }],
    edges: [{ from: 'p', to: 'o' }],
  });
  const f = await api(srv.base, a.key, `/workflows/${failing}/runs`, { body: { endUser: 'retry-user' } });
  await waitRun(srv, a.key, failing, f.body.id);
  // Made to have failed (a completed run is not retried): the retry runs its output again.
  await srv.db.sql`update kiln_private.workflow_run_outputs set status = 'failed', error = 'test' where run_id = ${f.body.id}`;
  await srv.db.sql`update kiln_private.workflow_runs set status = 'failed', error = 'test' where id = ${f.body.id}`;
  const retried = await api(srv.base, a.key, `/workflows/${failing}/runs/${f.body.id}/retry`, { method: 'POST' });
  assert.equal(retried.status, 202, JSON.stringify(retried.body));
  const [rr] = await srv.db.sql`select end_user from kiln_private.workflow_runs where id = ${retried.body.id}`;
  assert.equal(rr!.end_user, 'retry-user');
});

test('batch lines: attribution is stored per line; a bad pair is reported at /lines/N/body/…; nothing is created', async () => {
  const a = await account();
  const line = (n: number, body: Record<string, unknown>) => JSON.stringify({ custom_id: `c${n}`, method: 'POST', url: '/api/v1/generations', body: { type: 'code', prompt: `p${n}`, ...body } });
  const bad = [line(1, { endUser: 'ok' }), '', line(2, { metadata: { 'bad key': 'x', long: 'y'.repeat(513) } }), line(3, { endUser: '' })].join('\n');
  const r = await api(srv.base, a.key, '/batches', { body: bad, headers: { 'content-type': 'application/jsonl' } });
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.deepEqual(r.body.error.details.map((d: any) => d.path), ['/lines/3/body/metadata/bad key', '/lines/3/body/metadata/long', '/lines/4/body/endUser']);
  assert.deepEqual(await stored(a.id), { generations: 0, charges: 0, runs: 0, batches: 0 });

  const good = [line(1, { endUser: 'b-user', metadata: { lane: 'bulk' } }), line(2, {})].join('\n');
  const ok1 = await api(srv.base, a.key, '/batches', { body: good, headers: { 'content-type': 'application/jsonl' } });
  assert.equal(ok1.status, 202, JSON.stringify(ok1.body));
  const rows = await srv.db.sql`select custom_id, end_user, metadata from kiln_private.generations where batch_id = ${ok1.body.id} order by batch_line`;
  assert.deepEqual(rows.map((x) => ({ ...x })), [
    { custom_id: 'c1', end_user: 'b-user', metadata: { lane: 'bulk' } },
    { custom_id: 'c2', end_user: null, metadata: null },
  ]);
  // Once a line starts, its charge carries its attribution (kiln.reserve_generation).
  await until('the lines settled', async () => {
    const [x] = await srv.db.sql`select count(*)::int as n from kiln_private.charges c join kiln_private.generations g on g.charge_id = c.id
                                  where g.batch_id = ${ok1.body.id} and c.status = 'settled'`;
    return x!.n === 2;
  });
  const [c1] = await srv.db.sql`select c.end_user, c.metadata from kiln_private.charges c join kiln_private.generations g on g.charge_id = c.id
                                 where g.batch_id = ${ok1.body.id} and g.custom_id = 'c1'`;
  assert.deepEqual({ ...c1 }, { end_user: 'b-user', metadata: { lane: 'bulk' } });
  // The batch's lines filter by attribution too.
  const lines = await api(srv.base, a.key, `/generations?batchId=${ok1.body.id}&endUser=b-user`);
  assert.deepEqual(lines.body.data.map((g: any) => g.customId), ['c1']);
});

test('requireEndUser: POST /keys makes such a key (shown on GET /keys and /keys/{id}, in its audit entry); its spending requests without endUser are 400 at /endUser, with nothing stored', async () => {
  const a = await account();
  const bad = await api(srv.base, a.key, '/keys', { body: { name: 'x', scopes: ['read'], requireEndUser: 'yes' } });
  assert.equal(bad.status, 400);
  assert.match(bad.body.error.message, /^requireEndUser/);
  const created = await api(srv.base, a.key, '/keys', { body: { name: 'app', scopes: ['read', 'write'], requireEndUser: true } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.requireEndUser, true);
  assert.equal((await api(srv.base, a.key, `/keys/${created.body.id}`)).body.requireEndUser, true);
  const listed = (await api(srv.base, a.key, '/keys')).body.data;
  assert.equal(listed.find((k: any) => k.id === created.body.id).requireEndUser, true);
  assert.equal(listed.find((k: any) => k.id === a.keyId).requireEndUser, false);
  const audit = await api(srv.base, a.key, '/audit?action=key.created');
  const entry = audit.body.data.find((e: any) => e.target.id === created.body.id);
  assert.equal(entry.details.requireEndUser, true);

  const k = created.body.key as string;
  const before = await stored(a.id);
  const refused = await api(srv.base, k, '/generations', { body: { type: 'code', prompt: 'x', metadata: { a: 'b' } } });
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  assert.equal(refused.body.error.type, 'invalid_request');
  assert.match(refused.body.error.message, /endUser/);
  assert.deepEqual(refused.body.error.details, [{ path: '/endUser', message: 'is required: this API key requires an end user (requireEndUser)' }]);
  const wf = await saveWorkflow(srv, a.id, GRAPH);
  const noRun = await api(srv.base, k, `/workflows/${wf}/runs`, { method: 'POST' });
  assert.equal(noRun.status, 400, JSON.stringify(noRun.body));
  assert.deepEqual(noRun.body.error.details.map((d: any) => d.path), ['/endUser']);
  const batch = ['{"custom_id":"a","method":"POST","url":"/api/v1/generations","body":{"type":"code","prompt":"a","endUser":"e"}}',
    '{"custom_id":"b","method":"POST","url":"/api/v1/generations","body":{"type":"code","prompt":"b"}}',
    '',
    '{"custom_id":"c","method":"POST","url":"/api/v1/generations","body":{"type":"code","prompt":"c"}}'].join('\n');
  const noBatch = await api(srv.base, k, '/batches', { body: batch, headers: { 'content-type': 'application/jsonl' } });
  assert.equal(noBatch.status, 400, JSON.stringify(noBatch.body));
  assert.deepEqual(noBatch.body.error.details.map((d: any) => d.path), ['/lines/2/body/endUser', '/lines/4/body/endUser']);
  assert.deepEqual(await stored(a.id), { ...before }, 'nothing stored or charged');

  // With an end user, the same requests go through; the other keys of the account are unaffected.
  const g = await api(srv.base, k, '/generations', { body: { type: 'code', prompt: 'x', endUser: 'e1' } });
  assert.equal(g.status, 202, JSON.stringify(g.body));
  assert.equal((await api(srv.base, k, `/workflows/${wf}/runs`, { body: { endUser: 'e1' } })).status, 202);
  assert.equal((await api(srv.base, a.key, '/generations', { body: { type: 'code', prompt: 'x' } })).status, 202);
});

test('MCP: generate_code and run_workflow take endUser and metadata (their rules, as tool errors); get_generation and list_generations show and filter them', async () => {
  const a = await account();
  await link(srv.db.sql, srv.iss.issuer, `sub-${a.id}`, a.id);
  const client = await connectV2(srv.mcpUrl, await srv.iss.sign({ sub: `sub-${a.id}` }));
  try {
    const started = await ok(client, 'generate_code', { prompt: 'mcp', endUser: 'mcp-user', metadata: { via: 'mcp' } });
    const g = await waitGeneration(client, started.id);
    assert.equal(g.status, 'completed');
    assert.equal(g.endUser, 'mcp-user');
    assert.deepEqual(g.metadata, { via: 'mcp' });
    const [charge] = await srv.db.sql`select end_user, metadata, origin from kiln_private.charges where generation_id = ${started.id}`;
    assert.deepEqual({ ...charge }, { end_user: 'mcp-user', metadata: { via: 'mcp' }, origin: 'mcp' });
    await ok(client, 'generate_code', { prompt: 'other', endUser: 'someone-else' });
    const listed = await ok(client, 'list_generations', { endUser: 'mcp-user', metadata: { via: 'mcp' } });
    assert.deepEqual(listed.data.map((x: any) => x.id), [started.id]);

    const bad = await toolError(client, 'generate_image', { prompt: 'x', metadata: { 'bad key': 'x' } });
    assert.equal(bad.type, 'invalid_request');
    assert.match(bad.message, /metadata/);
    const badUser = await toolError(client, 'generate_image', { prompt: 'x', endUser: '' });
    assert.match(badUser.message, /endUser/);

    const wf = await saveWorkflow(srv, a.id, GRAPH);
    const run = await ok(client, 'run_workflow', { workflowId: wf, endUser: 'mcp-run', metadata: { via: 'mcp' } });
    const settled = await waitRunMcp(client, wf, run.id);
    assert.equal(settled.status, 'completed');
    assert.equal(settled.endUser, 'mcp-run');
    assert.deepEqual(settled.metadata, { via: 'mcp' });
    const outs = await srv.db.sql`select end_user from kiln_private.generations where run_id = ${run.id}`;
    assert.deepEqual(outs.map((o) => o.end_user), ['mcp-run', 'mcp-run']);
    const badRun = await toolError(client, 'run_workflow', { workflowId: wf, metadata: { x: 'y'.repeat(513) } });
    assert.equal(badRun.type, 'invalid_request');
  } finally {
    await client.close();
  }
});
