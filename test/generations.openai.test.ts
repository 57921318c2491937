// The `openai` adapter through the whole path — POST /generations, the worker, a real
// OpenAI-protocol peer on loopback — in every upstream behaviour: success, slow, 429 with
// retry-after, 5xx (retried across jobs, then failed), malformed JSON, 4xx, timeout. Each ends
// in the right state, and the ledger shows exactly one settled charge or a released one.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { chatReply, errorReply, imageReply, png, startOpenAIPeer, type OpenAIPeer, type PeerReply } from './_openai-peer.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { charges, generationRow, startTestWorker, waitFor } from './_generations.ts';

let srv: TestServer;
let peer: OpenAIPeer;
const SECRET = 'sk-upstream-secret-123';
process.env.KILN_TEST_PEER_KEY = SECRET;

interface Case {
  body: Record<string, unknown>;
  replies: (n: number) => PeerReply | Promise<PeerReply>;
  key?: string;
  id?: string;
  final?: Promise<any>;
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
  slow: { body: { type: 'code', model: 'peer/coder' }, replies: () => ({ ...chatReply('slow but fine'), delayMs: 1000 }) },
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
  timeout: { body: { type: 'code', model: 'peer/coder' }, replies: () => ({ hang: true }) },
};

const seen = new Map<string, number>();
const requestsOf = (name: string) => peer.requests.filter((r) => JSON.stringify(r.json ?? r.form).includes(`[case:${name}]`));

before(async () => {
  peer = await startOpenAIPeer();
  peer.script(async (req) => {
    const m = /\[case:([a-z-]+)\]/.exec(JSON.stringify(req.json ?? req.form));
    if (!m || !cases[m[1]!]) return undefined;
    const n = seen.get(m[1]!) ?? 0;
    seen.set(m[1]!, n + 1);
    return cases[m[1]!]!.replies(n);
  });
  // Small timeouts and attempt counts so every path finishes in seconds (the attempt count is
  // fixed when the generation is created, the timeouts are the worker's).
  srv = await startServer({ config: { providerTimeoutMs: 1500, providerAttempts: 2, generationMaxAttempts: 2 } });
  await startTestWorker(srv);
  for (const model of [
    { id: 'peer/coder', name: 'Peer coder', category: 'text', provider: 'openai',
      upstream: { baseUrl: peer.url, model: 'up-coder', apiKeyEnv: 'KILN_TEST_PEER_KEY' },
      cost: { input_micros_per_token: 1, output_micros_per_token: 2 }, maxOutputTokens: 1000, markup: 1 },
    { id: 'peer/painter', name: 'Peer painter', category: 'image', provider: 'openai',
      upstream: { baseUrl: peer.url, model: 'up-painter', apiKeyEnv: 'KILN_TEST_PEER_KEY' },
      cost: { micros_per_image: 40000 }, markup: 1 },
  ]) {
    await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json(model)})`;
  }
  await Promise.all(
    Object.entries(cases).map(async ([name, c]) => {
      const a = await createAccount(srv.db.sql);
      c.key = (await createKey(srv.db.sql, a.id)).key;
      const res = await api(srv.base, c.key, '/generations', { body: { prompt: `[case:${name}] make something`, ...c.body } });
      assert.equal(res.status, 202, `${name}: ${JSON.stringify(res.body)}`);
      c.id = res.body.id;
      c.final = waitFor(srv, c.key, c.id!, {
        timeoutMs: 40_000,
        done: (b) => {
          if (b.status === 'processing') c.seenProcessing = true;
          return b.status === 'completed' || b.status === 'failed';
        },
      });
      c.final.catch(() => {});
    }),
  );
});

after(async () => {
  await peer?.close();
});

async function settledOnce(name: string, micros: string) {
  const ledger = await charges(srv.db.sql, cases[name]!.id!);
  assert.equal(ledger.length, 1, name);
  assert.equal(ledger[0].status, 'settled', name);
  assert.equal(ledger[0].settled, micros, name);
}

async function released(name: string) {
  const ledger = await charges(srv.db.sql, cases[name]!.id!);
  assert.equal(ledger.length, 1, name);
  assert.equal(ledger[0].status, 'released', name);
  assert.equal(ledger[0].settled, null, name);
  const [usage] = await srv.db.sql`
    select b.held_micros::text as held, b.settled_micros::text as settled
    from kiln_private.budget_periods b join kiln_private.charges c on c.pool_id = b.pool_id and c.period_start = b.period_start
    where c.generation_id = ${cases[name]!.id!}`;
  assert.deepEqual(usage, { held: '0', settled: '0' }, `${name}: nothing held or spent`);
}

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
  assert.match(done.error, /timed out/);
  assert.equal(requestsOf('timeout').length, 4);
  await released('timeout');
});
