// The `anthropic` adapter through the whole path — POST /generations, the worker, a strict
// Messages API peer on loopback: code and SVG with exact token costs on the ledger (cache tokens as
// input), image inputs as base64 and url blocks, max_tokens, 429 with retry-after, 529 then success,
// 5xx, malformed JSON, 400, refusal, timeout — and a cancel through the API reaching the upstream.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { errorReply, messageReply, startAnthropicPeer, type AnthropicPeer } from './_anthropic-peer.ts';
import { caseLedger, caseOf, caseReplies, submitCases, type Case } from './_cases.ts';
import { clientGone, png } from './_peer.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { charges, generationRow, startTestWorker } from './_generations.ts';

let srv: TestServer;
let peer: AnthropicPeer;
const SECRET = 'sk-ant-upstream-secret-123';
process.env.KILN_TEST_ANTHROPIC_KEY = SECRET;

const svg = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle cx="5" cy="5" r="4"/></svg>';
let refPng = '';

const cases: Record<string, Case> = {
  'ok-code': {
    body: {
      type: 'code', model: 'claude/coder', targetLanguage: 'json', textInputs: [{ content: 'context here', label: 'Brief' }],
      images: [() => ({ url: refPng }), () => ({ url: 'https://images.example.com/ref.png', mediaType: 'image/png' })],
    },
    replies: () => messageReply('```json\n{"answer": 42}\n```', { input_tokens: 100, cache_creation_input_tokens: 10, cache_read_input_tokens: 5, output_tokens: 40 }),
  },
  'ok-svg': { body: { type: 'code', model: 'claude/svg' }, replies: () => messageReply(svg, { input_tokens: 12, output_tokens: 34 }) },
  'max-tokens': {
    body: { type: 'code', model: 'claude/coder', targetLanguage: 'markdown' },
    replies: () => messageReply('# A long document that was cut', { input_tokens: 20, output_tokens: 1000 }, 'max_tokens'),
  },
  'retry-after': {
    body: { type: 'code', model: 'claude/coder' },
    replies: (n) => (n === 0 ? errorReply(429, 'rate_limit_error', 'slow down', { 'retry-after': '1' }) : messageReply('after the wait')),
  },
  'overloaded-then-ok': {
    body: { type: 'code', model: 'claude/coder' },
    replies: (n) => (n === 0 ? errorReply(529, 'overloaded_error', 'Overloaded') : messageReply('recovered', { input_tokens: 5, output_tokens: 5 })),
  },
  'server-error': { body: { type: 'code', model: 'claude/coder' }, replies: () => errorReply(500, 'api_error', `internal detail ${SECRET}`) },
  malformed: { body: { type: 'code', model: 'claude/coder' }, replies: () => ({ body: '{"type": "message", "content": [' }) },
  rejected: { body: { type: 'code', model: 'claude/coder' }, replies: () => errorReply(400, 'invalid_request_error', `prompt is too long ${SECRET}`) },
  refusal: { body: { type: 'code', model: 'claude/coder' }, replies: () => messageReply('I will not do that.', { input_tokens: 9, output_tokens: 7 }, 'refusal') },
  // Its own entry with a short `upstream.timeoutMs`: 4 attempts of 500 ms, not of the 4 s below.
  timeout: { body: { type: 'code', model: 'claude/hasty' }, replies: () => ({ hang: true }) },
};

const requestsOf = (name: string) => peer.requests.filter((r) => caseOf(r.json) === name);
const { settledOnce, released } = caseLedger(cases, () => srv);

async function newKey(on: TestServer) {
  const a = await createAccount(on.db.sql);
  return (await createKey(on.db.sql, a.id)).key;
}

const CODER = {
  id: 'claude/coder', name: 'Claude coder', category: 'text', provider: 'anthropic', supports_image_input: true,
  cost: { input_micros_per_token: 3, output_micros_per_token: 15 }, maxOutputTokens: 1000, markup: 1,
};

before(async () => {
  refPng = `data:image/png;base64,${(await png(8, 8)).toString('base64')}`;
  peer = await startAnthropicPeer({ key: SECRET });
  const reply = caseReplies(cases);
  peer.script((req) => {
    const name = caseOf(req.json);
    return name === 'cancel' ? { ...messageReply('too late'), delayMs: 30_000 } : reply(name);
  });
  // 4 s per upstream attempt (was 1.5 s): every answering case must answer well inside it even
  // when this process (API, worker and peer together) stalls for seconds on a loaded machine, or
  // it times out and is retried (a 5xx case then failed as "timed out", counts were off); the
  // never-answering case has an entry of its own with a short timeout, and the cancel case one with a long one.
  srv = await startServer({ config: { providerTimeoutMs: 4000, providerAttempts: 2, generationMaxAttempts: 2 } });
  await startTestWorker(srv);
  for (const model of [
    { ...CODER, upstream: { baseUrl: peer.url, model: 'claude-up', apiKeyEnv: 'KILN_TEST_ANTHROPIC_KEY', acceptImageUrls: true } },
    { ...CODER, id: 'claude/svg', name: 'Claude SVG', category: 'svg', upstream: { baseUrl: peer.url, model: 'claude-up', apiKeyEnv: 'KILN_TEST_ANTHROPIC_KEY' } },
    { ...CODER, id: 'claude/hasty', upstream: { baseUrl: peer.url, model: 'claude-up', apiKeyEnv: 'KILN_TEST_ANTHROPIC_KEY', timeoutMs: 500 } },
    // Only the cancel can end its call.
    { ...CODER, id: 'claude/patient', upstream: { baseUrl: peer.url, model: 'claude-up', apiKeyEnv: 'KILN_TEST_ANTHROPIC_KEY', timeoutMs: 60_000 } },
  ]) {
    await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json(model)})`;
  }
  await submitCases(srv, cases);
});

after(async () => {
  await peer?.close();
});


test('code: the Messages API request is well-formed, fences stripped, tokens (cache included) × price settle exactly', async () => {
  const done = await cases['ok-code']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.code, '{"answer": 42}');
  assert.deepEqual(done.result.structuredOutput, { answer: 42 });
  const cost = (100 + 10 + 5) * 3 + 40 * 15;
  assert.equal(done.result.costMicros, cost);
  await settledOnce('ok-code', cost);
  const [req] = requestsOf('ok-code');
  assert.equal(req!.invalid, null);
  assert.equal(req!.headers['x-api-key'], SECRET);
  assert.equal(req!.headers['anthropic-version'], '2023-06-01');
  assert.equal(req!.json.model, 'claude-up');
  assert.equal(req!.json.max_tokens, 1000);
  assert.match(req!.json.system, /JSON/);
  const [text, inline, byUrl] = req!.json.messages[0].content;
  assert.match(text.text, /context here/);
  assert.equal(inline.source.type, 'base64');
  assert.equal(inline.source.media_type, 'image/png');
  assert.deepEqual(byUrl.source, { type: 'url', url: 'https://images.example.com/ref.png' });
  assert.match((await generationRow(srv.db.sql, cases['ok-code']!.id!)).provider_request_id, /^req_peer\d+$/);
});

test('svg: an svg entry draws SVG and is charged its tokens', async () => {
  const done = await cases['ok-svg']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.code, svg);
  assert.match(requestsOf('ok-svg')[0]!.json.system, /standalone SVG/);
  await settledOnce('ok-svg', 12 * 3 + 34 * 15);
});

test('max_tokens: the partial answer is delivered and charged', async () => {
  const done = await cases['max-tokens']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.code, '# A long document that was cut');
  await settledOnce('max-tokens', 20 * 3 + 1000 * 15);
});

test('429 with retry-after and 529 overloaded: retried, completed, charged once', async () => {
  const waited = await cases['retry-after']!.final!;
  assert.equal(waited.status, 'completed', JSON.stringify(waited));
  const [first, second] = requestsOf('retry-after');
  assert.ok(second!.receivedAt - first!.receivedAt >= 950, 'waited out retry-after: 1');
  await settledOnce('retry-after', 12 * 3 + 34 * 15);
  const overloaded = await cases['overloaded-then-ok']!.final!;
  assert.equal(overloaded.status, 'completed', JSON.stringify(overloaded));
  assert.equal(requestsOf('overloaded-then-ok').length, 2);
  await settledOnce('overloaded-then-ok', 5 * 3 + 5 * 15);
});

test('5xx: retried across job attempts, then failed with a summarised message; reservation released', async () => {
  const done = await cases['server-error']!.final!;
  assert.equal(done.status, 'failed');
  // The adapter's 2 attempts per execution, then the job's own 2 executions.
  assert.match(done.error, /^upstream provider returned 500 \(api_error\) after 2 attempts/);
  assert.doesNotMatch(done.error, /internal detail|sk-ant/);
  assert.equal(requestsOf('server-error').length, 4);
  await released('server-error');
});

test('malformed JSON, a 400 and a refusal fail at once (no retry) and release the reservation', async () => {
  const bad = await cases.malformed!.final!;
  assert.equal(bad.status, 'failed');
  assert.match(bad.error, /malformed JSON/);
  const rej = await cases.rejected!.final!;
  assert.equal(rej.error, 'upstream provider returned 400 (invalid_request_error)');
  const refused = await cases.refusal!.final!;
  assert.equal(refused.error, 'upstream model declined the request');
  for (const name of ['malformed', 'rejected', 'refusal']) {
    assert.equal(requestsOf(name).length, 1, name);
    await released(name);
  }
});

test('an upstream that never answers times out, is retried, then fails; reservation released', async () => {
  const done = await cases.timeout!.final!;
  assert.equal(done.status, 'failed');
  assert.match(done.error, /timed out after 500 ms/);
  assert.equal(requestsOf('timeout').length, 4);
  await released('timeout');
});

test('cancel through the API aborts the in-flight Messages call within 2 s and releases the reservation', async (t) => {
  // An entry with a 60 s upstream timeout: only the cancel can end the call.
  const key = await newKey(srv);
  const res = await api(srv.base, key, '/generations', { body: { type: 'code', model: 'claude/patient', prompt: '[case:cancel] take your time' } });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const id = res.body.id;
  let req;
  for (let i = 0; i < 500 && !(req = requestsOf('cancel')[0]); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(req, 'the worker called the peer');
  assert.equal((await generationRow(srv.db.sql, id)).status, 'processing');
  const canceledAt = Date.now();
  const cancel = await api(srv.base, key, `/generations/${id}/cancel`, { method: 'POST' });
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
  assert.ok(await clientGone(req, 5000), 'the peer saw the connection aborted');
  t.diagnostic(`upstream call aborted ${req.abortedAt! - canceledAt} ms after the cancel`);
  assert.ok(req.abortedAt! - canceledAt <= 2_000);
  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => [c.status, c.settled]), [['released', null]]);
  assert.equal(requestsOf('cancel').length, 1);
});
