// One tenant's bad input never fails another's request (issue #11): values Postgres cannot store
// (NUL, lone surrogates, non-finite numbers) are a 400 naming the field before any SQL, and a
// batched SQL call that still fails is retried per request so only the offender fails.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { authorizeKey } from '../src/auth/access.ts';
import { acceptStarted, createGeneration, startGenerationCall } from '../src/generations/create.ts';
import { prepareGeneration } from '../src/generations/prepare.ts';
import { toApiError } from '../src/errors.ts';
import { hashKey } from '../src/auth/secrets.ts';
import { api, createAccount, createKey } from './_setup.ts';
import { connectV2, link, startMcpServer, toolError, type McpServer } from './_mcp.ts';

let srv: McpServer;
let good: { id: string; key: string };
let evil: { id: string; key: string };

before(async () => {
  srv = await startMcpServer();
  for (const who of ['good', 'evil'] as const) {
    const a = await createAccount(srv.db.sql, { tier: 'enterprise' });
    const k = await createKey(srv.db.sql, a.id);
    if (who === 'good') good = { id: a.id, key: k.key };
    else evil = { id: a.id, key: k.key };
  }
});

const BIG = 'y'.repeat(70 * 1024); // over 64 KB: the two-round-trip path of POST /generations

/** Raw JSON texts (so `1e999` and escapes reach the server as written) and the field each names. */
const POISON: Array<{ body: string; field: RegExp }> = [
  { body: '{"type":"code","prompt":"a\\u0000b"}', field: /^prompt: contains a character that cannot be stored \(NUL\)$/ },
  { body: '{"type":"code","prompt":"\\udfff\\ud800"}', field: /^prompt: contains a character that cannot be stored \(a lone surrogate\)$/ },
  { body: '{"type":"image","prompt":"ok","x":1e999}', field: /^x: is not a finite number/ },
  { body: '{"type":"code","prompt":"ok","textInputs":[{"content":"a\\u0000"}]}', field: /^textInputs\.0\.content: contains a character that cannot be stored \(NUL\)$/ },
  { body: '{"type":"code","prompt":"ok","textInputs":[{"content":"x","label":"\\ud83d"}]}', field: /^textInputs\.0\.label: .*lone surrogate/ },
  { body: '{"type":"code","prompt":"ok","a\\u0000b":1}', field: /^body: has a property name that contains a character that cannot be stored \(NUL\)$/ },
  { body: `{"type":"code","prompt":"${'😀'.repeat(20_000)}\\ud83d","pad":"${BIG}"}`, field: /^prompt: .*lone surrogate/ },
  { body: `{"type":"code","prompt":"ok","n":-1e999,"pad":"${BIG}"}`, field: /^n: is not a finite number/ },
];

test('40 valid POSTs from one key and poisonous ones from another, concurrently: 202s for the first, 400s naming the field for the rest', async () => {
  const valid = Array.from({ length: 40 }, (_, i) =>
    api(srv.base, good.key, '/generations', { body: { type: i % 2 ? 'image' : 'code', prompt: `valid request ${i}` } }));
  const poison = POISON.map((p) => api(srv.base, evil.key, '/generations', { body: p.body }));
  const [ok, bad] = await Promise.all([Promise.all(valid), Promise.all(poison)]);
  assert.deepEqual(ok.map((r) => r.status), ok.map(() => 202), `valid: ${JSON.stringify(ok.filter((r) => r.status !== 202).map((r) => r.body))}`);
  bad.forEach((r, i) => {
    assert.equal(r.status, 400, `poison ${i}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.type, 'invalid_request');
    assert.match(r.body.error.message, POISON[i]!.field, `poison ${i}`);
    assert.ok(r.headers.get('x-request-id'));
  });
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.generations where account_id = ${evil.id}`;
  assert.equal(n, 0, 'nothing was created for the poisonous requests');
});

test('without a valid key, a poisonous body is still 401 first', async () => {
  const r = await api(srv.base, 'kiln_live_' + 'x'.repeat(40), '/generations', { body: POISON[0]!.body });
  assert.equal(r.status, 401);
  const ro = await createKey(srv.db.sql, evil.id, { scopes: ['read'] });
  const r2 = await api(srv.base, ro.key, '/generations', { body: POISON[1]!.body });
  assert.equal(r2.status, 403);
});

test('POST /images/transforms names the field too', async () => {
  const r = await api(srv.base, evil.key, '/images/transforms', { body: '{"source":"seed/a\\u0000.png","op":"convert","options":{"format":"png"}}' });
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.match(r.body.error.message, /^source: contains a character that cannot be stored \(NUL\)$/);
});

test('past the HTTP checks, a batched start or create that fails in SQL fails only its offender, as a 400', async () => {
  // Straight into the services (no readJson): the batch carries the NUL to Postgres, which
  // rejects the whole call; the batcher runs each item again alone.
  // POST /generations' one-call path, past its checks before SQL.
  const startGeneration = async (ctx: typeof srv.ctx, hash: Buffer, input: unknown) => {
    const prepared = await prepareGeneration(ctx, input);
    const { caller, row } = await authorizeKey(ctx, hash, { scope: 'write', bucket: null, call: startGenerationCall }, prepared);
    return acceptStarted(ctx, caller, row!, prepared, input);
  };
  const goodHash = hashKey(good.key);
  const evilHash = hashKey(evil.key);
  const starts = await Promise.allSettled([
    ...Array.from({ length: 10 }, (_, i) => startGeneration(srv.ctx, goodHash, { type: 'code', prompt: `start ${i}` })),
    startGeneration(srv.ctx, evilHash, { type: 'code', prompt: 'a\u0000b' }),
    startGeneration(srv.ctx, evilHash, { type: 'code', prompt: '\udfff\ud800' }),
  ]);
  assert.deepEqual(starts.slice(0, 10).map((s) => s.status), Array(10).fill('fulfilled'), JSON.stringify(starts.filter((s) => s.status === 'rejected')));
  for (const s of starts.slice(10)) {
    assert.equal(s.status, 'rejected');
    const e = (s as PromiseRejectedResult).reason;
    assert.deepEqual([e.status, e.type], [400, 'invalid_request'], e.message);
    assert.match(e.message, /cannot be stored/);
  }

  const caller = (accountId: string) => ({ accountId, keyId: null, workspaceId: null, origin: 'api' as const });
  const creates = await Promise.allSettled([
    ...Array.from({ length: 10 }, (_, i) => createGeneration(srv.ctx, caller(good.id), { type: 'image', prompt: `create ${i}` })),
    createGeneration(srv.ctx, caller(evil.id), { type: 'image', prompt: 'a\u0000b' }),
  ]);
  assert.deepEqual(creates.slice(0, 10).map((s) => s.status), Array(10).fill('fulfilled'), JSON.stringify(creates.filter((s) => s.status === 'rejected')));
  const e = (creates[10] as PromiseRejectedResult).reason;
  assert.deepEqual([e.status, e.type], [400, 'invalid_request'], e.message);
});

test('MCP tool arguments are checked the same way', async () => {
  await link(srv.db.sql, srv.iss.issuer, 'evil', evil.id);
  const client = await connectV2(srv.mcpUrl, await srv.iss.sign({ sub: 'evil' }));
  try {
    const e = await toolError(client, 'generate_code', { prompt: 'a\u0000b' });
    assert.equal(e.type, 'invalid_request');
    assert.match(e.message, /prompt: contains a character that cannot be stored \(NUL\)/);
    const e2 = await toolError(client, 'generate_image', { prompt: 'ok', textInputs: [{ content: '\ud800' }] });
    assert.match(e2.message, /textInputs\.0\.content: .*lone surrogate/);
  } finally {
    await client.close();
  }
});

test('database errors map to client answers: data errors 400 (no Postgres text), unavailability 503', () => {
  const err = (code: string) => Object.assign(new Error(`raw postgres text for ${code}`), { code });
  for (const code of ['22P05', '22021', '22003']) {
    const api = toApiError(err(code));
    assert.deepEqual([api.status, api.type, api.message], [400, 'invalid_request', 'The request contains a value that cannot be stored.'], code);
  }
  for (const code of ['KILN_TIMEOUT', '57014', '57P01', '08006', '53300', 'CONNECTION_CLOSED', 'CONNECT_TIMEOUT', 'ECONNREFUSED', 'EPIPE']) {
    assert.equal(toApiError(err(code)).status, 503, code);
  }
  assert.equal(toApiError(err('42883')).status, 500, 'a bug stays a 500');
});
