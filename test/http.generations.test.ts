// POST/GET /generations end to end with the local provider: real HTTP server, real graphile-worker
// runner, real Postgres. Validation, auth/scope/budget/workspace/limit errors, visibility, slots.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import sharp from 'sharp';
import { createGeneration } from '../src/generations/create.ts';
import { TARGET_LANGUAGES } from '../src/providers/types.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { charges, generationRow, startTestWorker, waitFor } from './_generations.ts';

let srv: TestServer;
let key: string;
let keyId: string;
let accountId: string;

const PNG_1PX =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

before(async () => {
  srv = await startServer();
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql);
  accountId = a.id;
  ({ key, id: keyId } = await createKey(srv.db.sql, a.id));
});

async function ledgerOf(account: string) {
  const [r] = await srv.db.sql`
    select (select count(*)::int from kiln_private.generations where account_id = ${account}) as generations,
           (select count(*)::int from kiln_private.charges where account_id = ${account}) as charges`;
  return r;
}

test('an image generation completes with a signed URL to its image and one settled charge', async () => {
  const res = await api(srv.base, key, '/generations', { body: { type: 'image', prompt: 'a red fox', aspectRatio: '16:9' } });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ['id', 'status']);
  assert.equal(res.body.status, 'pending');
  assert.ok(res.headers.get('x-request-id'));
  const done = await waitFor(srv, key, res.body.id);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual(Object.keys(done).sort(), ['error', 'id', 'prompt', 'result', 'status']);
  assert.equal(done.error, null);
  // The additive `prompt`: what was asked, so that a list of jobs can tell them apart.
  assert.equal(done.prompt, 'a red fox');
  // ImageResult's fields plus the additive `model` (the entry that produced it).
  assert.deepEqual(Object.keys(done.result).sort(), ['aspectRatio', 'costMicros', 'mediaType', 'model', 'type', 'url']);
  assert.equal(done.result.model, srv.ctx.config.defaultImageModel);
  assert.equal(done.result.type, 'image');
  assert.equal(done.result.mediaType, 'image/png');
  assert.equal(done.result.aspectRatio, '16:9');
  assert.equal(done.result.costMicros, 1000);
  assert.match(done.result.url, new RegExp(`^${srv.origin}/files/${accountId}/generations/${res.body.id}\\.png\\?expires=\\d+&sig=`));

  const img = await fetch(done.result.url);
  assert.equal(img.status, 200);
  assert.equal(img.headers.get('content-type'), 'image/png');
  const meta = await sharp(Buffer.from(await img.arrayBuffer())).metadata();
  assert.deepEqual([meta.width, meta.height], [1024, 576]);
  // The object is private: without the signature it does not exist.
  const bare = await fetch(done.result.url.split('?')[0]);
  assert.equal(bare.status, 404);

  const ledger = await charges(srv.db.sql, res.body.id);
  assert.equal(ledger.length, 1);
  assert.deepEqual(
    { status: ledger[0].status, settled: ledger[0].settled, key: ledger[0].key_id, origin: ledger[0].origin, model: ledger[0].model_id },
    { status: 'settled', settled: '1000', key: keyId, origin: 'api', model: 'local/sketch' },
  );
  const row = await generationRow(srv.db.sql, res.body.id);
  assert.equal(row.attempts, 1);
  assert.ok(row.started_at >= row.created_at && row.finished_at >= row.started_at);
});

test('different prompts give different images; the same prompt the same one', async () => {
  const make = async (prompt: string) => {
    const r = await api(srv.base, key, '/generations', { body: { type: 'image', prompt } });
    const done = await waitFor(srv, key, r.body.id);
    return Buffer.from(await (await fetch(done.result.url)).arrayBuffer()).toString('base64');
  };
  const [a, b, c] = await Promise.all([make('ocean at dawn'), make('desert at night'), make('ocean at dawn')]);
  assert.notEqual(a, b);
  assert.equal(a, c);
});

test('code generations are valid for every target language, with structuredOutput as documented', async () => {
  const cases = [...TARGET_LANGUAGES.map((targetLanguage) => ({ targetLanguage })), { targetLanguage: 'tsx', screenHtml: true }];
  const results = await Promise.all(
    cases.map(async (c) => {
      const r = await api(srv.base, key, '/generations', { body: { type: 'code', prompt: 'a pricing card', ...c } });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      return { c, done: await waitFor(srv, key, r.body.id) };
    }),
  );
  for (const { c, done } of results) {
    const label = JSON.stringify(c);
    assert.equal(done.status, 'completed', label);
    assert.deepEqual(Object.keys(done.result).sort(), ['code', 'costMicros', 'model', 'structuredOutput', 'type'], label);
    assert.equal(done.result.type, 'code');
    assert.ok(done.result.code.length > 0, label);
    assert.ok(done.result.costMicros > 0, label);
    if ('screenHtml' in c) assert.match(done.result.code, /<html[\s>]/i, label);
    else if (c.targetLanguage === 'json') assert.deepEqual(done.result.structuredOutput, JSON.parse(done.result.code));
    else if (c.targetLanguage === 'svg') assert.match(done.result.code.trim(), /^(<\?xml[^>]*>\s*)?<svg[\s\S]*<\/svg>$/);
    else if (c.targetLanguage === 'glsl') {
      const u = done.result.structuredOutput.uniforms;
      assert.ok(u.length >= 3 && u.length <= 5, label);
      for (const x of u) assert.deepEqual(Object.keys(x).sort(), ['default', 'label', 'max', 'min', 'name', 'type']);
      assert.doesNotMatch(done.result.code, /#version/);
    } else assert.equal(done.result.structuredOutput, null, label);
  }
});

test('the SVG model draws SVG by default; image inputs reach models that accept them', async () => {
  const svg = await api(srv.base, key, '/generations', { body: { type: 'code', model: 'local/vector', prompt: 'a logo' } });
  assert.equal(svg.status, 202);
  const withImage = await api(srv.base, key, '/generations', {
    body: { type: 'image', prompt: 'like this', images: [{ url: PNG_1PX }], textInputs: [{ content: 'brand colours: teal', label: 'Brief' }] },
  });
  assert.equal(withImage.status, 202, JSON.stringify(withImage.body));
  assert.match((await waitFor(srv, key, svg.body.id)).result.code, /<svg/);
  assert.equal((await waitFor(srv, key, withImage.body.id)).status, 'completed');
});

test('every field rule is a 400 invalid_request envelope, and nothing is created or reserved', async () => {
  const a = await createAccount(srv.db.sql);
  const k = (await createKey(srv.db.sql, a.id)).key;
  const long = 'x'.repeat(50_001);
  const bad: Array<[string, unknown]> = [
    ['no body', undefined],
    ['not JSON', '{"type":'],
    ['array body', []],
    ['missing type', { prompt: 'p' }],
    ['unknown type', { type: 'video', prompt: 'p' }],
    ['missing prompt', { type: 'image' }],
    ['empty prompt', { type: 'image', prompt: '' }],
    ['prompt not a string', { type: 'image', prompt: 42 }],
    ['prompt over 50,000', { type: 'image', prompt: long }],
    ['unknown model', { type: 'image', prompt: 'p', model: 'nope/nope' }],
    ['empty model', { type: 'image', prompt: 'p', model: '' }],
    ['text model for an image', { type: 'image', prompt: 'p', model: 'local/coder' }],
    ['image model for code', { type: 'code', prompt: 'p', model: 'local/sketch' }],
    ['images not an array', { type: 'image', prompt: 'p', images: 'x' }],
    ['11 images', { type: 'image', prompt: 'p', images: Array.from({ length: 11 }, () => ({ url: PNG_1PX })) }],
    ['image without url', { type: 'image', prompt: 'p', images: [{}] }],
    ['http image url', { type: 'image', prompt: 'p', images: [{ url: 'http://example.com/a.png' }] }],
    ['ftp image url', { type: 'image', prompt: 'p', images: [{ url: 'ftp://example.com/a.png' }] }],
    ['relative image url', { type: 'image', prompt: 'p', images: [{ url: '/a.png' }] }],
    ['loopback image url', { type: 'image', prompt: 'p', images: [{ url: 'https://127.0.0.1/a.png' }] }],
    ['malformed data URI', { type: 'image', prompt: 'p', images: [{ url: 'data:image/png;base64,@@@' }] }],
    ['data URI that is not an image', { type: 'image', prompt: 'p', images: [{ url: 'data:image/png;base64,aGVsbG8=' }] }],
    ['non-image mediaType', { type: 'image', prompt: 'p', images: [{ url: PNG_1PX, mediaType: 'text/html' }] }],
    ['images for a model without image input', { type: 'code', prompt: 'p', model: 'local/vector', images: [{ url: PNG_1PX }] }],
    ['textInputs not an array', { type: 'code', prompt: 'p', textInputs: {} }],
    ['11 textInputs', { type: 'code', prompt: 'p', textInputs: Array.from({ length: 11 }, () => ({ content: 'c' })) }],
    ['textInput without content', { type: 'code', prompt: 'p', textInputs: [{ label: 'x' }] }],
    ['textInput content over 50,000', { type: 'code', prompt: 'p', textInputs: [{ content: long }] }],
    ['unknown aspectRatio', { type: 'image', prompt: 'p', aspectRatio: '5:4' }],
    ['unknown targetLanguage', { type: 'code', prompt: 'p', targetLanguage: 'cobol' }],
    ['non-SVG language for the SVG model', { type: 'code', prompt: 'p', model: 'local/vector', targetLanguage: 'json' }],
    ['screenHtml not a boolean', { type: 'code', prompt: 'p', screenHtml: 'yes' }],
  ];
  for (const [name, body] of bad) {
    const res = await api(srv.base, k, '/generations', { method: 'POST', body: body as any });
    assert.equal(res.status, 400, `${name}: ${res.status} ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error.type, 'invalid_request', name);
    assert.equal(typeof res.body.error.message, 'string', name);
    assert.deepEqual(Object.keys(res.body), ['error'], name);
  }
  assert.deepEqual(await ledgerOf(a.id), { generations: 0, charges: 0 });

  // The boundaries themselves are accepted; length counts characters, not UTF-16 units.
  for (const prompt of ['x'.repeat(50_000), '🦊'.repeat(50_000), 'x']) {
    const ok = await api(srv.base, k, '/generations', { body: { type: 'image', prompt } });
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
  }
  const ten = await api(srv.base, k, '/generations', {
    body: { type: 'code', prompt: 'p', textInputs: Array.from({ length: 10 }, () => ({ content: 'c'.repeat(50_000) })) },
  });
  assert.equal(ten.status, 202, JSON.stringify(ten.body));
});

test('authorization comes first: 401 without a key, 403 for a read-only key (even with a bad body)', async () => {
  const none = await api(srv.base, null, '/generations', { method: 'POST' });
  assert.equal(none.status, 401);
  assert.equal(none.body.error.type, 'unauthorized');
  const unknown = await api(srv.base, `kiln_live_${'A'.repeat(40)}`, '/generations', { body: { type: 'nope' } });
  assert.equal(unknown.status, 401);
  const a = await createAccount(srv.db.sql);
  const ro = (await createKey(srv.db.sql, a.id, { scopes: ['read'] })).key;
  for (const body of [{ type: 'image', prompt: 'p' }, { type: 'nope' }]) {
    const res = await api(srv.base, ro, '/generations', { body });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.type, 'insufficient_scope');
  }
  assert.deepEqual(await ledgerOf(a.id), { generations: 0, charges: 0 });
});

test('large and unsized bodies are read only for an authorized key, and still create', async () => {
  const a = await createAccount(srv.db.sql);
  const k = (await createKey(srv.db.sql, a.id)).key;
  // Over 64 KB: the key is checked before the body is read (two round trips).
  const big = { type: 'code', prompt: 'summarise these', textInputs: [{ label: 'notes', content: 'x'.repeat(48_000) }, { content: 'y'.repeat(48_000) }] };
  assert.ok(JSON.stringify(big).length > 64 * 1024);
  const bad = await api(srv.base, `kiln_live_${'B'.repeat(40)}`, '/generations', { body: big });
  assert.equal(bad.status, 401);
  const ok = await api(srv.base, k, '/generations', { body: big });
  assert.equal(ok.status, 202, JSON.stringify(ok.body));
  // No content-length (chunked): the same order.
  const chunked = (key: string, text: string) => fetch(`${srv.base}/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(text)); c.close(); } }),
    duplex: 'half',
  } as RequestInit);
  const r1 = await chunked(k, JSON.stringify({ type: 'code', prompt: 'chunked' }));
  assert.equal(r1.status, 202);
  const r2 = await chunked(`kiln_live_${'C'.repeat(40)}`, '{not json');
  assert.equal(r2.status, 401);
  const r3 = await chunked(k, '{not json');
  assert.equal(r3.status, 400);
  assert.deepEqual(await ledgerOf(a.id), { generations: 2, charges: 2 });
});

test('an exhausted budget or a blocked account is 429 insufficient_quota; nothing is created', async () => {
  const poor = await createAccount(srv.db.sql, { budgetMicros: 500 });
  const k = (await createKey(srv.db.sql, poor.id)).key;
  const res = await api(srv.base, k, '/generations', { body: { type: 'image', prompt: 'p' } });
  assert.equal(res.status, 429);
  assert.equal(res.body.error.type, 'insufficient_quota');
  assert.equal(res.headers.get('retry-after'), null);
  assert.deepEqual(await ledgerOf(poor.id), { generations: 0, charges: 0 });

  const blocked = await createAccount(srv.db.sql, { tier: 'blocked' });
  const bk = (await createKey(srv.db.sql, blocked.id)).key;
  const b = await api(srv.base, bk, '/generations', { body: { type: 'code', prompt: 'p' } });
  assert.equal(b.status, 429);
  assert.equal(b.body.error.type, 'insufficient_quota');
});

test('concurrent POSTs are batched: each request gets its own outcome, budgets stay exact', async () => {
  const rich = await Promise.all([0, 1, 2].map(async () => {
    const a = await createAccount(srv.db.sql, { budgetMicros: 5000 });
    return { id: a.id, key: (await createKey(srv.db.sql, a.id)).key };
  }));
  const poor = await createAccount(srv.db.sql, { budgetMicros: 500 });
  const poorKey = (await createKey(srv.db.sql, poor.id)).key;
  // 7 image requests per rich account (budget for 5 at 1000 each) plus the poor one, all at once.
  const calls = [
    ...rich.flatMap((r) => Array.from({ length: 7 }, () => ({ who: r.id, key: r.key }))),
    { who: poor.id, key: poorKey },
  ];
  const results = await Promise.all(calls.map((c) => api(srv.base, c.key, '/generations', { body: { type: 'image', prompt: 'batch' } }).then((res) => ({ ...c, res }))));
  for (const r of rich) {
    const mine = results.filter((x) => x.who === r.id);
    assert.equal(mine.filter((x) => x.res.status === 202).length, 5, 'exactly the budget is reserved');
    for (const x of mine.filter((m) => m.res.status !== 202)) assert.equal(x.res.body.error.type, 'insufficient_quota');
    assert.equal((await ledgerOf(r.id)).charges, 5);
  }
  const p = results.find((x) => x.who === poor.id)!;
  assert.equal(p.res.status, 429);
  assert.equal(p.res.body.error.type, 'insufficient_quota');
});

test('a price change between requests is honoured: the reservation uses the current catalog price', async () => {
  const model = { id: 'local/priced', name: 'Priced sketch', category: 'image', provider: 'local', cost: { micros_per_image: 1000 }, markup: 1 };
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json(model)})`;
  const first = await api(srv.base, key, '/generations', { body: { type: 'image', prompt: 'p', model: 'local/priced' } });
  assert.equal(first.status, 202);
  // The API process has this entry cached now; the operator raises the price.
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({ ...model, cost: { micros_per_image: 7000 } })})`;
  const second = await api(srv.base, key, '/generations', { body: { type: 'image', prompt: 'p', model: 'local/priced' } });
  assert.equal(second.status, 202, JSON.stringify(second.body));
  const [a] = await charges(srv.db.sql, first.body.id);
  const [b] = await charges(srv.db.sql, second.body.id);
  assert.equal(a.reserved, '1000');
  assert.equal(b.reserved, '7000');
  // A disabled model is refused even while cached.
  await srv.db.sql`update kiln_private.models set enabled = false where id = 'local/priced'`;
  const off = await api(srv.base, key, '/generations', { body: { type: 'image', prompt: 'p', model: 'local/priced' } });
  assert.equal(off.status, 400);
  assert.equal(off.body.error.type, 'invalid_request');
});

test('workspace keys bill the Team pool; a lapsed plan or a departed owner is 402 payment_required', async () => {
  const owner = await createAccount(srv.db.sql);
  const admin = await createAccount(srv.db.sql);
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Studio', ${owner.id})`;
  await srv.db.sql`select kiln.add_workspace_member(${ws.id}, ${admin.id}, 'admin')`;
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', 5000000, true)`;
  const k = await createKey(srv.db.sql, admin.id, { workspaceId: ws.id });

  const ok = await api(srv.base, k.key, '/generations', { body: { type: 'image', prompt: 'team art' } });
  assert.equal(ok.status, 202);
  await waitFor(srv, k.key, ok.body.id);
  const [c] = await charges(srv.db.sql, ok.body.id);
  assert.equal(c.workspace_id, ws.id);
  assert.equal(c.status, 'settled');
  const usage = await api(srv.base, k.key, '/usage');
  assert.equal(usage.body.workspace_used_micros, 1000);
  assert.equal(usage.body.used_micros, 0, 'the personal budget is untouched');

  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'lapsed', null, false)`;
  const lapsed = await api(srv.base, k.key, '/generations', { body: { type: 'image', prompt: 'p' } });
  assert.equal(lapsed.status, 402);
  assert.equal(lapsed.body.error.type, 'payment_required');

  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', null, false)`;
  assert.equal((await api(srv.base, k.key, '/generations', { body: { type: 'image', prompt: 'p' } })).status, 202);
  await srv.db.sql`select kiln.remove_workspace_member(${ws.id}, ${admin.id})`;
  const left = await api(srv.base, k.key, '/generations', { body: { type: 'image', prompt: 'p' } });
  assert.equal(left.status, 402);
  assert.equal(left.body.error.type, 'payment_required');
});

test('a key\'s own requests-per-minute limit applies to generation calls', async () => {
  const a = await createAccount(srv.db.sql);
  const k = (await createKey(srv.db.sql, a.id, { rpm: 2 })).key;
  for (let i = 0; i < 2; i++) assert.equal((await api(srv.base, k, '/generations', { body: { type: 'image', prompt: 'p' } })).status, 202);
  const limited = await api(srv.base, k, '/generations', { body: { type: 'image', prompt: 'p' } });
  assert.equal(limited.status, 429);
  assert.equal(limited.body.error.type, 'rate_limited');
  assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/);
  assert.equal((await ledgerOf(a.id)).generations, 2);
});

test('GET /generations/{id}: no-store, 400 for a non-uuid, 404 for unknown, other accounts and non-API origins', async () => {
  const res = await api(srv.base, key, '/generations', { body: { type: 'code', prompt: 'p' } });
  const mine = await api(srv.base, key, `/generations/${res.body.id}`);
  assert.equal(mine.status, 200);
  assert.equal(mine.headers.get('cache-control'), 'no-store');
  assert.deepEqual(Object.keys(mine.body).sort(), ['error', 'id', 'prompt', 'result', 'status']);
  assert.equal(mine.body.prompt, 'p');
  assert.ok(['pending', 'processing', 'completed'].includes(mine.body.status));

  for (const bad of ['nope', '123', `${res.body.id}x`]) {
    const r = await api(srv.base, key, `/generations/${bad}`);
    assert.equal(r.status, 400, bad);
    assert.equal(r.body.error.type, 'invalid_request');
  }
  const unknown = await api(srv.base, key, `/generations/${crypto.randomUUID()}`);
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.error.type, 'not_found');

  const other = await createAccount(srv.db.sql);
  const otherKey = (await createKey(srv.db.sql, other.id, { scopes: ['read'] })).key;
  const cross = await api(srv.base, otherKey, `/generations/${res.body.id}`);
  assert.equal(cross.status, 404);
  assert.deepEqual(cross.body, unknown.body);

  const viaMcp = await createGeneration(srv.ctx, { accountId, keyId: null, workspaceId: null, origin: 'mcp' }, { type: 'image', prompt: 'agent art' });
  assert.equal(viaMcp.status, 'pending');
  assert.equal((await api(srv.base, key, `/generations/${viaMcp.id}`)).status, 404);
  const [c] = await charges(srv.db.sql, viaMcp.id);
  assert.equal(c.origin, 'mcp');
  assert.equal(c.key_id, null);

  assert.equal((await api(srv.base, null, `/generations/${res.body.id}`)).status, 401);
});

test('the account\'s parallel slots bound processing generations; the rest wait and are never rejected', async () => {
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/slow-sketch', name: 'Slow sketch', category: 'image', provider: 'local', upstream: { delayMs: 400 },
    cost: { micros_per_image: 1000 }, markup: 1,
  })})`;
  const a = await createAccount(srv.db.sql);
  await srv.db.sql`update kiln_private.accounts set parallel_slots = 1 where id = ${a.id}`;
  const k = (await createKey(srv.db.sql, a.id)).key;
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await api(srv.base, k, '/generations', { body: { type: 'image', prompt: `slot ${i}`, model: 'local/slow-sketch' } });
    assert.equal(r.status, 202);
    ids.push(r.body.id);
  }
  let maxProcessing = 0;
  for (;;) {
    const [r] = await srv.db.sql`
      select count(*) filter (where status = 'processing')::int as p, count(*) filter (where status in ('completed', 'failed'))::int as d
      from kiln_private.generations where account_id = ${a.id}`;
    maxProcessing = Math.max(maxProcessing, r.p);
    if (r.d === 3) break;
    await new Promise((res) => setTimeout(res, 20));
  }
  assert.equal(maxProcessing, 1);
  const rows = await srv.db.sql`select status, started_at, finished_at from kiln_private.generations where account_id = ${a.id} order by started_at`;
  assert.ok(rows.every((r) => r.status === 'completed'));
  for (let i = 1; i < rows.length; i++) {
    assert.ok(rows[i].started_at >= rows[i - 1].finished_at, 'never two at once');
    // A freed slot wakes the next one at once (not after KILN_SLOT_RETRY_MS).
    assert.ok(rows[i].started_at - rows[i - 1].finished_at < 1000, `slot handed over in ${rows[i].started_at - rows[i - 1].finished_at} ms`);
  }
});

test('both operations are in the OpenAPI document', async () => {
  const doc = (await api(srv.base, null, '/openapi.json')).body;
  assert.equal(doc.paths['/generations'].post.operationId, 'createGeneration');
  assert.ok(doc.paths['/generations'].post.responses['202']);
  assert.ok(doc.paths['/generations'].post.requestBody);
  assert.equal(doc.paths['/generations/{id}'].get.operationId, 'getGeneration');
  for (const name of ['GenerationRequest', 'GenerationAccepted', 'GenerationStatus', 'ImageResult', 'CodeResult']) {
    assert.ok(doc.components.schemas[name], name);
  }
});
