// The `gemini` adapter through the whole path — POST /generations, the worker, a strict Gemini API
// peer on loopback: an image (with a reference image) lands in the store at the requested ratio
// and serves, code with thoughts billed as output settles exactly, 429 with retry-after, 503 then
// success, 5xx, malformed JSON, a safety block, timeout — and a cancel through the API reaching the
// upstream.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { blockedReply, errorReply, finishReply, imageReply, png, startGeminiPeer, textReply, type GeminiPeer } from './_gemini-peer.ts';
import { caseLedger, caseOf, caseReplies, submitCases, type Case } from './_cases.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { charges, generationRow, startTestWorker } from './_generations.ts';
import { clientGone } from './_peer.ts';

let srv: TestServer;
let peer: GeminiPeer;
const SECRET = 'AIzaUpstreamSecret0123456789';
process.env.KILN_TEST_GEMINI_KEY = SECRET;

let refPng = '';

const cases: Record<string, Case> = {
  'ok-image': { body: { type: 'image', model: 'gemini/painter', aspectRatio: '16:9', images: [() => ({ url: refPng })] }, replies: () => undefined },
  'ok-code': {
    body: { type: 'code', model: 'gemini/coder', targetLanguage: 'tsx', textInputs: [{ content: 'context here', label: 'Brief' }] },
    replies: () => textReply('```tsx\nexport default function A() { return null; }\n```', { promptTokenCount: 120, candidatesTokenCount: 40, thoughtsTokenCount: 60 }),
  },
  'retry-after': {
    body: { type: 'image', model: 'gemini/painter', aspectRatio: '1:1' },
    replies: (n) => (n === 0 ? errorReply(429, 'Resource has been exhausted (e.g. check quota).', { 'retry-after': '1' }) : undefined),
  },
  'unavailable-then-ok': {
    body: { type: 'code', model: 'gemini/coder' },
    replies: (n) => (n === 0 ? errorReply(503, 'The model is overloaded.') : textReply('recovered', { promptTokenCount: 10, candidatesTokenCount: 10 })),
  },
  'server-error': { body: { type: 'code', model: 'gemini/coder' }, replies: () => errorReply(500, `internal detail ${SECRET}`) },
  malformed: { body: { type: 'image', model: 'gemini/painter' }, replies: () => ({ body: '{"candidates": [{"content": ' }) },
  blocked: { body: { type: 'code', model: 'gemini/coder' }, replies: () => blockedReply('SAFETY') },
  'image-safety': { body: { type: 'image', model: 'gemini/painter' }, replies: () => finishReply('IMAGE_SAFETY') },
  // Its own entry with a short `upstream.timeoutMs`: 4 attempts of 500 ms, not of the 4 s below.
  timeout: { body: { type: 'image', model: 'gemini/hasty' }, replies: () => ({ hang: true }) },
};

const requestsOf = (name: string) => peer.requests.filter((r) => caseOf(r.json) === name);
const { settledOnce, released } = caseLedger(cases, () => srv);

async function newKey(on: TestServer) {
  const a = await createAccount(on.db.sql);
  return (await createKey(on.db.sql, a.id)).key;
}

const upstream = (model: string, timeoutMs?: number) => ({ baseUrl: peer.url, model, apiKeyEnv: 'KILN_TEST_GEMINI_KEY', ...(timeoutMs ? { timeoutMs } : {}) });
const PAINTER = { id: 'gemini/painter', name: 'Gemini painter', category: 'image', provider: 'gemini', supports_image_input: true, cost: { micros_per_image: 39000 }, markup: 1.25 };
const CODER = {
  id: 'gemini/coder', name: 'Gemini coder', category: 'text', provider: 'gemini', supports_image_input: true,
  cost: { input_micros_per_token: 0.3, output_micros_per_token: 2.5 }, maxOutputTokens: 2000, markup: 1,
};

before(async () => {
  refPng = `data:image/png;base64,${(await png(8, 8, '#aa0000')).toString('base64')}`;
  peer = await startGeminiPeer({ key: SECRET });
  const reply = caseReplies(cases);
  peer.script(async (req) => {
    const name = caseOf(req.json);
    return name === 'cancel' ? { ...(await imageReply()), delayMs: 30_000 } : reply(name);
  });
  // 4 s per upstream attempt (was 1.5 s): every answering case must answer well inside it even
  // when this process (API, worker and peer together) stalls for seconds on a loaded machine, or
  // it times out and is retried (a 5xx case then failed as "timed out", counts were off); the
  // never-answering case has an entry of its own with a short timeout, and the cancel case one with a long one.
  srv = await startServer({ config: { providerTimeoutMs: 4000, providerAttempts: 2, generationMaxAttempts: 2 } });
  await startTestWorker(srv);
  for (const model of [
    { ...PAINTER, upstream: upstream('gemini-up-image') }, { ...CODER, upstream: upstream('gemini-up-flash') },
    { ...PAINTER, id: 'gemini/hasty', upstream: upstream('gemini-up-image', 500) },
    // Only the cancel can end its call.
    { ...PAINTER, id: 'gemini/patient', upstream: upstream('gemini-up-image', 60_000) },
  ]) {
    await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json(model)})`;
  }
  await submitCases(srv, cases);
});

after(async () => {
  await peer?.close();
});


test('image: generateContent with the reference image inline → stored at the exact ratio, served, billed per image', async () => {
  const done = await cases['ok-image']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.costMicros, 48750);
  await settledOnce('ok-image', 48750);
  const img = await fetch(done.result.url);
  assert.equal(img.status, 200);
  assert.equal(img.headers.get('content-type'), 'image/png');
  const meta = await sharp(Buffer.from(await img.arrayBuffer())).metadata();
  // The peer draws 1344×768 for 16:9 like gemini-2.5-flash-image; stored cropped to 1344×756.
  assert.deepEqual([meta.width, meta.height], [1344, 756]);
  const [req] = requestsOf('ok-image');
  assert.equal(req!.invalid, null);
  assert.equal(req!.path, '/v1beta/models/gemini-up-image:generateContent');
  assert.equal(req!.headers['x-goog-api-key'], SECRET);
  assert.deepEqual(req!.json.generationConfig, { responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: '16:9' } });
  assert.deepEqual(req!.json.contents[0].parts[1], { inlineData: { mimeType: 'image/png', data: refPng.split(',')[1] } });
  assert.match((await generationRow(srv.db.sql, cases['ok-image']!.id!)).provider_request_id, /^resp_peer\d+$/);
});

test('code: thoughts billed at the output price, settled exactly', async () => {
  const done = await cases['ok-code']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.code, 'export default function A() { return null; }');
  const cost = Math.ceil(120 * 0.3 + (40 + 60) * 2.5); // 36 + 250
  assert.equal(done.result.costMicros, cost);
  await settledOnce('ok-code', cost);
  const [req] = requestsOf('ok-code');
  assert.equal(req!.json.generationConfig.maxOutputTokens, 2000);
  assert.match(req!.json.systemInstruction.parts[0].text, /TSX/);
  assert.match(req!.json.contents[0].parts[0].text, /context here/);
});

test('429 with retry-after and 503 then success: retried, completed, charged once', async () => {
  const waited = await cases['retry-after']!.final!;
  assert.equal(waited.status, 'completed', JSON.stringify(waited));
  const [first, second] = requestsOf('retry-after');
  assert.ok(second!.receivedAt - first!.receivedAt >= 950, 'waited out retry-after: 1');
  await settledOnce('retry-after', 48750);
  const recovered = await cases['unavailable-then-ok']!.final!;
  assert.equal(recovered.status, 'completed', JSON.stringify(recovered));
  assert.equal(requestsOf('unavailable-then-ok').length, 2);
  await settledOnce('unavailable-then-ok', Math.ceil(10 * 0.3 + 10 * 2.5));
});

test('5xx: retried across job attempts, then failed with a summarised message; reservation released', async () => {
  const done = await cases['server-error']!.final!;
  assert.equal(done.status, 'failed');
  assert.match(done.error, /^upstream provider returned 500 \(INTERNAL\) after 2 attempts/);
  assert.doesNotMatch(done.error, /internal detail|AIza/);
  assert.equal(requestsOf('server-error').length, 4);
  await released('server-error');
});

test('malformed JSON, a blocked prompt and an IMAGE_SAFETY finish fail at once and release the reservation', async () => {
  assert.match((await cases.malformed!.final!).error, /malformed JSON/);
  assert.equal((await cases.blocked!.final!).error, 'upstream provider blocked the prompt (SAFETY)');
  assert.equal((await cases['image-safety']!.final!).error, 'upstream model declined the request (IMAGE_SAFETY)');
  for (const name of ['malformed', 'blocked', 'image-safety']) {
    assert.equal((await cases[name]!.final!).status, 'failed', name);
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

test('cancel through the API aborts the in-flight generateContent call within 2 s and releases the reservation', async (t) => {
  // An entry with a 60 s upstream timeout: only the cancel can end the call.
  const key = await newKey(srv);
  const res = await api(srv.base, key, '/generations', { body: { type: 'image', model: 'gemini/patient', prompt: '[case:cancel] take your time' } });
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
