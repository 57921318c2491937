// The `openai` adapter through the whole path — POST /generations, the worker, a real
// OpenAI-protocol peer on loopback — in every upstream behaviour: success, slow, 429 with
// retry-after, 5xx (retried across jobs, then failed), malformed JSON, 4xx, timeout. Each ends
// in the right state, and the ledger shows exactly one settled charge or a released one. The
// shipped catalog entries (catalog/openai-*.json, catalog/openrouter-*.json) go through
// `kiln model upsert`'s validation, are pointed at the peer — strict like OpenAI about each
// family's parameters — and run a real generation whose settled cost is checked on the ledger.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { commands } from '../src/cli/commands.ts';
import { chatReply, errorReply, GPT_IMAGE_OUTPUT_TOKENS, imageReply, png, startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';
import { caseLedger, caseOf, caseReplies, submitCases, type Case as WholePathCase } from './_cases.ts';
import { startServer, testConfig, type TestServer } from './_setup.ts';
import { charges, generationRow, startTestWorker, until } from './_generations.ts';

let srv: TestServer;
let peer: OpenAIPeer;
const SECRET = 'sk-upstream-secret-123';
process.env.KILN_TEST_PEER_KEY = SECRET;

const CATALOG = path.resolve(import.meta.dirname, '..', 'catalog');
const shipped = fs.readdirSync(CATALOG).filter((f) => /^(openai|openrouter)-.*\.json$/.test(f)).sort();
const entryOf = (file: string) => JSON.parse(fs.readFileSync(path.join(CATALOG, file), 'utf8'));
const MARKUP = 1.25; // entries without a markup use KILN_DEFAULT_MARKUP, pinned here
// Per upstream attempt. Every answering case must answer well inside it even when this process
// (API, worker and peer together) stalls for seconds on a loaded machine, or it is retried and
// its request counts are off. The never-answering case has an entry of its own with a short timeout.
const PROVIDER_TIMEOUT_MS = 4000;

interface Case extends WholePathCase {
  seenProcessing?: boolean;
}

const cases: Record<string, Case> = {
  'ok-code': {
    body: { type: 'code', model: 'peer/coder', targetLanguage: 'json', textInputs: [{ content: 'context here', label: 'Brief' }] },
    replies: () => chatReply('{"answer": 42}', { prompt_tokens: 12, completion_tokens: 34 }),
  },
  'ok-image': { body: { type: 'image', model: 'peer/painter', aspectRatio: '3:2' }, replies: () => imageReply(1536, 1024) },
  'ok-image-url': {
    body: { type: 'image', model: 'peer/painter', aspectRatio: '1:1' },
    replies: async () => ({ json: { data: [{ url: peer.file('made.png', await png(1024, 1024, '#aa3300')) }] } }),
  },
  // Answers once the generation has been seen processing (bounded by the timeout), not after a
  // fixed delay: a fixed 1 s under a 1.5 s timeout left 0.5 s of slack, which a loaded machine's
  // stalls used up — the attempt timed out and was rightly retried, a second upstream request.
  slow: {
    body: { type: 'code', model: 'peer/coder' },
    replies: async () => {
      await until('the slow generation seen processing', () => cases.slow!.seenProcessing, PROVIDER_TIMEOUT_MS).catch(() => {});
      return chatReply('slow but fine');
    },
  },
  'retry-after': {
    body: { type: 'code', model: 'peer/coder' },
    replies: (n) => (n === 0 ? errorReply(429, 'requests', 'rate_limit_exceeded', 'slow down', { 'retry-after': '1' }) : chatReply('after the wait')),
  },
  'server-error': {
    body: { type: 'code', model: 'peer/coder' },
    replies: () => errorReply(500, 'server_error', null, `internal detail ${SECRET}`),
  },
  'server-error-then-ok': {
    body: { type: 'code', model: 'peer/coder' },
    replies: (n) => (n < 2 ? errorReply(503, 'server_error', null) : chatReply('recovered', { prompt_tokens: 5, completion_tokens: 5 })),
  },
  malformed: { body: { type: 'code', model: 'peer/coder' }, replies: () => ({ body: 'this is {not json', headers: { 'content-type': 'application/json' } }) },
  rejected: { body: { type: 'code', model: 'peer/coder' }, replies: () => errorReply(400, 'invalid_request_error', 'bad_param', `rejected ${SECRET}`) },
  // Its own entry with a short `upstream.timeoutMs`: 4 attempts of 500 ms, not of the 4 s above.
  timeout: { body: { type: 'code', model: 'peer/hasty' }, replies: () => ({ hang: true }) },
  // The shipped catalog entries.
  'catalog-gpt-image': { body: { type: 'image', model: 'openai/gpt-image-1', aspectRatio: '2:3' }, replies: () => undefined },
  'catalog-gpt-5': {
    body: { type: 'code', model: 'openai/gpt-5', targetLanguage: 'tsx' },
    replies: () => chatReply('export default function App() { return <main/>; }', { prompt_tokens: 1234, completion_tokens: 5678, completion_tokens_details: { reasoning_tokens: 5000 } }),
  },
  // Reasoning ate nearly all of max_completion_tokens: billed in full, still within the reservation.
  'catalog-gpt-5-full': {
    body: { type: 'code', model: 'openai/gpt-5', targetLanguage: 'css' },
    replies: () => chatReply('main { color: red }', { prompt_tokens: 50, completion_tokens: 16000, completion_tokens_details: { reasoning_tokens: 15990 } }, 'length'),
  },
  'catalog-openrouter': {
    body: { type: 'code', model: 'openrouter/claude-sonnet-4', targetLanguage: 'json' },
    replies: () => chatReply('{"ok": true}', { prompt_tokens: 100, completion_tokens: 200 }),
  },
};

const requestsOf = (name: string) => peer.requests.filter((r) => caseOf(r.json ?? r.form) === name);

before(async () => {
  peer = await startOpenAIPeer();
  const reply = caseReplies(cases);
  peer.script((req) => reply(caseOf(req.json ?? req.form)));
  // Small timeouts and attempt counts so every path finishes in seconds (the attempt count is
  // fixed when the generation is created, the timeouts are the worker's).
  srv = await startServer({ config: { providerTimeoutMs: PROVIDER_TIMEOUT_MS, providerAttempts: 2, generationMaxAttempts: 2, defaultMarkup: MARKUP } });
  await startTestWorker(srv);
  for (const model of [
    { id: 'peer/coder', name: 'Peer coder', category: 'text', provider: 'openai',
      upstream: { baseUrl: peer.url, model: 'up-coder', apiKeyEnv: 'KILN_TEST_PEER_KEY' },
      cost: { input_micros_per_token: 1, output_micros_per_token: 2 }, maxOutputTokens: 1000, markup: 1 },
    { id: 'peer/hasty', name: 'Peer coder, 500 ms timeout', category: 'text', provider: 'openai',
      upstream: { baseUrl: peer.url, model: 'up-coder', apiKeyEnv: 'KILN_TEST_PEER_KEY', timeoutMs: 500 },
      cost: { input_micros_per_token: 1, output_micros_per_token: 2 }, maxOutputTokens: 1000, markup: 1 },
    { id: 'peer/painter', name: 'Peer painter', category: 'image', provider: 'openai',
      upstream: { baseUrl: peer.url, model: 'up-painter', apiKeyEnv: 'KILN_TEST_PEER_KEY' },
      cost: { micros_per_image: 40000 }, markup: 1 },
  ]) {
    await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json(model)})`;
  }
  // The shipped entries through `kiln model upsert --file` (its validation included), aimed at the peer.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-catalog-'));
  for (const file of shipped) {
    const entry = entryOf(file);
    process.env[entry.upstream.apiKeyEnv] = SECRET;
    fs.writeFileSync(path.join(dir, file), JSON.stringify({ ...entry, upstream: { ...entry.upstream, baseUrl: peer.url } }));
    const out = await commands['model upsert']!.run(['--file', path.join(dir, file)], testConfig({ databaseUrl: srv.db.url }));
    assert.equal((out as { id: string }).id, entry.id);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  await submitCases(srv, cases, (b, c) => {
    if (b.status === 'processing') c.seenProcessing = true;
    return b.status === 'completed' || b.status === 'failed';
  });
});

after(async () => {
  await peer?.close();
});

const { settledOnce, released } = caseLedger(cases, () => srv);

test('success: chat completion → code, structured JSON, token cost × price, upstream request well-formed', async () => {
  const done = await cases['ok-code']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.code, '{"answer": 42}');
  assert.deepEqual(done.result.structuredOutput, { answer: 42 });
  assert.equal(done.result.costMicros, 12 * 1 + 34 * 2);
  await settledOnce('ok-code', '80');
  const [req] = requestsOf('ok-code');
  assert.equal(req!.path, '/v1/chat/completions');
  assert.equal(req!.headers.authorization, `Bearer ${SECRET}`);
  assert.equal(req!.json.model, 'up-coder');
  assert.equal(req!.json.max_tokens, 1000);
  assert.match(req!.json.messages[1].content, /context here/);
  const row = await generationRow(srv.db.sql, cases['ok-code']!.id!);
  assert.equal(row.provider_request_id, 'req_peer_chat');
});

test('success: Images API (b64 and URL replies) → stored image at the requested ratio, per-image price', async () => {
  for (const [name, size] of [['ok-image', [1536, 1024]], ['ok-image-url', [1024, 1024]]] as const) {
    const done = await cases[name]!.final!;
    assert.equal(done.status, 'completed', `${name}: ${JSON.stringify(done)}`);
    assert.equal(done.result.costMicros, 40000);
    const img = await fetch(done.result.url);
    assert.equal(img.status, 200);
    const meta = await sharp(Buffer.from(await img.arrayBuffer())).metadata();
    assert.deepEqual([meta.width, meta.height], size, name);
    await settledOnce(name, '40000');
  }
  assert.equal(requestsOf('ok-image')[0]!.path, '/v1/images/generations');
  assert.equal(requestsOf('ok-image')[0]!.json.size, '1536x1024');
});

test('slow upstream: the generation is observed processing, then completes', async () => {
  const done = await cases.slow!.final!;
  assert.equal(done.status, 'completed');
  assert.equal(cases.slow!.seenProcessing, true);
  assert.equal(requestsOf('slow').length, 1);
  await settledOnce('slow', String(12 + 34 * 2));
});

test('429 with retry-after: waited out, then completed and charged once', async () => {
  const done = await cases['retry-after']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.code, 'after the wait');
  assert.equal(requestsOf('retry-after').length, 2);
  await settledOnce('retry-after', String(12 + 34 * 2));
});

test('5xx: retried with backoff across job attempts, then failed with a summarised message; reservation released', async () => {
  const done = await cases['server-error']!.final!;
  assert.equal(done.status, 'failed');
  assert.equal(done.result, null);
  assert.match(done.error, /upstream provider returned 500/);
  assert.doesNotMatch(done.error, /internal detail|sk-upstream/);
  // 2 upstream attempts per execution × 2 executions.
  assert.equal(requestsOf('server-error').length, 4);
  const row = await generationRow(srv.db.sql, cases['server-error']!.id!);
  assert.equal(row.attempts, 2);
  await released('server-error');
});

test('a transient failure then success: completed on the job\'s retry and charged exactly once', async () => {
  const done = await cases['server-error-then-ok']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(requestsOf('server-error-then-ok').length, 3);
  assert.equal((await generationRow(srv.db.sql, cases['server-error-then-ok']!.id!)).attempts, 2);
  await settledOnce('server-error-then-ok', String(5 + 5 * 2));
});

test('malformed JSON and other 4xx fail at once (no retry) and release the reservation', async () => {
  const bad = await cases.malformed!.final!;
  assert.equal(bad.status, 'failed');
  assert.match(bad.error, /malformed JSON/);
  assert.equal(requestsOf('malformed').length, 1);
  await released('malformed');
  const rej = await cases.rejected!.final!;
  assert.equal(rej.status, 'failed');
  assert.match(rej.error, /returned 400/);
  assert.doesNotMatch(rej.error, /sk-upstream|rejected sk/);
  assert.equal(requestsOf('rejected').length, 1);
  await released('rejected');
});

test('an upstream that never answers times out, is retried, then fails; reservation released', async () => {
  const done = await cases.timeout!.final!;
  assert.equal(done.status, 'failed');
  assert.match(done.error, /timed out after 500 ms/);
  assert.equal(requestsOf('timeout').length, 4);
  await released('timeout');
});

const microsOf = (cost: number) => Math.ceil(cost * MARKUP - 1e-9);

test('the shipped OpenAI and OpenRouter catalog entries are ready: real upstream URLs, keys by name', () => {
  assert.deepEqual(shipped, ['openai-gpt-5.json', 'openai-gpt-image-1.json', 'openrouter-claude-sonnet-4.json']);
  for (const file of shipped) {
    const e = entryOf(file);
    assert.match(e.upstream.baseUrl, /^https:\/\/(api\.openai\.com\/v1|openrouter\.ai\/api\/v1)$/, file);
    assert.match(e.upstream.apiKeyEnv, /^(OPENAI|OPENROUTER)_API_KEY$/, file);
  }
});

test('catalog gpt-image-1: no response_format, medium quality, 1024x1536 for 2:3; the per-image price covers the upstream\'s token bill', async () => {
  const done = await cases['catalog-gpt-image']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const [req] = requestsOf('catalog-gpt-image');
  assert.equal(req!.path, '/v1/images/generations');
  assert.equal(req!.headers.authorization, `Bearer ${SECRET}`);
  assert.deepEqual([req!.json.model, req!.json.size, req!.json.quality, req!.json.n], ['gpt-image-1', '1024x1536', 'medium', 1]);
  assert.equal('response_format' in req!.json, false);
  const img = await fetch(done.result.url);
  const meta = await sharp(Buffer.from(await img.arrayBuffer())).metadata();
  assert.deepEqual([meta.format, meta.width, meta.height], ['png', 1024, 1536]);

  const entry = entryOf('openai-gpt-image-1.json');
  const price = entry.cost.micros_per_image;
  assert.equal(done.result.costMicros, microsOf(price));
  await settledOnce('catalog-gpt-image', String(microsOf(price)));
  // True worst case at the stated quality: the largest size's output tokens at $40/1M plus the
  // longest prompt maxPromptBytes allows (+100 framing tokens) at $5/1M.
  const worstOutput = Math.max(...Object.values(GPT_IMAGE_OUTPUT_TOKENS[entry.upstream.params.quality]!));
  assert.ok(worstOutput * 40 + (entry.upstream.maxPromptBytes + 100) * 5 <= price);
  const upstreamCost = await (async () => {
    const r = await fetch(`${peer.url}/images/generations`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...req!.json, prompt: 'x'.repeat(entry.upstream.maxPromptBytes) }) });
    const usage = ((await r.json()) as any).usage;
    return usage.input_tokens_details.text_tokens * 5 + usage.output_tokens * 40;
  })();
  assert.ok(upstreamCost <= price, `${upstreamCost} ≤ ${price}`);
});

test('catalog gpt-5: max_completion_tokens, developer message, reasoning_effort; reasoning tokens billed within the reservation', async () => {
  for (const name of ['catalog-gpt-5', 'catalog-gpt-5-full']) {
    const done = await cases[name]!.final!;
    assert.equal(done.status, 'completed', `${name}: ${JSON.stringify(done)}`);
    const [req] = requestsOf(name);
    assert.equal(req!.json.model, 'gpt-5');
    assert.equal(req!.json.max_completion_tokens, 16000);
    assert.equal('max_tokens' in req!.json, false);
    assert.equal('temperature' in req!.json, false);
    assert.equal(req!.json.reasoning_effort, 'low');
    assert.deepEqual(req!.json.messages.map((m: any) => m.role), ['developer', 'user']);
  }
  // (1234 × 1.25 + 5678 × 10) × 1.25: the 5000 reasoning tokens are inside completion_tokens.
  await settledOnce('catalog-gpt-5', String(microsOf(1234 * 1.25 + 5678 * 10)));
  const full = microsOf(50 * 1.25 + 16000 * 10);
  await settledOnce('catalog-gpt-5-full', String(full));
  const [ledger] = await charges(srv.db.sql, cases['catalog-gpt-5-full']!.id!);
  assert.ok(Number(ledger.reserved) >= full, `reserved ${ledger.reserved} covers a full max_completion_tokens budget (${full})`);
});

test('catalog OpenRouter entry: the compatible dialect (max_tokens, system message, vendor-prefixed model)', async () => {
  const done = await cases['catalog-openrouter']!.final!;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual(done.result.structuredOutput, { ok: true });
  const [req] = requestsOf('catalog-openrouter');
  assert.equal(req!.json.model, 'anthropic/claude-sonnet-4');
  assert.equal(req!.json.max_tokens, 8192);
  assert.equal('max_completion_tokens' in req!.json, false);
  assert.equal(req!.json.messages[0].role, 'system');
  assert.equal(req!.headers.authorization, `Bearer ${SECRET}`);
  await settledOnce('catalog-openrouter', String(microsOf(100 * 3 + 200 * 15)));
});

test('kiln model upsert refuses a shipped entry changed to send what its family rejects', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-catalog-'));
  const cfg = testConfig({ databaseUrl: srv.db.url });
  const tryUpsert = async (entry: unknown) => {
    const file = path.join(dir, 'entry.json');
    fs.writeFileSync(file, JSON.stringify(entry));
    return commands['model upsert']!.run(['--file', file], cfg).then(() => null, (e: Error) => e.message);
  };
  const image = entryOf('openai-gpt-image-1.json');
  assert.match((await tryUpsert({ ...image, upstream: { ...image.upstream, params: { response_format: 'b64_json' } } }))!, /response_format/);
  const gpt5 = entryOf('openai-gpt-5.json');
  assert.match((await tryUpsert({ ...gpt5, upstream: { ...gpt5.upstream, params: { temperature: 0.3 } } }))!, /temperature/);
  fs.rmSync(dir, { recursive: true, force: true });
});
