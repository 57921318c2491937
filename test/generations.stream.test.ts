// Streaming end to end (docs/api.md, "Streaming"): POST /generations → the worker → a loopback peer
// that speaks the provider's streaming protocol (OpenAI chat completions SSE, Anthropic Messages
// events, Gemini streamGenerateContent, OpenAI images with partial images) → GET
// /generations/{id}/events. The first delta arrives before the peer has finished; the deltas make
// exactly the peer's text; the charge is the peer's usage × price; three drops resume with no gap
// and no repeat; two clients see the same text; a stream the peer breaks is retried with `reset`
// and, with the attempts used up, fails uncharged; previews are signed URLs to the partial images.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { charges, startTestWorker, until } from './_generations.ts';
import { openSse, type SseEvent, type SseStream } from './_live.ts';
import { chatStream, imageStream, png, startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';
import { messageStream, startAnthropicPeer, type AnthropicPeer } from './_anthropic-peer.ts';
import { geminiStream, startGeminiPeer, type GeminiPeer } from './_gemini-peer.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
let openai: OpenAIPeer;
let anthropic: AnthropicPeer;
let gemini: GeminiPeer;
let key: string;
let otherKey: string;

const PEER_KEY = 'peer-key-for-streams';
process.env.KILN_TEST_STREAM_KEY = PEER_KEY;
const PRICE = { input_micros_per_token: 3, output_micros_per_token: 15 };

before(async () => {
  [openai, anthropic, gemini] = await Promise.all([startOpenAIPeer(), startAnthropicPeer({ key: PEER_KEY }), startGeminiPeer({ key: PEER_KEY })]);
  srv = await startServer({ config: { generationMaxAttempts: 2 } });
  const entries = [
    { id: 'peer/chat', category: 'text', provider: 'openai', upstream: { baseUrl: openai.url, model: 'peer-chat', apiKeyEnv: 'KILN_TEST_STREAM_KEY' } },
    { id: 'peer/claude', category: 'text', provider: 'anthropic', upstream: { baseUrl: anthropic.url, model: 'claude-peer', apiKeyEnv: 'KILN_TEST_STREAM_KEY' } },
    { id: 'peer/gemini', category: 'text', provider: 'gemini', upstream: { baseUrl: gemini.url, model: 'gemini-peer', apiKeyEnv: 'KILN_TEST_STREAM_KEY' } },
  ];
  for (const e of entries) {
    await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({ ...e, name: e.id, cost: PRICE, maxOutputTokens: 1000, markup: 1 })})`;
  }
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'peer/painter', name: 'painter', category: 'image', provider: 'openai',
    upstream: { baseUrl: openai.url, model: 'gpt-image-1', partialImages: 2, apiKeyEnv: 'KILN_TEST_STREAM_KEY' }, cost: { micros_per_image: 40_000 }, markup: 1,
  })})`;
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'enterprise' });
  key = (await createKey(srv.db.sql, a.id)).key;
  const b = await createAccount(srv.db.sql, { tier: 'enterprise' });
  otherKey = (await createKey(srv.db.sql, b.id)).key;
});

after(async () => {
  await Promise.all([openai?.close(), anthropic?.close(), gemini?.close()]);
});

const auth = (last?: string, k = key) => ({ authorization: `Bearer ${k}`, ...(last ? { 'last-event-id': last } : {}) });
const data = (e: SseEvent) => JSON.parse(e.data);
const textOf = (events: SseEvent[]) => events.filter((e) => e.event === 'delta').map((e) => data(e).text).join('');

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/** Pieces of a code answer, with multi-byte characters and blank lines inside the JSON strings. */
const PIECES = ['export const greeting = ', '"héllo 🌍";\n\n', 'export function ', 'shout(s: string) {\n', '  return s.toUpperCase();\n', '}\n', '// ✓ done\n'];
const TEXT = PIECES.join('');

async function create(model: string): Promise<string> {
  const res = await api(srv.base, key, '/generations', { body: { type: 'code', model, prompt: 'stream please', targetLanguage: 'typescript' } });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.id;
}

const families = [
  { name: 'OpenAI chat completions', model: 'peer/chat', peer: () => openai, reply: (g: Promise<void>) => chatStream(PIECES, { prompt_tokens: 21, completion_tokens: 43 }, { chunkMs: 30, gate: g }), usage: [21, 43] },
  { name: 'Anthropic Messages', model: 'peer/claude', peer: () => anthropic, reply: (g: Promise<void>) => messageStream([PIECES], { input_tokens: 22, output_tokens: 44 }, { chunkMs: 30, gate: g }), usage: [22, 44] },
  { name: 'Gemini streamGenerateContent', model: 'peer/gemini', peer: () => gemini, reply: (g: Promise<void>) => geminiStream(PIECES, { promptTokenCount: 23, candidatesTokenCount: 45 }, { chunkMs: 30, gate: g }), usage: [23, 45] },
] as const;

for (const f of families) {
  test(`${f.name}: the first delta arrives before the peer finishes; the deltas are its text; the charge is its usage × price`, async () => {
    const g = gate();
    f.peer().script(() => f.reply(g.promise) as never);
    const id = await create(f.model);
    const s = await openSse(`${srv.base}/generations/${id}/events`, auth());
    await s.until((e) => e.event === 'delta').catch((e) => { throw new Error(`${e.message}: ${JSON.stringify(s.events.map((x) => x.data))} ${JSON.stringify(f.peer().requests.at(-1)?.json)}`); });
    // The peer holds its last chunk until now: the client saw text while the provider was still writing.
    assert.equal((await api(srv.base, key, `/generations/${id}`)).body.status, 'processing');
    g.open();
    await s.ended;
    assert.equal(textOf(s.events), TEXT, 'the deltas concatenate to exactly the text the provider wrote');
    const last = data(s.events.at(-1)!);
    assert.equal(s.events.at(-1)!.event, 'status');
    assert.equal(last.status, 'completed');
    assert.equal(last.result.code, TEXT.trimEnd(), 'the result as always (trimmed, fences stripped)');
    const [c] = await charges(srv.db.sql, id);
    assert.equal(c!.status, 'settled');
    assert.equal(Number(c!.settled), f.usage[0] * PRICE.input_micros_per_token + f.usage[1] * PRICE.output_micros_per_token);
    const sent = f.peer().requests.at(-1)!.json as Record<string, unknown> | null;
    if (f.model === 'peer/chat') assert.deepEqual([sent?.stream, sent?.stream_options], [true, { include_usage: true }]);
    if (f.model === 'peer/claude') assert.equal(sent?.stream, true);
    if (f.model === 'peer/gemini') assert.match(f.peer().requests.at(-1)!.path, /:streamGenerateContent$/);
  });
}

test('three drops in one generation: each resume from the last event id misses nothing and repeats nothing; two clients see the same text', async () => {
  const pieces = Array.from({ length: 24 }, (_, i) => `line ${i} ✓\n`);
  openai.script(() => chatStream(pieces, { prompt_tokens: 5, completion_tokens: 50 }, { chunkMs: 60 }) as never);
  const id = await create('peer/chat');
  const steady = await openSse(`${srv.base}/generations/${id}/events`, auth());
  const seen: SseEvent[] = [];
  let last: string | undefined;
  for (let drop = 0; drop < 3; drop++) {
    const s: SseStream = await openSse(`${srv.base}/generations/${id}/events`, auth(last));
    const before = seen.length;
    await s.until((e) => e.event === 'delta' && !seen.includes(e));
    // Read a little more, then drop the connection.
    await new Promise((r) => setTimeout(r, 130));
    s.abort();
    await s.ended;
    seen.push(...s.events);
    assert.ok(seen.length > before);
    last = seen.at(-1)!.id;
  }
  const rest = await openSse(`${srv.base}/generations/${id}/events`, auth(last));
  await rest.ended;
  seen.push(...rest.events);
  const deltas = seen.filter((e) => e.event === 'delta').map(data);
  let at = 0;
  for (const d of deltas) {
    assert.equal(d.offset, at, 'no gap and no repeat');
    at += [...d.text].length;
  }
  assert.equal(deltas.map((d) => d.text).join(''), pieces.join(''));
  // The first connection may open before the worker starts it (pending first) or after.
  const statuses = seen.filter((e) => e.event === 'status').map((e) => e.id);
  assert.deepEqual(statuses, statuses[0] === '1' ? ['1', '2', '3'] : ['2', '3'], 'each status once');
  await steady.ended;
  assert.equal(textOf(steady.events), pieces.join(''), 'a second client sees the same text');
  // Another account: 404, from the start or resuming.
  const other = await openSse(`${srv.base}/generations/${id}/events`, auth(last, otherKey));
  assert.equal(other.status, 404);
});

test('the peer breaks the stream mid-way: the execution is retried, the client sees reset, and the second attempt\'s text is the result; charged once', async () => {
  const before = openai.requests.length;
  openai.script((_req) => (openai.requests.length - before <= 1
    ? chatStream(['partial ', 'answer ', 'that ', 'breaks'], null, { chunkMs: 20, breakAfter: 3 })
    : chatStream(['whole ', 'answer\n'], { prompt_tokens: 7, completion_tokens: 8 }, { chunkMs: 20 })) as never);
  const id = await create('peer/chat');
  const s = await openSse(`${srv.base}/generations/${id}/events`, auth());
  await s.ended;
  const reset = s.events.findIndex((e) => e.event === 'reset');
  assert.ok(reset > 0, JSON.stringify(s.events.map((e) => e.event)));
  assert.deepEqual(data(s.events[reset]!), { attempt: 2 });
  assert.equal(textOf(s.events.slice(reset)), 'whole answer\n');
  assert.equal(data(s.events.at(-1)!).result.code, 'whole answer');
  const cs = await charges(srv.db.sql, id);
  assert.equal(cs.length, 1);
  assert.equal(Number(cs[0]!.settled), 7 * 3 + 8 * 15);
});

test('a stream that breaks on every attempt: the generation fails uncharged', async () => {
  openai.script(() => chatStream(['never ', 'whole ', 'text'], null, { chunkMs: 20, breakAfter: 2 }) as never);
  const id = await create('peer/chat');
  const s = await openSse(`${srv.base}/generations/${id}/events`, auth());
  await s.ended;
  const end = data(s.events.at(-1)!);
  assert.equal(end.status, 'failed');
  assert.ok(s.events.some((e) => e.event === 'reset'));
  const [c] = await charges(srv.db.sql, id);
  assert.notEqual(c!.status, 'settled');
  assert.equal(c!.settled, null);
});

test('partial images: preview events with signed URLs to the partial images, then the result; the previews go when it ends', async () => {
  const g = gate();
  const partials = [await png(64, 64, '#111111'), await png(64, 64, '#777777')];
  openai.script(async () => imageStream(partials, await png(1024, 1024, '#ffffff'), { chunkMs: 40, gate: g.promise }) as never);
  const res = await api(srv.base, key, '/generations', { body: { type: 'image', model: 'peer/painter', prompt: 'a square', aspectRatio: '1:1' } });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const s = await openSse(`${srv.base}/generations/${res.body.id}/events`, auth());
  const second = await s.until((e) => e.event === 'preview' && data(e).index === 1);
  const preview = data(second);
  assert.equal(preview.mediaType, 'image/png');
  const got = await fetch(preview.url);
  assert.equal(got.status, 200);
  assert.deepEqual(Buffer.from(await got.arrayBuffer()), partials[1]);
  const polled = await api(srv.base, key, `/generations/${res.body.id}`);
  assert.equal(polled.body.status, 'processing');
  assert.match(polled.body.partial.previewUrl, /preview-1\.png/);
  g.open();
  await s.ended;
  assert.equal(data(s.events.at(-1)!).status, 'completed');
  const sent = openai.requests.at(-1)!.json as Record<string, unknown>;
  assert.deepEqual([sent.stream, sent.partial_images], [true, 2]);
  await until('the preview objects dropped', async () => (await srv.db.sql`select 1 from kiln_private.objects where path like ${'%/' + res.body.id + '/preview-%'}`).length === 0);
  assert.equal((await fetch(preview.url)).status, 404);
});
